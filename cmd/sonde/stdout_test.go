package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sonde-dev/sonde/internal/format/datafile"
	"github.com/sonde-dev/sonde/internal/testutil"
)

// runTo runs sonde with its standard output going to stdout (a file, a
// terminal) and returns stderr and the exit status.
func runTo(t *testing.T, dir string, stdout *os.File, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(testutil.Sonde(t), args...)
	cmd.Dir = dir
	var e bytes.Buffer
	cmd.Stdout, cmd.Stderr = stdout, &e
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("sonde %v: %v", args, err)
	}
	return e.String(), cmd.ProcessState.ExitCode()
}

// openTerminal opens a pseudo-terminal and returns its two ends.
func openTerminal(t *testing.T) (master, term *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// TestOutputToStdout: -o - is standard output, as perf takes it (it wrote
// a file named "-"): the data go there and nowhere else, what else sonde
// prints goes to stderr, and a terminal, --json or a second "-" is refused
// in one line.
func TestOutputToStdout(t *testing.T) {
	dir := t.TempDir()
	perfData := filepath.Join(testutil.RepoRoot(), "internal/format/perfdata/testdata/tiny.data")
	out, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	_, term := openTerminal(t)
	for _, c := range []struct {
		name     string
		args     []string
		terminal bool
		code     int
		stderr   string // a substring of stderr
		magic    string // how standard output starts (exit 0)
	}{
		{name: "import", args: []string{"import", perfData, "-o", "-"}, stderr: "written to standard output", magic: datafile.Magic},
		{name: "import_terminal", args: []string{"import", perfData, "-o", "-"}, terminal: true, code: 2, stderr: "-o/--output -: standard output is a terminal"},
		{name: "pprof", args: []string{"report", "-i", perfData, "--format", "pprof", "-o", "-"}, magic: "\x1f\x8b"},
		{name: "pprof_terminal", args: []string{"report", "-i", perfData, "--format", "pprof", "-o", "-"}, terminal: true, code: 2, stderr: "standard output is a terminal"},
		{name: "report_text", args: []string{"report", "-i", perfData, "-o", "-"}, magic: "# Event: cpu-clock"},
		{name: "folded", args: []string{"flamegraph", "-i", perfData, "--format", "folded", "-o", "-"}, magic: "work;"},
		{name: "json_too", args: []string{"offcpu", "-d", "0.1", "-o", "-", "--json"}, code: 2, stderr: "--json has nowhere to go"},
		{name: "folded_too", args: []string{"profile", "-d", "0.1", "-o", "-", "-f"}, code: 2, stderr: "-f/--folded has nowhere to go"},
		{name: "two", args: []string{"memleak", "-d", "0.1", "-o", "-", "--flamegraph", "-"}, code: 2, stderr: "only one file can go to standard output"},
	} {
		t.Run(c.name, func(t *testing.T) {
			to := out
			if c.terminal {
				to = term
			}
			out.Truncate(0)
			out.Seek(0, 0)
			stderr, code := runTo(t, dir, to, c.args...)
			got, _ := os.ReadFile(out.Name())
			if code != c.code || !strings.Contains(stderr, c.stderr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, stderr, c.code, c.stderr)
			}
			if c.code != 0 && strings.Count(stderr, "\n") != 1 {
				t.Errorf("refused in %d lines, want one: %q", strings.Count(stderr, "\n"), stderr)
			}
			if !strings.HasPrefix(string(got), c.magic) {
				t.Errorf("standard output starts %q, want %q", got[:min(len(got), 16)], c.magic)
			}
			if _, err := os.Stat(filepath.Join(dir, "-")); err == nil {
				t.Errorf("a file named - was written")
				os.Remove(filepath.Join(dir, "-"))
			}
		})
	}
	// What import wrote to standard output reads back as its file does.
	testutil.MustRun(t, dir, "import", perfData, "-o", "file.data")
	runTo(t, dir, out, "import", perfData, "-o", "-")
	a := testutil.MustRun(t, dir, "report", "-i", "file.data", "--json").Stdout
	b := testutil.MustRun(t, dir, "report", "-i", out.Name(), "--json").Stdout
	if a != b || a == "" {
		t.Errorf("the data file from standard output reports differently:\n%.500s\n%.500s", a, b)
	}
}

// TestRecordToStdout (privileged): record and offcpu stream their data
// file to standard output; a traced command's output and the report go
// to stderr, so the stream reads back whole.
func TestRecordToStdout(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	for _, c := range []struct {
		name   string
		args   []string
		stderr string // a substring of stderr
	}{
		{"record_command", []string{"record", "-o", "-", "--", "sh", "-c", "echo hello from the command; i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done"}, "hello from the command"},
		{"record_all", []string{"record", "-a", "-d", "0.3", "-o", "-"}, "written to standard output"},
		{"offcpu", []string{"offcpu", "-d", "0.5", "-o", "-"}, "# offcpu: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.name+".data")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			stderr, code := runTo(t, dir, f, c.args...)
			f.Close()
			if code != 0 || !strings.Contains(stderr, c.stderr) {
				t.Fatalf("exit %d, stderr %q; want 0 and %q", code, stderr, c.stderr)
			}
			var rep reportTotals
			testutil.MustRun(t, dir, "report", "-i", path, "--json", "-g", "none").JSON(t, &rep)
			if rep.Samples == 0 {
				t.Errorf("the streamed data file holds no samples")
			}
		})
	}
}
