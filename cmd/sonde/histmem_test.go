package main

// runqlat's memory stays flat however many run-queue events it counts: the
// kernel's slot counts go into bucketed histograms without being expanded
// into one value per event (issue 9).

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// vmRSS reads a process's resident set size in KiB from /proc/PID/status.
func vmRSS(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

type runqlatLine struct {
	Groups []struct {
		Stats struct {
			Count uint64 `json:"count"`
		} `json:"stats"`
	} `json:"groups"`
}

func (l runqlatLine) count() uint64 {
	var n uint64
	for _, g := range l.Groups {
		n += g.Stats.Count
	}
	return n
}

func TestRunqlatMemoryFlat(t *testing.T) {
	_, pp := testutil.Workload(t, "pingpong", []string{"pingpong.c"}, "-O2", "-pthread")
	sonde := testutil.Sonde(t)
	// Two pairs of threads ping-ponging through pipes: on two CPUs this
	// makes about a million run-queue waits a second.
	testutil.Start(t, pp, "2", "60")
	time.Sleep(300 * time.Millisecond)

	// Part 1: a report a second, as a long-running monitor would run it.
	// RSS is sampled every second and must stop growing after warm-up.
	cmd := exec.Command(sonde, "runqlat", "-i", "1s", "--json")
	// Each report leaves some KiB of garbage; with Go's default GOGC the
	// first collection would come only after minutes, and RSS would creep
	// up until then. A low GOGC collects every few seconds, so what RSS
	// shows is live memory (which GOGC cannot hide).
	cmd.Env = append(os.Environ(), "GOGC=5")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	counts := make(chan uint64, 100)
	go func() {
		defer close(counts)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var l runqlatLine
			if json.Unmarshal(sc.Bytes(), &l) == nil {
				counts <- l.count()
			}
		}
	}()
	var events uint64
	var rss []int
	start := time.Now()
	tick := time.NewTicker(time.Second)
	for (events < 10_000_000 || len(rss) < 20) && time.Since(start) < 45*time.Second {
		select {
		case n, ok := <-counts:
			if !ok {
				t.Fatalf("runqlat ended early: %s", stderr.String())
			}
			events += n
		case <-tick.C:
			kb, err := vmRSS(cmd.Process.Pid)
			if err != nil {
				t.Fatalf("runqlat exited: %v: %s", err, stderr.String())
			}
			rss = append(rss, kb)
		}
	}
	tick.Stop()
	cmd.Process.Signal(syscall.SIGINT)
	for n := range counts {
		events += n
	}
	cmd.Wait()
	t.Logf("runqlat -i 1s: %d run-queue events in %s; VmRSS each second (KiB): %v", events, time.Since(start).Round(time.Second), rss)
	if events < 10_000_000 {
		t.Fatalf("only %d run-queue events: the load did not switch enough", events)
	}
	// Warm-up: the first 4 s (Go runtime, BPF objects, first reports).
	// After it, the second half of the run may not exceed the first half's
	// peak by more than 512 KiB (page-granular noise of the Go heap).
	steady := rss[4:]
	half := len(steady) / 2
	first, second := maxInt(steady[:half]), maxInt(steady[half:])
	if second > first+512 {
		t.Errorf("VmRSS still growing after warm-up: peak %d KiB in the first half, %d KiB in the second", first, second)
	}

	// Part 2: one report at the end, over ~10 M events. The kernel holds
	// the slots during the run; the final read must not cost memory in
	// proportion to the events (a list of values would need 8 bytes each).
	cmd = exec.Command(sonde, "runqlat", "-d", "10s", "--json")
	var stdout strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var during int
	for range 8 {
		time.Sleep(time.Second)
		if kb, err := vmRSS(cmd.Process.Pid); err == nil {
			during = max(during, kb)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("runqlat -d 10s: %v: %s", err, stderr.String())
	}
	peak := int(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) // KiB
	var l runqlatLine
	if err := json.Unmarshal([]byte(stdout.String()), &l); err != nil {
		t.Fatalf("runqlat JSON: %v\n%s", err, stdout.String())
	}
	t.Logf("runqlat -d 10s: %d run-queue events; VmRSS at most %d KiB while tracing, peak %d KiB including the final report", l.count(), during, peak)
	if l.count() < 5_000_000 {
		t.Fatalf("only %d run-queue events in 10 s", l.count())
	}
	// A list of values would add 8 bytes per event (over 40 MiB here); the
	// final read may add a few MiB of garbage before a collection.
	if peak > during+32768 {
		t.Errorf("the final report raised the peak RSS from %d to %d KiB for %d events", during, peak, l.count())
	}
}

func maxInt(s []int) int {
	m := 0
	for _, v := range s {
		m = max(m, v)
	}
	return m
}
