package record

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/collect/perf"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/testutil"

	"github.com/sonde-dev/sonde/internal/collect/events"
)

// TestMain: the test binary is also the held child of the commands the
// tests start.
func TestMain(m *testing.M) { testutil.MainOrHeldChild(m) }

// reachingStart counts the samples of p whose stack passes through main
// and ends at _start (a walk cut above main, in libc, ends elsewhere),
// those outside main: taken while the dynamic loader ran (their stacks
// end at its entry point) or in the exit's release of the process's
// memory (the stack is unmapped: _exit is all there is), and every sample.
func reachingStart(p *model.Profile) (hit, outside, total int) {
	name := func(l int32) string {
		if f := p.Locs[l].Func; f >= 0 {
			return p.Funcs[f].Name
		}
		return ""
	}
	for _, s := range p.Samples {
		total++
		st := p.Stacks[s.Stack]
		if len(st) == 0 {
			continue
		}
		root := st[len(st)-1]
		if d := p.Locs[root].DSO; d >= 0 && strings.HasPrefix(model.BaseName(p.DSOs[d].Name), "ld-linux") || name(root) == "_exit" {
			outside++
			continue
		}
		if name(root) != "_start" {
			continue
		}
		for _, l := range st {
			if name(l) == "main" {
				hit++
				break
			}
		}
	}
	return hit, outside, total
}

// checkFromStart fails the test unless at least pct% of res's samples
// (at least min of them) read _start → … → main; samples before main and
// after it (a sched_switch in the dynamic loader's mmap or in the exit's
// munmap, on a loaded machine) are counted apart.
func checkFromStart(t *testing.T, what string, res *Result, min int, pct float64) {
	t.Helper()
	hit, outside, total := reachingStart(res.Profile)
	t.Logf("%s: %d of %d stacks read _start → main, %d before or after main; %+v", what, hit, total, outside, *res.Walk)
	if total-outside < min {
		t.Fatalf("%s: only %d samples in main, want ≥ %d (the command exited %d; warnings %q)", what, total-outside, min, res.ExitCode, res.Profile.Meta.Warnings)
	}
	if got := 100 * float64(hit) / float64(total-outside); got < pct {
		t.Errorf("%s: %.1f%% of stacks read _start → main, want ≥ %.0f%%", what, got, pct)
	}
}

// recordCmd records evs with record -g on a command, for at most d.
func recordCmd(t *testing.T, evs []events.Spec, freq uint64, d time.Duration, args ...string) *Result {
	t.Helper()
	res, err := Record(context.Background(), Options{
		Events: evs, Freq: freq, Callchain: true, CallGraph: CallGraphAuto, Command: args, Duration: d,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.CallGraph != CallGraphAuto {
		t.Fatalf("call graph %q, want auto (%s)", res.CallGraph, res.CallGraphNote)
	}
	return res
}

// recordTracepoint records tracepoint tp with record -g on a command
// for at most d.
func recordTracepoint(t *testing.T, tp string, d time.Duration, args ...string) *Result {
	t.Helper()
	e, err := events.Tracepoint(tp)
	if err != nil {
		t.Fatal(err)
	}
	res := recordCmd(t, []events.Spec{e}, 0, d, args...)
	for _, w := range res.Profile.Meta.Warnings {
		if strings.Contains(w, "other BPF program") {
			// The kernel's rule, not record's: the hits another tool's
			// program drops are lost to every perf event.
			t.Skipf("%s is shared: %s", tp, w)
		}
	}
	return res
}

// TestRecordCommandUnwindsFromTheStart: every sample of a command run
// under record -g is taken in main or below it (phases.c: main →
// phase_a/phase_b → spin, and ld.so for a millisecond before), so at
// least 99% must read _start → … → main → …, the first ones included.
// Before the command's tables were in place at its exec, its first 10–85
// ms were walked by frame pointers and stopped short (2–3% of this run).
func TestRecordCommandUnwindsFromTheStart(t *testing.T) {
	testutil.RequirePrivileged(t)
	bin := testutil.BuildC(t, t.TempDir(), "phases", []string{"phases.c"}, "-O2", "-fomit-frame-pointer")
	cpu, _ := perf.ParseEvent("cpu-clock")
	res := recordCmd(t, []events.Spec{{Event: cpu}}, 999, time.Minute, bin, "250", "250")
	checkFromStart(t, "cpu-clock, 0.5 s at 999 Hz", res, 250, 99)
}

// TestRecordTracepointWalked: a tracepoint's user stack is walked too,
// for the processes record follows only. Built without frame pointers:
// testdata/syscalls.c calls write from main 1,500 times (a burst of 3,000
// can overflow record's 512 KB ring), so every sys_enter_write stack must
// read _start → main (libc's write keeps no frame: a frame-pointer walk
// loses main); testdata/ticker.c sleeps in
// clock_nanosleep from main every 10 ms, so ≥ 95% of its sched_switch
// stacks must read _start → main (the last, at exit, does not).
func TestRecordTracepointWalked(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	sys := testutil.BuildC(t, dir, "syscalls", []string{"syscalls.c"}, "-O2", "-fomit-frame-pointer")
	res := recordTracepoint(t, "syscalls:sys_enter_write", time.Minute, sys, "1500")
	checkFromStart(t, "sys_enter_write", res, 1500, 100)
	if res.Walk.Walker.Walks > 1600 {
		t.Errorf("%d walks for 1,500 writes: the program walks processes record does not follow", res.Walk.Walker.Walks)
	}
	bin := testutil.BuildC(t, dir, "ticker", []string{"ticker.c"}, "-O2", "-fomit-frame-pointer")
	res = recordTracepoint(t, "sched:sched_switch", 500*time.Millisecond, bin)
	checkFromStart(t, "sched_switch", res, 40, 95)
}
