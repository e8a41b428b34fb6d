package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// TestFullDisk writes every kind of output onto a full file system (a
// small tmpfs mounted for the test): each command exits non-zero with one
// line naming the cause, leaves no 0-byte or partial file (nor a temporary
// one) and an existing file under the name it was asked to write stays as
// it was.
func TestFullDisk(t *testing.T) {
	dir, _ := testutil.Workload(t, "work", []string{"work.c"})
	testutil.MustRun(t, dir, "record", "-q", "-g", "-o", "rec.data", "--", "./work", "30")
	full := mkdir(t, dir, "full")
	if err := unix.Mount("tmpfs", full, "tmpfs", 0, "size=64k"); err != nil {
		t.Fatalf("mounting a small tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(full, unix.MNT_DETACH) })
	// Files that exist before: a failed write must leave them alone.
	os.WriteFile(filepath.Join(full, "old.html"), []byte("old"), 0o644)
	os.WriteFile(filepath.Join(full, "old.data"), []byte("old"), 0o644)
	fill, _ := os.Create(filepath.Join(full, "fill"))
	for {
		if _, err := fill.Write(make([]byte, 4096)); err != nil {
			break
		}
	}
	fill.Close()
	before := testutil.DirEntries(t, full)

	cases := []struct {
		name   string
		args   []string
		stdout string // file on the full disk that gets stdout
		stderr string // file on the full disk that gets stderr (no message to check then)
	}{
		{name: "stat_o", args: []string{"stat", "-e", "task-clock", "-o", "full/stat.txt", "--", "true"}},
		{name: "stat_stderr", args: []string{"stat", "-e", "task-clock", "--", "true"}, stderr: "stat.err"},
		{name: "script_stdout", args: []string{"script", "-i", "rec.data"}, stdout: "script.txt"},
		{name: "report_stdout", args: []string{"report", "-i", "rec.data"}, stdout: "report.txt"},
		{name: "report_pprof", args: []string{"report", "-i", "rec.data", "--format", "pprof", "-o", "full/cpu.pb.gz"}},
		{name: "flamegraph_new", args: []string{"flamegraph", "-i", "rec.data", "-o", "full/flame.html"}},
		{name: "flamegraph_over_old", args: []string{"flamegraph", "-i", "rec.data", "-o", "full/old.html"}},
		{name: "profile_data", args: []string{"profile", "-d", "0.3", "-o", "full/old.data"}},
		{name: "import_over_old", args: []string{"import", perfFixture("tiny.data"), "-o", "full/old.data"}},
		{name: "record_first_chunk", args: []string{"record", "-q", "-a", "-d", "0.5", "-o", "full/rec.data"}},
		{name: "offcpu_flamegraph", args: []string{"offcpu", "-d", "0.3", "--flamegraph", "full/off.svg"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(testutil.Sonde(t), c.args...)
			cmd.Dir = dir
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			// The shell's redirections make these files, not sonde.
			redirect := func(name string) *os.File {
				f, err := os.Create(filepath.Join(full, name))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { f.Close(); os.Remove(f.Name()) })
				return f
			}
			if c.stdout != "" {
				cmd.Stdout = redirect(c.stdout)
			}
			if c.stderr != "" {
				cmd.Stderr = redirect(c.stderr)
			}
			err := cmd.Run()
			if err == nil {
				t.Fatalf("exit 0 on a full disk\n%s", stderr.String())
			}
			msg := strings.TrimSpace(stderr.String())
			// The fixture's objects are not on this machine: import warns.
			msg = regexp.MustCompile(`(?m)^sonde: warning: .*\n`).ReplaceAllString(msg, "")
			if c.stderr == "" && (!strings.Contains(msg, "no space left on device") || strings.Contains(msg, "\n") || strings.Contains(msg, ".tmp")) {
				t.Errorf("want one line naming the full disk (and not a temporary file), got:\n%s", msg)
			}
		})
	}
	after := testutil.DirEntries(t, full)
	if !slices.Equal(before, after) {
		t.Errorf("files on the full disk changed: before %q, after %q", before, after)
	}
	for _, name := range []string{"old.html", "old.data"} {
		if b, _ := os.ReadFile(filepath.Join(full, name)); string(b) != "old" {
			t.Errorf("%s overwritten by a failed write: %d bytes", name, len(b))
		}
	}
}
