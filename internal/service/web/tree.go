package web

import (
	"math/bits"
	"slices"
	"sort"
	"strconv"
)

// tree is the merged call tree of a selection: node 0 is the root, every
// other node one frame under its parent. Arrays rather than node structs,
// children as first-child/next-sibling links, and a map only for nodes
// with many children: a big profile has hundreds of thousands of nodes,
// and the answer should cost a fraction of the model's memory.
type tree struct {
	in     *input
	sym    []int32
	parent []int32
	first  []int32  // first child, -1 for none
	next   []int32  // next sibling, -1 for none
	nkids  []uint8  // children, counted up to wideAt
	period []uint64 // weight of the node and all below it
	count  []uint32 // samples of the node and all below it
	wide   map[uint64]int32
}

// wideAt children make a node's children found through the map.
const wideAt = 8

func newTree(in *input, root int32) *tree {
	return &tree{in: in, sym: []int32{root}, parent: []int32{-1}, first: []int32{-1}, next: []int32{-1}, nkids: []uint8{0},
		period: []uint64{0}, count: []uint32{0}, wide: map[uint64]int32{}}
}

func wideKey(n, s int32) uint64 { return uint64(n)<<32 | uint64(uint32(s)) }

func (t *tree) child(n, s int32) (int32, bool) {
	if t.nkids[n] >= wideAt {
		c, ok := t.wide[wideKey(n, s)]
		return c, ok
	}
	for c := t.first[n]; c >= 0; c = t.next[c] {
		if t.sym[c] == s {
			return c, true
		}
	}
	return -1, false
}

func (t *tree) add(path []int32, count, period uint64) {
	n := int32(0)
	t.period[0] += period
	t.count[0] += uint32(count)
	for _, s := range path {
		c, ok := t.child(n, s)
		if !ok {
			c = int32(len(t.sym))
			t.sym = append(t.sym, s)
			t.parent = append(t.parent, n)
			t.first = append(t.first, -1)
			t.next = append(t.next, t.first[n])
			t.nkids = append(t.nkids, 0)
			t.period = append(t.period, 0)
			t.count = append(t.count, 0)
			t.first[n] = c
			switch {
			case t.nkids[n] < wideAt-1:
				t.nkids[n]++
			case t.nkids[n] == wideAt-1:
				t.nkids[n]++
				for k := t.first[n]; k >= 0; k = t.next[k] {
					t.wide[wideKey(n, t.sym[k])] = k
				}
			default:
				t.wide[wideKey(n, s)] = c
			}
		}
		n = c
		t.period[n] += period
		t.count[n] += uint32(count)
	}
}

// maxNodes is the most nodes a tree sends; beyond it the narrowest frames
// are left out (their weight stays in their parents' totals; focusing on a
// function sends its subtree whole). 60,000 frames keep a million-sample
// recording's first paint under a second; at full width the frames left
// out are far narrower than a pixel.
const maxNodes = 60000

// TreeDoc is a call tree as the UI draws it: nodes in preorder, each
// [name index, kind, depth, period, samples, self period]; children sorted
// by name. Period is the weight the views size frames by: samples' event
// counts, or nanoseconds (Unit "ns") for blocked time.
type TreeDoc struct {
	Names       []string  `json:"names"`
	Nodes       nodeList  `json:"nodes"`
	TotalPeriod uint64    `json:"total_period"`
	Samples     uint64    `json:"samples"`
	Unit        string    `json:"unit,omitempty"`
	Omitted     int       `json:"omitted,omitempty"` // nodes left out under maxNodes
	Delta       []float64 `json:"delta_percent,omitempty"`
	Function    string    `json:"function,omitempty"`
	order       []int32   // tree node of each doc node
}

// nodeList is written by hand: encoding/json's reflection takes most of a
// big tree's answer time.
type nodeList [][6]uint64

func (l nodeList) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 32*len(l)+2)
	b = append(b, '[')
	for i, n := range l {
		if i > 0 {
			b = append(b, ',')
		}
		for j, v := range n {
			if j == 0 {
				b = append(b, '[')
			} else {
				b = append(b, ',')
			}
			b = strconv.AppendUint(b, v, 10)
		}
		b = append(b, ']')
	}
	return append(b, ']'), nil
}

// floor is the least weight a node needs to be among the maxNodes widest
// (0 when all fit), found through a histogram of weights by bit length so
// that only one bucket's weights are copied and sorted.
func (t *tree) floor() uint64 {
	if len(t.sym) <= maxNodes {
		return 0
	}
	var hist [65]int
	for _, v := range t.period {
		hist[bits.Len64(v)]++
	}
	above, b := 0, 64
	for ; b > 0 && above+hist[b] < maxNodes; b-- {
		above += hist[b]
	}
	var in []uint64
	for _, v := range t.period {
		if bits.Len64(v) == b {
			in = append(in, v)
		}
	}
	slices.Sort(in)
	// The (maxNodes-above)-th largest of the bucket is the maxNodes-th
	// largest of all; keep what is wider.
	return in[len(in)-(maxNodes-above)] + 1
}

// doc encodes t; rootName names node 0.
func (t *tree) doc(rootName string) *TreeDoc {
	d := &TreeDoc{TotalPeriod: t.period[0], Samples: uint64(t.count[0]), Unit: t.in.p.Meta.Unit}
	floor := t.floor()
	for i := 1; i < len(t.sym); i++ {
		if t.period[i] < floor {
			d.Omitted++
		}
	}
	names := map[int32]uint64{}
	name := func(n int32) uint64 {
		s := t.sym[n]
		if n == 0 {
			s = -1
		}
		if id, ok := names[s]; ok {
			return id
		}
		id := uint64(len(d.Names))
		names[s] = id
		if s < 0 {
			d.Names = append(d.Names, rootName)
		} else {
			d.Names = append(d.Names, t.in.syms[s])
		}
		return id
	}
	type item struct{ n, depth int32 }
	stack := []item{{0, 0}}
	var k []int32
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := it.n
		kind := uint64(kindOther)
		if n > 0 {
			kind = uint64(t.in.symKind[t.sym[n]])
		}
		// Self weight is what the children do not account for.
		self := t.period[n]
		k = k[:0]
		for c := t.first[n]; c >= 0; c = t.next[c] {
			self -= t.period[c]
			if t.period[c] >= floor {
				k = append(k, c)
			}
		}
		d.Nodes = append(d.Nodes, [6]uint64{name(n), kind, uint64(it.depth), t.period[n], uint64(t.count[n]), self})
		d.order = append(d.order, n)
		sort.Slice(k, func(i, j int) bool { return t.in.syms[t.sym[k[i]]] < t.in.syms[t.sym[k[j]]] })
		for i := len(k) - 1; i >= 0; i-- {
			stack = append(stack, item{k[i], it.depth + 1})
		}
	}
	return d
}

// flame is the call tree of a selection.
func (in *input) flame(f *filter) *tree {
	t := newTree(in, -1)
	in.paths(f, func(path []int32, count, period uint64) { t.add(path, count, period) })
	return t
}

// diffDoc is cur's tree with each frame's change in share from base, in
// percentage points of each selection's total (frames only base has are
// not drawn: they have no width in the new profile).
func diffDoc(base, cur *tree) *TreeDoc {
	d := cur.doc("all")
	// Each cur node's counterpart in base, found by walking the same names.
	match := make([]int32, len(cur.sym))
	match[0] = 0
	bt, ct := float64(max(base.period[0], 1)), float64(max(cur.period[0], 1))
	d.Delta = make([]float64, len(d.order))
	for i, n := range d.order {
		if n > 0 {
			match[n] = -1
			if pm := match[cur.parent[n]]; pm >= 0 {
				s := cur.sym[n]
				if bs, ok := base.in.symIndex[cur.in.syms[s]+string(rune('0'+cur.in.symKind[s]))]; ok {
					if c, ok := base.child(pm, bs); ok {
						match[n] = c
					}
				}
			}
		}
		var was float64
		if match[n] >= 0 {
			was = float64(base.period[match[n]]) / bt
		}
		d.Delta[i] = 100 * (float64(cur.period[n])/ct - was)
	}
	return d
}

// TopRow is one function of the top table.
type TopRow struct {
	Name         string `json:"name"`
	Kind         uint8  `json:"kind"`
	Self         uint64 `json:"self_period"`
	Total        uint64 `json:"children_period"`
	SelfSamples  uint64 `json:"self_samples"`
	TotalSamples uint64 `json:"samples"`
}

// TopDoc is the top table: every function of the selection, heaviest self
// first; shares are of TotalPeriod.
type TopDoc struct {
	Rows        []TopRow `json:"entries"`
	TotalPeriod uint64   `json:"total_period"`
	Samples     uint64   `json:"samples"`
	Unit        string   `json:"unit,omitempty"`
}

func (in *input) top(f *filter) *TopDoc {
	rows := make([]TopRow, len(in.syms))
	seen := make([]uint32, len(in.syms)) // stamp of the last path that counted a function
	stamp := uint32(0)
	d := &TopDoc{Unit: in.p.Meta.Unit}
	in.paths(f, func(path []int32, count, period uint64) {
		d.TotalPeriod += period
		d.Samples += count
		stamp++
		for i, s := range path {
			if i == 0 && f.focus == "" {
				continue // the process name
			}
			if seen[s] != stamp {
				seen[s] = stamp
				rows[s].Total += period
				rows[s].TotalSamples += count
			}
		}
		if len(path) > 1 || (f.focus != "" && len(path) > 0) {
			leaf := path[len(path)-1]
			rows[leaf].Self += period
			rows[leaf].SelfSamples += count
		}
	})
	for s := range rows {
		if rows[s].Total > 0 {
			rows[s].Name, rows[s].Kind = in.syms[s], in.symKind[s]
			d.Rows = append(d.Rows, rows[s])
		}
	}
	sort.Slice(d.Rows, func(i, j int) bool {
		a, b := d.Rows[i], d.Rows[j]
		if a.Self != b.Self {
			return a.Self > b.Self
		}
		if a.Total != b.Total {
			return a.Total > b.Total
		}
		return a.Name < b.Name
	})
	if d.Rows == nil {
		d.Rows = []TopRow{}
	}
	return d
}

// SandwichDoc is one function's callers (a tree rooted at the function,
// growing towards main) and callees (rooted at it, growing to the leaves),
// over the stacks that pass through it; recursion counts the outermost
// call.
type SandwichDoc struct {
	Function string   `json:"function"`
	Callers  *TreeDoc `json:"callers"`
	Callees  *TreeDoc `json:"callees"`
	// TotalPeriod is the whole selection's, for shares of everything.
	TotalPeriod uint64 `json:"total_period"`
}

func (in *input) sandwich(f *filter, fn string) *SandwichDoc {
	callers, callees := newTree(in, -1), newTree(in, -1)
	var rev []int32
	var total uint64
	in.paths(f, func(path []int32, count, period uint64) {
		total += period
		i := slices.IndexFunc(path, func(s int32) bool { return in.syms[s] == fn && in.symKind[s] != kindOther })
		if i < 0 {
			return
		}
		rev = rev[:0]
		for j := i - 1; j >= 0; j-- {
			rev = append(rev, path[j])
		}
		callers.add(rev, count, period)
		callees.add(path[i+1:], count, period)
	})
	return &SandwichDoc{Function: fn, Callers: callers.doc(fn), Callees: callees.doc(fn), TotalPeriod: total}
}
