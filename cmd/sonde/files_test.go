package main

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sonde-dev/sonde/internal/testutil"
	"github.com/sonde-dev/sonde/internal/tools/fileio"
)

// filesDir is a test directory named as the kernel names it (TMPDIR may
// be reached through a symlink).
func filesDir(t *testing.T) string {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestFiletopBytes: a program that writes exactly 10 MiB to one file and
// reads exactly 3 MiB of another (through write, pwrite64, writev, read,
// pread64, readv) shows those calls and bytes on those paths; sendfile and
// copy_file_range count on both their files.
func TestFiletopBytes(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := filesDir(t)
	prog := testutil.BuildC(t, dir, "fileio", []string{"fileio.c"})
	in, out := filepath.Join(dir, "in.bin"), filepath.Join(dir, "out.bin")
	if err := os.WriteFile(in, make([]byte, 4<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	got, r := filetopFiles(t, dir, prog, "copy", out, in)
	w, rd := got[out], got[in]
	if w.Writes != 160 || w.WriteBytes != 10<<20 || w.Reads != 0 || w.Kind != fileio.Regular {
		t.Errorf("%s: %+v, want 160 writes of 10 MiB", out, w)
	}
	if rd.Reads != 48 || rd.ReadBytes != 3<<20 || rd.Writes != 0 {
		t.Errorf("%s: %+v, want 48 reads of 3 MiB", in, rd)
	}
	var st unix.Stat_t
	if err := unix.Stat(out, &st); err == nil && w.Ino != st.Ino {
		t.Errorf("%s: inode %d, stat says %d", out, w.Ino, st.Ino)
	}
	// sendfile and copy_file_range: a read of the input and a write of the
	// output per call, 2 MiB each way.
	sent := filepath.Join(dir, "sent.bin")
	got, r = filetopFiles(t, dir, prog, "xfer", sent, in)
	var calls uint64
	for _, l := range strings.Split(r.Stderr, "\n") {
		if v, ok := strings.CutPrefix(l, "calls "); ok {
			calls, _ = strconv.ParseUint(v, 10, 64)
		}
	}
	if s, i := got[sent], got[in]; calls == 0 || s.Writes != calls || s.WriteBytes != 2<<20 || s.Reads != 0 ||
		i.Reads != calls || i.ReadBytes != 2<<20 || i.Writes != 0 {
		t.Errorf("%d sendfile and copy_file_range calls: %s %+v, %s %+v; want each call on both, 2 MiB", calls, sent, s, in, i)
	}
}

// filetopFiles runs prog args under filetop --json and returns the rows of
// prog's process by path.
func filetopFiles(t *testing.T, dir, prog string, args ...string) (map[string]fileio.File, testutil.Result) {
	t.Helper()
	r := testutil.MustRun(t, dir, append([]string{"filetop", "--json", "-r", "0", "--", prog}, args...)...)
	var rep struct {
		Command, Attach string
		Files           []fileio.File
	}
	r.JSON(t, &rep)
	if rep.Command != "filetop" || rep.Attach != fileio.Mode {
		t.Errorf("command %q attach %q", rep.Command, rep.Attach)
	}
	got := map[string]fileio.File{}
	for _, f := range rep.Files {
		if f.Comm == "fileio" {
			got[f.Path] = f
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("filetop %v:\n%s", args, r.Stdout)
		}
	})
	return got, r
}

// TestFileslowerFIFO: reads that wait 50 ms for a FIFO's writer are
// reported with 50 ms ± 5, never more than the program measured itself
// around the call, and the FIFO's path; without -a, FIFOs are not
// reported at all.
func TestFileslowerFIFO(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := filesDir(t)
	prog := testutil.BuildC(t, dir, "fileio", []string{"fileio.c"})
	fifo := filepath.Join(dir, "slow.fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	r := testutil.MustRun(t, dir, "fileslower", "-a", "--json", "20", "--", prog, "slow", fifo, "3")
	var own []float64 // the program's own measure of each read, ms
	for _, l := range strings.Split(r.Stderr, "\n") {
		if ns, err := strconv.ParseInt(strings.TrimSpace(l), 10, 64); err == nil {
			own = append(own, float64(ns)/1e6)
		}
	}
	var got []fileio.Slow
	sc := bufio.NewScanner(strings.NewReader(r.Stdout))
	for sc.Scan() {
		var s fileio.Slow
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("fileslower line %q: %v", sc.Text(), err)
		}
		got = append(got, s)
	}
	if len(got) != 3 || len(own) != 3 {
		t.Fatalf("%d slow calls, %d measured by the program; want 3 each\nstdout:\n%s\nstderr:\n%s", len(got), len(own), r.Stdout, r.Stderr)
	}
	// The read cannot end before the writer comes (50 ms), nor take longer
	// than the program's own timing around it; a loaded machine may delay
	// the writer, so 50 ± 5 is asked of the median.
	var lat []float64
	for i, s := range got {
		ms := float64(s.DurationNS) / 1e6
		lat = append(lat, ms)
		if s.Path != fifo || s.Direction != "read" || s.Syscall != "read" || s.Bytes != 4 || s.Kind != fileio.Pipe || s.Comm != "fileio" {
			t.Errorf("call %d: %+v", i, s)
		}
		if ms < 49.9 || ms > own[i]+0.1 {
			t.Errorf("call %d: %.2f ms, want between 50 and the program's own %.2f", i, ms, own[i])
		}
	}
	sort.Float64s(lat)
	if math.Abs(lat[1]-50) > 5 {
		t.Errorf("median latency %.2f ms, want 50 ± 5 (all: %v)", lat[1], lat)
	}
	r = testutil.MustRun(t, dir, "fileslower", "--json", "20", "--", prog, "slow", fifo, "1")
	if strings.TrimSpace(r.Stdout) != "" {
		t.Errorf("a FIFO reported without -a:\n%s", r.Stdout)
	}
}
