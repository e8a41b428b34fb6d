package web

import (
	"slices"
	"sort"
	"strings"
)

// tree is the merged call tree of a selection: node 0 is the root, every
// other node one frame under its parent. Arrays rather than node structs:
// a big profile has millions of nodes.
type tree struct {
	in     *input
	sym    []int32
	parent []int32
	period []uint64 // weight of the node and all below it
	count  []uint64 // samples of the node and all below it
	self   []uint64 // weight of stacks ending here
	kids   map[uint64]int32
}

func newTree(in *input, root int32) *tree {
	return &tree{in: in, sym: []int32{root}, parent: []int32{-1}, period: []uint64{0}, count: []uint64{0}, self: []uint64{0}, kids: map[uint64]int32{}}
}

func (t *tree) child(n int32, s int32) (int32, bool) {
	c, ok := t.kids[uint64(n)<<32|uint64(uint32(s))]
	return c, ok
}

func (t *tree) add(path []int32, count, period uint64) {
	n := int32(0)
	t.period[0] += period
	t.count[0] += count
	for _, s := range path {
		key := uint64(n)<<32 | uint64(uint32(s))
		c, ok := t.kids[key]
		if !ok {
			c = int32(len(t.sym))
			t.kids[key] = c
			t.sym = append(t.sym, s)
			t.parent = append(t.parent, n)
			t.period = append(t.period, 0)
			t.count = append(t.count, 0)
			t.self = append(t.self, 0)
		}
		n = c
		t.period[n] += period
		t.count[n] += count
	}
	t.self[n] += period
}

// maxNodes is the most nodes a tree sends; beyond it the narrowest frames
// are left out (their weight stays in their parents' totals).
const maxNodes = 200000

// TreeDoc is a call tree as the UI draws it: nodes in preorder, each
// [name index, kind, depth, period, samples, self period]; children sorted
// by name. Period is the weight the views size frames by: samples' event
// counts, or nanoseconds (Unit "ns") for blocked time.
type TreeDoc struct {
	Names       []string    `json:"names"`
	Nodes       [][6]uint64 `json:"nodes"`
	TotalPeriod uint64      `json:"total_period"`
	Samples     uint64      `json:"samples"`
	Unit        string      `json:"unit,omitempty"`
	Omitted     int         `json:"omitted,omitempty"` // nodes left out under maxNodes
	Delta       []float64   `json:"delta_percent,omitempty"`
	Function    string      `json:"function,omitempty"`
	order       []int32     // tree node of each doc node
}

// doc encodes t; rootName names node 0.
func (t *tree) doc(rootName string) *TreeDoc {
	d := &TreeDoc{TotalPeriod: t.period[0], Samples: t.count[0], Unit: t.in.p.Meta.Unit}
	var floor uint64
	if len(t.sym) > maxNodes {
		vals := slices.Clone(t.period)
		slices.Sort(vals)
		floor = vals[len(vals)-maxNodes] + 1
	}
	kids := make([][]int32, len(t.sym))
	for i := 1; i < len(t.sym); i++ {
		if t.period[i] < floor {
			d.Omitted++
			continue
		}
		p := t.parent[i]
		kids[p] = append(kids[p], int32(i))
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
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := it.n
		kind := uint64(kindOther)
		if n > 0 {
			kind = uint64(t.in.symKind[t.sym[n]])
		}
		d.Nodes = append(d.Nodes, [6]uint64{name(n), kind, uint64(it.depth), t.period[n], t.count[n], t.self[n]})
		d.order = append(d.order, n)
		k := kids[n]
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
	in.paths(f, func(path []int32, _ int32, count, period uint64) { t.add(path, count, period) })
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
	in.paths(f, func(path []int32, _ int32, count, period uint64) {
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
	in.paths(f, func(path []int32, _ int32, count, period uint64) {
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

// joinNames is for error messages that list a few names.
func joinNames(names []string, n int) string {
	if len(names) > n {
		names = append(names[:n:n], "…")
	}
	return strings.Join(names, ", ")
}
