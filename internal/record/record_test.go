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

// reachingMain counts the samples of p whose stack has a frame in main,
// and every sample of the command's threads.
func reachingMain(p *model.Profile) (hit, total int) {
	for _, s := range p.Samples {
		total++
		for _, l := range p.Stacks[s.Stack] {
			if f := p.Locs[l].Func; f >= 0 && p.Funcs[f].Name == "main" {
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
// least 99% must reach main, the first ones included. Without the tables
// loaded before the exec (preloadTables false) the first 10–85 ms stop
// at __libc_start_call_main.
func TestRecordCommandUnwindsFromTheStart(t *testing.T) {
	testutil.RequirePrivileged(t)
	bin := testutil.BuildC(t, t.TempDir(), "phases", []string{"phases.c"}, "-O2", "-fomit-frame-pointer")
	res := recordPhases(t, bin, "400")
	hit, total := reachingMain(res.Profile)
	t.Logf("%d of %d samples reach main; walker %+v, loader %+v", hit, total, res.Walk.Walker, res.Walk.Loader)
	if total < 300 {
		t.Fatalf("only %d samples in 0.8 s at 999 Hz", total)
	}
	if pct := 100 * float64(hit) / float64(total); pct < 99 {
		t.Errorf("%.1f%% of samples reach main, want ≥ 99%%", pct)
	}
}
