package record

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/perf"
	"github.com/sonde-dev/sonde/internal/runctl"
	"github.com/sonde-dev/sonde/internal/testutil"

	"github.com/sonde-dev/sonde/internal/events"
)

// TestMain is also the held child of a recorded command: the test binary
// re-executes itself as sonde does (runctl.StartChild).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == runctl.ChildArg {
		runctl.RunChild(os.Args[2:])
	}
	os.Exit(m.Run())
}

// reachingStart counts the samples of p whose stack passes through main
// and ends at _start (a walk cut above main, in libc, ends elsewhere),
// and every sample.
func reachingStart(p *model.Profile) (hit, total int) {
	name := func(l int32) string {
		if f := p.Locs[l].Func; f >= 0 {
			return p.Funcs[f].Name
		}
		return ""
	}
	for _, s := range p.Samples {
		total++
		st := p.Stacks[s.Stack]
		if len(st) == 0 || name(st[len(st)-1]) != "_start" {
			continue
		}
		for _, l := range st {
			if name(l) == "main" {
				hit++
				break
			}
		}
	}
	return hit, total
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
	hit, total := reachingStart(res.Profile)
	t.Logf("%d of %d samples read _start → main; walker %+v, loader %+v", hit, total, res.Walk.Walker, res.Walk.Loader)
	if total < 250 {
		t.Fatalf("only %d samples in 0.5 s at 999 Hz", total)
	}
	if pct := 100 * float64(hit) / float64(total); pct < 99 {
		t.Errorf("%.1f%% of samples read _start → main, want ≥ 99%%", pct)
	}
}

// TestRecordTracepointWalked: a tracepoint's user stack is walked too,
// for the processes record follows only. Built without frame pointers:
// testdata/syscalls.c calls write from main 3,000 times, so every
// sys_enter_write stack must read _start → main (libc's write keeps no
// frame: a frame-pointer walk loses main); testdata/unwind.c's main →
// dispatch → heavy/light calls nanosleep between rounds, so ≥ 95% of its
// sched_switch stacks must read _start → main.
func TestRecordTracepointWalked(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	sys := testutil.BuildC(t, dir, "syscalls", []string{"syscalls.c"}, "-O2", "-fomit-frame-pointer")
	res := recordTracepoint(t, "syscalls:sys_enter_write", time.Minute, sys, "3000")
	hit, total := reachingStart(res.Profile)
	t.Logf("%d of %d sys_enter_write stacks read _start → main; %+v", hit, total, *res.Walk)
	if total != 3000 || hit != total {
		t.Errorf("%d of %d sys_enter_write stacks read _start → main, want 3000 of 3000", hit, total)
	}
	if res.Walk.Walker.Walks > 3100 {
		t.Errorf("%d walks for 3,000 writes: the program walks processes record does not follow", res.Walk.Walker.Walks)
	}
	bin := testutil.BuildC(t, dir, "ticker", []string{"ticker.c"}, "-O2", "-fomit-frame-pointer")
	res = recordTracepoint(t, "sched:sched_switch", 500*time.Millisecond, bin)
	hit, total = reachingStart(res.Profile)
	t.Logf("%d of %d sched_switch stacks read _start → main; %+v", hit, total, *res.Walk)
	if total < 40 {
		t.Fatalf("only %d sched_switch samples", total)
	}
	if pct := 100 * float64(hit) / float64(total); pct < 95 {
		t.Errorf("%.1f%% of sched_switch stacks read _start → main, want ≥ 95%%", pct)
	}
}
