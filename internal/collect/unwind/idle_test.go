package unwind

import (
	"slices"
	"testing"

	"github.com/sonde-dev/sonde/internal/collect/unwindtable"
)

// TestIdleTables: idle tables beyond the budget leave oldest first; a
// table in use again leaves the idle list and its bytes with it.
func TestIdleTables(t *testing.T) {
	k := func(s string) unwindtable.Key { return unwindtable.Key{BuildID: s} }
	q := idleTables{limit: 10}
	if got := q.add(k("a"), 4); len(got) != 0 {
		t.Fatalf("evicted %v under the budget", got)
	}
	q.add(k("b"), 4)
	q.take(k("a")) // mapped again
	if q.bytes != 4 {
		t.Fatalf("%d idle bytes after a is taken, want 4", q.bytes)
	}
	q.add(k("a"), 4)
	if got := q.add(k("c"), 5); !slices.Equal(got, []unwindtable.Key{k("b")}) {
		t.Errorf("evicted %v, want the oldest idle table, b", got)
	}
	if got := q.add(k("d"), 20); !slices.Equal(got, []unwindtable.Key{k("a"), k("c"), k("d")}) {
		t.Errorf("evicted %v, want a, c and d itself (over the budget alone)", got)
	}
	if q.bytes != 0 || len(q.q) != 0 {
		t.Errorf("%d bytes in %d idle tables left, want none", q.bytes, len(q.q))
	}
}
