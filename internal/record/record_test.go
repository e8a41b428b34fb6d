package record

import (
	"context"
	"os"
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

// recordPhases records testdata/phases.c (no frame pointers) for about
// ms milliseconds with record -g -F 999 -- CMD.
func recordPhases(t *testing.T, bin string, ms string) *Result {
	t.Helper()
	cpu, _ := perf.ParseEvent("cpu-clock")
	res, err := Record(context.Background(), Options{
		Events: []events.Spec{{Event: cpu}}, Freq: 999, Callchain: true, CallGraph: CallGraphAuto,
		Command: []string{bin, ms, ms}, Duration: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.CallGraph != CallGraphAuto {
		t.Fatalf("call graph %q, want auto (%s)", res.CallGraph, res.CallGraphNote)
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
	res := recordPhases(t, bin, "250")
	hit, total := reachingStart(res.Profile)
	t.Logf("%d of %d samples read _start → main; walker %+v, loader %+v", hit, total, res.Walk.Walker, res.Walk.Loader)
	if total < 250 {
		t.Fatalf("only %d samples in 0.5 s at 999 Hz", total)
	}
	if pct := 100 * float64(hit) / float64(total); pct < 99 {
		t.Errorf("%.1f%% of samples read _start → main, want ≥ 99%%", pct)
	}
}
