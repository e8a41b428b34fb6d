package deadlock

import (
	"sort"
)

// Mode is how a lock was taken.
type Mode uint8

const (
	Mutex Mode = iota // pthread_mutex_*: exclusive
	Write             // pthread_rwlock_wrlock: exclusive
	Read              // pthread_rwlock_rdlock: shared
)

func (m Mode) String() string {
	switch m {
	case Write:
		return "write"
	case Read:
		return "read"
	}
	return "mutex"
}

// Edge is one ordered pair of the lock-order graph: To was acquired while
// From was held, in process Pid. The thread and stacks are those of the
// first time the pair was seen; Count is every time.
type Edge struct {
	Pid                uint32
	From, To           uint64 // lock addresses
	FromMode, ToMode   Mode
	FromStack, ToStack uint64 // keys of the stacks where each was taken (0: none)
	Count              uint64
	Tid                uint32
	Comm               string
}

// Cycle is one lock-order inversion: edges e[0] … e[n-1] where each
// edge's To is the next one's From and the last one's To is the first
// one's From.
type Cycle []Edge

// maxCycles bounds the search: a graph with more elementary cycles than
// this reports the first ones found (Johnson's algorithm can meet
// exponentially many).
const maxCycles = 1000

// FindCycles returns every elementary cycle of the lock-order graph that
// could deadlock, each once, per process. A cycle can deadlock when at
// every lock of it the thread waiting (the edge arriving, To) and the
// thread holding (the edge leaving, From) conflict: two read acquisitions
// of an rwlock do not wait for each other, so a cycle is kept only if
// some choice of its edges has no lock held for reading and wanted for
// reading. Pairs seen with several modes give several edges between the
// same locks; the exclusive ones are preferred in the report.
func FindCycles(edges []Edge) []Cycle {
	byPid := map[uint32][]Edge{}
	for _, e := range edges {
		if e.From != e.To {
			byPid[e.Pid] = append(byPid[e.Pid], e)
		}
	}
	pids := make([]uint32, 0, len(byPid))
	for p := range byPid {
		pids = append(pids, p)
	}
	sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
	var out []Cycle
	for _, p := range pids {
		out = append(out, cyclesOf(byPid[p], maxCycles-len(out))...)
		if len(out) >= maxCycles {
			break
		}
	}
	return out
}

// cyclesOf finds the cycles of one process's graph, at most limit.
func cyclesOf(edges []Edge, limit int) []Cycle {
	// Nodes numbered by address, so results come out in a stable order.
	var addrs []uint64
	seen := map[uint64]bool{}
	for _, e := range edges {
		for _, a := range []uint64{e.From, e.To} {
			if !seen[a] {
				seen[a] = true
				addrs = append(addrs, a)
			}
		}
	}
	sort.Slice(addrs, func(i, j int) bool { return addrs[i] < addrs[j] })
	index := make(map[uint64]int, len(addrs))
	for i, a := range addrs {
		index[a] = i
	}
	type pair struct{ from, to int }
	between := map[pair][]Edge{}
	adj := make([][]int, len(addrs))
	for _, e := range edges {
		k := pair{index[e.From], index[e.To]}
		if len(between[k]) == 0 {
			adj[k.from] = append(adj[k.from], k.to)
		}
		between[k] = append(between[k], e)
	}
	for _, es := range between {
		// Exclusive acquisitions first: they make the report's choice.
		sort.SliceStable(es, func(i, j int) bool { return rank(es[i]) < rank(es[j]) })
	}
	for _, a := range adj {
		sort.Ints(a)
	}
	var out []Cycle
	elementaryCycles(adj, func(nodes []int) bool {
		cands := make([][]Edge, len(nodes))
		for i, n := range nodes {
			cands[i] = between[pair{n, nodes[(i+1)%len(nodes)]}]
		}
		if c := choose(cands); c != nil {
			out = append(out, c)
		}
		return len(out) < limit
	})
	return out
}

// rank orders the edges between two locks: fewer read sides first.
func rank(e Edge) int {
	r := 0
	if e.FromMode == Read {
		r++
	}
	if e.ToMode == Read {
		r++
	}
	return r
}

// blocks says whether a thread wanting a lock in mode want waits for a
// thread holding it in mode held: unless both are reads.
func blocks(want, held Mode) bool { return want != Read || held != Read }

// choose picks one edge per step of a cycle so that every lock of it
// blocks (the edge into it wants what the edge out of it holds); nil when
// no choice does. cands[i] are the edges from lock i to lock i+1.
func choose(cands [][]Edge) Cycle {
	n := len(cands)
	for f := range cands[0] {
		// from[i][j]: the edge of step i-1 that edge j of step i follows
		// (-1: edge j cannot follow the choices so far). Step 0 is the
		// first edge alone.
		from := make([][]int, n)
		from[0] = make([]int, len(cands[0]))
		for j := range from[0] {
			from[0][j] = -1
		}
		from[0][f] = f
		for i := 1; i < n; i++ {
			from[i] = make([]int, len(cands[i]))
			for j, e := range cands[i] {
				from[i][j] = -1
				for k, p := range cands[i-1] {
					if from[i-1][k] >= 0 && blocks(p.ToMode, e.FromMode) {
						from[i][j] = k
						break
					}
				}
			}
		}
		first := cands[0][f]
		for j, e := range cands[n-1] {
			if from[n-1][j] < 0 || !blocks(e.ToMode, first.FromMode) {
				continue
			}
			c := make(Cycle, n)
			for i := n - 1; i >= 0; i-- {
				c[i] = cands[i][j]
				j = from[i][j]
			}
			return c
		}
	}
	return nil
}

// elementaryCycles calls found with every elementary cycle of the graph
// (Johnson, 1975), each once, starting at its least node; found returns
// false to stop.
func elementaryCycles(adj [][]int, found func([]int) bool) {
	n := len(adj)
	blocked := make([]bool, n)
	bmap := make([]map[int]bool, n)
	var stack []int
	stop := false
	for s := 0; s < n && !stop; s++ {
		// Only the subgraph of nodes ≥ s, and of those only the strongly
		// connected component holding s, can hold cycles through s.
		comp := componentOf(adj, s)
		if len(comp) < 2 {
			continue
		}
		for v := range comp {
			blocked[v] = false
			bmap[v] = map[int]bool{}
		}
		var unblock func(int)
		unblock = func(u int) {
			blocked[u] = false
			for w := range bmap[u] {
				delete(bmap[u], w)
				if blocked[w] {
					unblock(w)
				}
			}
		}
		var circuit func(v int) bool
		circuit = func(v int) bool {
			f := false
			stack = append(stack, v)
			blocked[v] = true
			for _, w := range adj[v] {
				if stop || !comp[w] {
					continue
				}
				if w == s {
					if !found(append([]int(nil), stack...)) {
						stop = true
					}
					f = true
				} else if !blocked[w] && circuit(w) {
					f = true
				}
			}
			if f {
				unblock(v)
			} else {
				for _, w := range adj[v] {
					if comp[w] {
						bmap[w][v] = true
					}
				}
			}
			stack = stack[:len(stack)-1]
			return f
		}
		circuit(s)
	}
}

// componentOf returns the strongly connected component of s in the
// subgraph of nodes ≥ s: the nodes both reachable from s and reaching it.
func componentOf(adj [][]int, s int) map[int]bool {
	fwd := map[int]bool{s: true}
	work := []int{s}
	for len(work) > 0 {
		v := work[len(work)-1]
		work = work[:len(work)-1]
		for _, w := range adj[v] {
			if w >= s && !fwd[w] {
				fwd[w] = true
				work = append(work, w)
			}
		}
	}
	// Reverse reachability within fwd.
	rev := map[int][]int{}
	for v := range fwd {
		for _, w := range adj[v] {
			if fwd[w] {
				rev[w] = append(rev[w], v)
			}
		}
	}
	comp := map[int]bool{s: true}
	work = []int{s}
	for len(work) > 0 {
		v := work[len(work)-1]
		work = work[:len(work)-1]
		for _, u := range rev[v] {
			if !comp[u] {
				comp[u] = true
				work = append(work, u)
			}
		}
	}
	return comp
}
