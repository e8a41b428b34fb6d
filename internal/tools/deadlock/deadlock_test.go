package deadlock

import (
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/testutil"
)

// traceWorkload runs testdata/deadlock.c in mode under sonde deadlock and
// returns its JSON report.
func traceWorkload(t *testing.T, bin, mode string) Report {
	t.Helper()
	r := testutil.Run(t, t.TempDir(), "deadlock", "--json", "--", bin, mode)
	if r.Code != 0 {
		t.Fatalf("sonde deadlock -- %s %s: exit %d\n%s%s", bin, mode, r.Code, r.Stdout, r.Stderr)
	}
	var rep Report
	r.JSON(t, &rep)
	if rep.Counters.Dropped() > 0 || rep.Counters.StackFailed > 0 {
		t.Errorf("the program dropped events: %+v", rep.Counters)
	}
	return rep
}

// funcs names the functions of a stack, leaf first.
func funcs(fs []Frame) string {
	var s []string
	for _, f := range fs {
		s = append(s, f.Sym)
	}
	return strings.Join(s, " ")
}

func TestDeadlockWorkloads(t *testing.T) {
	testutil.RequirePrivileged(t)
	bin := testutil.BuildC(t, t.TempDir(), "deadlock", []string{"deadlock.c"}, "-pthread")

	t.Run("ab_ba", func(t *testing.T) {
		rep := traceWorkload(t, bin, "abba")
		if len(rep.Inversions) != 1 {
			t.Fatalf("%d inversions, want 1: %+v", len(rep.Inversions), rep)
		}
		inv := rep.Inversions[0]
		sym := map[string]string{} // M1 → lock_a
		for _, l := range inv.Locks {
			sym[l.Name] = l.Symbol
		}
		// Each edge: the lock held, where it and the other were taken.
		want := map[string][2]string{
			"lock_a>lock_b": {"take_a first_a_then_b", "take_b first_a_then_b"},
			"lock_b>lock_a": {"take_b second_b_then_a", "take_a second_b_then_a"},
		}
		tids := map[int]bool{}
		for _, e := range inv.Edges {
			k := sym[e.Held.Lock] + ">" + sym[e.Acquired.Lock]
			w, ok := want[k]
			if !ok {
				t.Errorf("unexpected edge %s", k)
				continue
			}
			delete(want, k)
			if h := funcs(e.Held.Frames); !strings.Contains(h, "pthread_mutex_lock "+w[0]) {
				t.Errorf("%s: held lock taken at %q, want pthread_mutex_lock %s …", k, h, w[0])
			}
			if a := funcs(e.Acquired.Frames); !strings.Contains(a, "pthread_mutex_lock "+w[1]) {
				t.Errorf("%s: acquired at %q, want pthread_mutex_lock %s …", k, a, w[1])
			}
			if e.Count != 1 || e.Held.Mode != "mutex" || e.Acquired.Mode != "mutex" || e.Comm != "deadlock" {
				t.Errorf("%s: count %d, modes %s/%s, comm %q; want 1, mutex/mutex, deadlock", k, e.Count, e.Held.Mode, e.Acquired.Mode, e.Comm)
			}
			tids[e.TID] = true
		}
		if len(want) > 0 {
			t.Errorf("edges missing: %v", want)
		}
		if len(tids) != 2 {
			t.Errorf("edges from threads %v, want two threads", tids)
		}
		// The program takes lock_warm 6 times and lock_a, lock_b twice
		// each; libc may take locks of its own.
		if rep.LocksInGraph != 2 || rep.EdgesInGraph != 2 || rep.Counters.Acquisitions < 10 {
			t.Errorf("graph of %d locks, %d edges, %d acquisitions; want 2, 2, ≥ 10", rep.LocksInGraph, rep.EdgesInGraph, rep.Counters.Acquisitions)
		}
	})

	// No inversion, and the graph holds exactly the orders taken.
	for _, tc := range []struct {
		mode         string
		edges        int
		recursive    uint64
		tryForbidden bool
	}{
		{mode: "ordered", edges: 1},
		{mode: "rwlock", edges: 2},                  // rw_a → rw_b and rw_b → rw_a, both read
		{mode: "recursive", edges: 1, recursive: 4}, // lock_rec → lock_b; each thread re-locks twice
		{mode: "trylock", edges: 1},                 // lock_a → lock_b; the try adds none
	} {
		t.Run(tc.mode, func(t *testing.T) {
			rep := traceWorkload(t, bin, tc.mode)
			if len(rep.Inversions) != 0 {
				t.Errorf("%d inversions reported, want none: %+v", len(rep.Inversions), rep.Inversions)
			}
			if rep.EdgesInGraph != tc.edges || rep.Counters.Recursive != tc.recursive {
				t.Errorf("%d edges, %d recursive; want %d, %d", rep.EdgesInGraph, rep.Counters.Recursive, tc.edges, tc.recursive)
			}
		})
	}
}

// TestDeadlockText: the text report has ThreadSanitizer's shape.
func TestDeadlockText(t *testing.T) {
	testutil.RequirePrivileged(t)
	bin := testutil.BuildC(t, t.TempDir(), "deadlock", []string{"deadlock.c"}, "-pthread")
	r := testutil.Run(t, t.TempDir(), "deadlock", "--", bin, "abba")
	for _, want := range []string{"WARNING: lock-order-inversion (potential deadlock)", "Cycle in lock order graph: M1 (", "lock_a)", "lock_b)",
		"Mutex M2 acquired here while holding mutex M1 in thread", "Mutex M1 previously acquired by the same thread here:", "SUMMARY: 1 lock-order inversion"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("output lacks %q:\n%s%s", want, r.Stdout, r.Stderr)
		}
	}
	r = testutil.Run(t, t.TempDir(), "deadlock", "--", bin, "ordered")
	if !strings.Contains(r.Stdout, "no lock-order inversions found (2 locks, 1 edge,") {
		t.Errorf("ordered locks: %s%s", r.Stdout, r.Stderr)
	}
}

// The Go counters name members of the C enum (no root: the object's BTF).
func TestCounterTags(t *testing.T) {
	if err := bpfskel.CheckCounters(loadDeadlock, deadlockMapCounters, &Counters{}); err != nil {
		t.Fatal(err)
	}
}
