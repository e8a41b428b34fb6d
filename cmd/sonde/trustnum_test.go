package main

// Numbers that must match their ground truth: stat -p with a command
// alongside against the kernel's schedstat, funclat's duration against a
// workload's known call rate, biosnoop's queue times against bpftrace, and
// symbols of binaries that are gone from disk or gone from the system.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// schedstatSum parses the output of `cat /proc/PID/task/*/schedstat` and
// returns the process's time on CPU in ns (the first field, summed over
// its threads).
func schedstatSum(t *testing.T, s string) float64 {
	t.Helper()
	total := 0.0
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			t.Fatalf("schedstat line %q", l)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			t.Fatal(err)
		}
		total += v
	}
	return total
}

// TestStatPidWithCommand: `stat -p PID CMD` counts PID while CMD runs, not
// CMD (perf's rule). The command itself reads the target's schedstat when
// it starts and before it ends, so the kernel's own figure covers the same
// window; task-clock must agree with it.
func TestStatPidWithCommand(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	bin := testutil.BuildC(t, dir, "cpuwork", []string{"cpuwork.c"})
	w := exec.Command(bin, "alt") // about half a CPU
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { w.Process.Kill(); w.Wait() }()
	pid := strconv.Itoa(w.Process.Pid)
	script := fmt.Sprintf("cat /proc/%[1]s/task/*/schedstat > before; sleep 1; cat /proc/%[1]s/task/*/schedstat > after", pid)
	r := testutil.MustRun(t, dir, "stat", "-e", "task-clock", "--json", "-p", pid, "--", "sh", "-c", script)
	var s statJSON
	if err := json.Unmarshal([]byte(r.Stdout), &s); err != nil {
		t.Fatalf("stat JSON: %v\n%s", err, r.Stdout)
	}
	got := statValue(t, s, "task-clock") // ns
	read := func(name string) float64 {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return schedstatSum(t, string(b))
	}
	want := read("after") - read("before")
	t.Logf("task-clock of pid %s: %.1f ms; schedstat over the command: %.1f ms", pid, got/1e6, want/1e6)
	if want < 200e6 {
		t.Fatalf("the workload ran only %.1f ms in 1 s", want/1e6)
	}
	// The counters open before the command starts and close after it
	// ends (a few ms more); perf's task-clock also misses the scheduler's
	// own time at each of the workload's ~500 switches a second, which
	// schedstat counts (perf stat -p reads 1–2% less here too).
	if got < want*0.95 || got > want*1.01+20e6 {
		t.Errorf("task-clock %.1f ms, schedstat %.1f ms over the same window", got/1e6, want/1e6)
	}
}

// TestFunclatDuration: -d counts from when the probes are attached, so a
// function called every 10 ms is seen 100 times a second of -d, however
// long attaching took; and the run ends soon after.
func TestFunclatDuration(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	bin := testutil.BuildC(t, dir, "ticker", []string{"ticker.c"})
	w := exec.Command(bin)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { w.Process.Kill(); w.Wait() }()
	begin := time.Now()
	r := testutil.MustRun(t, dir, "funclat", "--json", "-d", "2s", "-p", strconv.Itoa(w.Process.Pid), bin+":tick")
	wall := time.Since(begin)
	var rep struct {
		DurationNS int64 `json:"duration_ns"`
		Functions  []struct {
			Stats struct {
				Count uint64 `json:"count"`
			} `json:"stats"`
		} `json:"functions"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || len(rep.Functions) != 1 {
		t.Fatalf("funclat JSON: %v\n%s", err, r.Stdout)
	}
	n := rep.Functions[0].Stats.Count
	t.Logf("funclat -d 2s: %d calls of tick, duration %v, %v wall", n, time.Duration(rep.DurationNS), wall)
	if n < 197 || n > 203 {
		t.Errorf("%d calls of a function called every 10 ms in 2 s: want 200 ± 3", n)
	}
	if d := time.Duration(rep.DurationNS); d < 1990*time.Millisecond || d > 2100*time.Millisecond {
		t.Errorf("reported duration %v for -d 2s", d)
	}
	if wall > 3500*time.Millisecond {
		t.Errorf("funclat -d 2s took %v", wall)
	}
}
