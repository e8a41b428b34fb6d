package deadlock

import (
	"fmt"
	"sort"
	"strings"
	"testing"
)

// e is an edge of process 1 from lock a to lock b in the given modes.
func e(a, b uint64, from, to Mode) Edge {
	return Edge{Pid: 1, From: a, To: b, FromMode: from, ToMode: to, Count: 1}
}

// shape names a cycle by its locks and modes: "1m>2m 2m>1m".
func shape(c Cycle) string {
	var s []string
	for _, x := range c {
		s = append(s, fmt.Sprintf("%d%c>%d%c", x.From, x.FromMode.String()[0], x.To, x.ToMode.String()[0]))
	}
	return strings.Join(s, " ")
}

func TestFindCycles(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edges []Edge
		want  []string
	}{
		{"ab_ba", []Edge{e(1, 2, Mutex, Mutex), e(2, 1, Mutex, Mutex)}, []string{"1m>2m 2m>1m"}},
		{"one_order", []Edge{e(1, 2, Mutex, Mutex), e(2, 3, Mutex, Mutex), e(1, 3, Mutex, Mutex)}, nil},
		{"three_locks", []Edge{e(1, 2, Mutex, Mutex), e(2, 3, Mutex, Mutex), e(3, 1, Mutex, Mutex)}, []string{"1m>2m 2m>3m 3m>1m"}},
		{"two_cycles_sharing_a_lock", []Edge{e(1, 2, Mutex, Mutex), e(2, 1, Mutex, Mutex), e(2, 3, Mutex, Mutex), e(3, 2, Mutex, Mutex)},
			[]string{"1m>2m 2m>1m", "2m>3m 3m>2m"}},
		// Every elementary cycle of a complete graph on 3 nodes: three
		// pairs and two triangles.
		{"complete_3", []Edge{e(1, 2, Mutex, Mutex), e(2, 1, Mutex, Mutex), e(2, 3, Mutex, Mutex), e(3, 2, Mutex, Mutex), e(1, 3, Mutex, Mutex), e(3, 1, Mutex, Mutex)},
			[]string{"1m>2m 2m>1m", "1m>2m 2m>3m 3m>1m", "1m>3m 3m>1m", "1m>3m 3m>2m 2m>1m", "2m>3m 3m>2m"}},
		{"readers_both_orders", []Edge{e(1, 2, Read, Read), e(2, 1, Read, Read)}, nil},
		// A reader holding A wants B for reading; a writer holds B and
		// wants A: both wait (B is held for writing, A for reading).
		{"reader_and_writer", []Edge{e(1, 2, Read, Read), e(2, 1, Write, Write)}, []string{"1r>2r 2w>1w"}},
		// Two readers meet on lock 2 and do not wait there: no deadlock,
		// though lock 1 would block.
		{"read_meets_read_on_one_lock", []Edge{e(1, 2, Mutex, Read), e(2, 1, Read, Mutex)}, nil},
		// The same pair seen twice with different modes: the exclusive
		// edge makes the cycle.
		{"modes_choose", []Edge{e(1, 2, Read, Read), e(1, 2, Write, Write), e(2, 1, Read, Read)}, []string{"1w>2w 2r>1r"}},
		{"self_edge_ignored", []Edge{e(1, 1, Mutex, Mutex)}, nil},
		{"processes_apart", []Edge{e(1, 2, Mutex, Mutex), {Pid: 2, From: 2, To: 1, Count: 1}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, c := range FindCycles(tc.edges) {
				for i := range c {
					if c[i].To != c[(i+1)%len(c)].From {
						t.Errorf("cycle %s does not chain", shape(c))
					}
				}
				got = append(got, shape(c))
			}
			sort.Strings(got)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestFindCyclesMatchesBruteForce: on small random graphs, every
// elementary cycle is reported once (the count equals a brute-force one).
func TestFindCyclesMatchesBruteForce(t *testing.T) {
	seed := uint64(1)
	rnd := func() uint64 { seed = seed*6364136223846793005 + 1442695040888963407; return seed >> 33 }
	for g := 0; g < 200; g++ {
		n := 2 + int(rnd()%5)
		var edges []Edge
		adj := make([][]int, n)
		for a := 0; a < n; a++ {
			for b := 0; b < n; b++ {
				if a != b && rnd()%3 == 0 {
					edges = append(edges, e(uint64(a), uint64(b), Mutex, Mutex))
					adj[a] = append(adj[a], b)
				}
			}
		}
		got := len(FindCycles(edges))
		if want := bruteCycles(adj); got != want {
			t.Fatalf("graph %v: %d cycles, brute force finds %d", adj, got, want)
		}
	}
}

// bruteCycles counts elementary cycles by trying every simple path from
// its least node.
func bruteCycles(adj [][]int) int {
	count := 0
	var walk func(start, v int, on []bool)
	walk = func(start, v int, on []bool) {
		for _, w := range adj[v] {
			if w == start {
				count++
			} else if w > start && !on[w] {
				on[w] = true
				walk(start, w, on)
				on[w] = false
			}
		}
	}
	for s := range adj {
		on := make([]bool, len(adj))
		on[s] = true
		walk(s, s, on)
	}
	return count
}

// TestModesMatchTheObject: Mode's values are enum dl_mode's, the attach
// cookies the programs read.
func TestModesMatchTheObject(t *testing.T) {
	if Mutex != Mode(deadlockDlModeDL_MUTEX) || Write != Mode(deadlockDlModeDL_WRITE) || Read != Mode(deadlockDlModeDL_READ) {
		t.Errorf("modes %d %d %d, the object's %d %d %d", Mutex, Write, Read, deadlockDlModeDL_MUTEX, deadlockDlModeDL_WRITE, deadlockDlModeDL_READ)
	}
}
