package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// A recording killed with SIGKILL keeps what it wrote: the file reads back
// up to its last chunk and says it was cut.
func TestRecordSurvivesSIGKILL(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	// Every CPU busy, so both runs sample at the full rate whatever else
	// the machine does (an idle CPU takes fewer cpu-clock samples).
	for range runtimeCPUs() {
		startWork(t, dir, "1000000")
	}
	testutil.MustRun(t, dir, "record", "-q", "-a", "-g", "--duration", "5s", "-o", "clean.data")
	want := reportJSON(t, dir, "-i", "clean.data").Samples

	cmd := exec.Command(testutil.Sonde(t), "record", "-q", "-a", "-g", "--duration", "30s", "-o", "cut.data")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The file appears when sampling starts (after the events are open and
	// the running processes were read): kill 5 s of recording later.
	t0 := time.Now()
	for time.Since(t0) < 20*time.Second {
		if _, err := os.Stat(filepath.Join(dir, "cut.data")); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("recording started %s after launch", time.Since(t0).Round(time.Millisecond))
	time.Sleep(5 * time.Second)
	cmd.Process.Kill()
	cmd.Wait()
	rep := reportJSON(t, dir, "-i", "cut.data")
	t.Logf("clean 5 s run: %d samples; killed after 5 s: %d samples, warnings %q", want, rep.Samples, rep.Meta.Warnings)
	if float64(rep.Samples) < 0.9*float64(want) {
		t.Errorf("the killed recording kept %d samples, a clean one has %d (want ≥ 90%%)", rep.Samples, want)
	}
	cut := false
	for _, w := range rep.Meta.Warnings {
		cut = cut || strings.Contains(w, "cut")
	}
	if !cut {
		t.Errorf("the killed recording does not say it was cut: %q", rep.Meta.Warnings)
	}
	// Its frames are named (from this machine's files, as perf report does).
	txt := testutil.MustRun(t, dir, "report", "-i", "cut.data", "--no-children", "--sort", "sym").Stdout
	if !strings.Contains(txt, "spin_a") {
		t.Errorf("the killed recording's report does not name spin_a:\n%.2000s", txt)
	}
}

// record streams its file: memory stays flat over a long, dense recording.
func TestRecordMemoryFlat(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	startWork(t, dir, "100000000")
	cmd := exec.Command(testutil.Sonde(t), "record", "-q", "-a", "-g", "-F", "4000", "--duration", "60s", "-o", "long.data")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("record: %v\n%s", err, out)
	}
	peak := testutil.PeakRSS(cmd)
	rep := reportJSON(t, dir, "-i", "long.data")
	st, _ := os.Stat(filepath.Join(dir, "long.data"))
	t.Logf("record -a -g -F 4000 for 60 s: %d samples, %d bytes on disk, peak RSS %d KiB", rep.Samples, st.Size(), peak)
	if rep.Samples < 200000 {
		t.Errorf("only %d samples in 60 s at 4000 Hz on every CPU", rep.Samples)
	}
	if peak > 100<<10 {
		t.Errorf("peak RSS %d KiB, want under 100 MiB", peak)
	}
}

// Ctrl-C to sonde alone ends the recording then: the header's duration is
// the recording's, not the command's whole run.
func TestRecordInterruptDuration(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	cmd := exec.Command(testutil.Sonde(t), "record", "-q", "-o", "s.data", "--", "sh", "-c", "trap '' TERM INT; sleep 4")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	txt := testutil.MustRun(t, dir, "report", "-i", "s.data").Stdout
	var d time.Duration
	for _, l := range strings.Split(txt, "\n") {
		if v, ok := strings.CutPrefix(l, "# Duration: "); ok {
			d, _ = time.ParseDuration(strings.Fields(v)[0])
		}
	}
	t.Logf("SIGINT after 1 s of a 4 s command: duration %s, exit %s", d, strconv.Itoa(cmd.ProcessState.ExitCode()))
	if d < 800*time.Millisecond || d > 2*time.Second {
		t.Errorf("duration %s after SIGINT at 1 s, want about 1 s", d)
	}
}

// -p ends when its process exits, as perf's does.
func TestRecordPidExits(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	sleeper := exec.Command("sleep", "1")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	go sleeper.Wait()
	start := time.Now()
	testutil.MustRun(t, dir, "record", "-q", "-p", strconv.Itoa(sleeper.Process.Pid), "--duration", "20s", "-o", "p.data")
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("record -p ran %s after its process exited at 1 s", el)
	}
}
