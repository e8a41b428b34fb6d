// Package flamegraph builds the stack tree of a profile and writes it as
// collapsed ("folded") stacks or as an interactive flame graph (SVG or HTML,
// self-contained: zoom on click, regex search with match percentage,
// tooltips, colours by frame kind).
//
// Folded input is streamed: each line goes into the tree as it is read and
// only the tree is kept (frame names interned once, a frame a number, the
// tree flat arrays of numbers), so a million distinct stacks of a real
// profile take under 200 MB. The drawing leaves out frames narrower than a minimum width (see
// MinWidth); the tree and the folded output stay exact.
package flamegraph

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/sonde-dev/sonde/internal/model"
)

// Kind of a frame, for colouring; encoded in folded stacks with the suffixes
// of Brendan Gregg's FlameGraph (_[k] kernel, _[j] JIT).
type Kind uint8

const (
	KindUser Kind = iota
	KindKernel
	KindJIT
	KindOther // process names, unknown memory
)

// Node is one frame of a finished tree: its name, kind and weight, and a
// handle into the tree's arrays for what lies below it.
type Node struct {
	Name  string
	Value float64 // weight of this frame and all below it (samples, or the input's unit)
	Kind  Kind
	t     *tree
	i     uint32 // the frame's number in t
}

// Self is the weight of the stacks that end in this frame.
func (n *Node) Self() float64 { return *n.t.self.at(n.i) }

// Children returns the node's callees, sorted by name.
func (n *Node) Children() []*Node {
	var out []*Node
	for _, c := range n.t.children(n.i) {
		out = append(out, n.t.node(c))
	}
	return out
}

// frames counts the frames of n's subtree, n included.
func (n *Node) frames() int { return int(n.t.size[n.i]) }

// tree is a finished stack tree as parallel arrays indexed by frame
// number, the root 0: 32 bytes a frame, and no pointers for the garbage
// collector to follow.
type tree struct {
	syms  []symInfo
	sym   []uint32          // the frame's name and kind, in syms
	self  *chunked[float64] // weight of the stacks ending here
	value []float64         // weight of the frame and all below it
	size  []uint32          // frames in the subtree, the frame included
	off   []uint32          // the frame's callees are kids[off[i]:off[i+1]]
	kids  []uint32          // callees, each frame's sorted by name
}

func (t *tree) children(i uint32) []uint32 { return t.kids[t.off[i]:t.off[i+1]] }

func (t *tree) node(i uint32) *Node {
	s := t.syms[t.sym[i]]
	return &Node{Name: s.name, Value: t.value[i], Kind: s.kind, t: t, i: i}
}

// symInfo is one distinct frame: a name and kind, interned, so the tree
// stores a number per frame and compares numbers.
type symInfo struct {
	name string
	kind Kind
}

// chunked is a growing array kept in chunks of a fixed size: growing it
// copies nothing and leaves no garbage, where append's regrowth of a slice
// of millions leaves several times its size behind; and an element stays
// where it is.
type chunked[T any] struct {
	chunks [][]T
	n      int
}

const chunkBits = 16

// grow adds an element, the zero value.
func (c *chunked[T]) grow() {
	if c.n&(1<<chunkBits-1) == 0 {
		c.chunks = append(c.chunks, make([]T, 1<<chunkBits))
	}
	c.n++
}

func (c *chunked[T]) at(i uint32) *T { return &c.chunks[i>>chunkBits][i&(1<<chunkBits-1)] }

// bigTable is the size (in slots, 12 bytes each) from which the builder
// collects the garbage of a table it replaced instead of waiting for the
// runtime's next cycle, which may let the heap double first.
const bigTable = 1 << 21

// noSym is no frame number.
const noSym uint32 = math.MaxUint32

// slot is an entry of the builder's child table: the child of parent
// called sym is node id (0: an empty slot, the root is nobody's child).
type slot struct{ parent, sym, id uint32 }

// builder grows a tree one stack at a time. Nodes are numbered as they are
// made, and each keeps its first callee (name and number, in kid): a
// frame of a chain, the bulk of a tree of deep stacks, is found or added
// there, next to its caller, which is where the previous frame was. Other
// callees are found through one open-addressing table of 12-byte slots
// keyed by (caller, name): one probe, and usually one cache miss, where a
// list of siblings costs a miss per sibling.
type builder struct {
	syms   []symInfo
	symIdx map[symInfo]uint32
	tokIdx map[string]uint32 // folded tokens below the first level
	topIdx map[string]uint32 // folded tokens at the first level (process names)
	// Code calls the same function from a caller most of the time: the
	// token last seen after each frame is tried before the maps, with one
	// comparison and no hashing.
	succ  []uint32 // by frame number: the frame that followed it last
	tokOf []string // by frame number: its token, below the first level

	// By node number; 0 is the root.
	kid    *chunked[uint64] // the first callee: its name << 32 | its number (0: none)
	parent *chunked[uint32]
	sym    *chunked[uint32]
	self   *chunked[float64]

	slots []slot // callees after the first
	shift uint   // 64 - log2(len(slots)), for Fibonacci hashing
	used  int

	// The previous stack's path: consecutive stacks usually share a prefix
	// (folded files are sorted), found again without probing.
	prevSym  []uint32
	prevNode []uint32
}

func newBuilder() *builder {
	b := &builder{
		symIdx: map[symInfo]uint32{},
		tokIdx: map[string]uint32{},
		topIdx: map[string]uint32{},
		kid:    &chunked[uint64]{},
		parent: &chunked[uint32]{},
		sym:    &chunked[uint32]{},
		self:   &chunked[float64]{},
	}
	b.newNode(0, b.intern(symInfo{"all", KindOther})) // the root
	b.resize(1 << 12)
	return b
}

// intern returns the number of a name and kind.
func (b *builder) intern(s symInfo) uint32 {
	if id, ok := b.symIdx[s]; ok {
		return id
	}
	id := uint32(len(b.syms))
	b.syms = append(b.syms, s)
	b.symIdx[s] = id
	b.succ = append(b.succ, noSym)
	b.tokOf = append(b.tokOf, "")
	return id
}

func (b *builder) resize(n int) {
	old := b.slots
	b.slots = make([]slot, n)
	b.shift = uint(64 - bits.TrailingZeros(uint(n)))
	for _, s := range old {
		if s.id != 0 {
			i := b.hash(s.parent, s.sym)
			for b.slots[i].id != 0 {
				i = (i + 1) & uint64(n-1)
			}
			b.slots[i] = s
		}
	}
}

func (b *builder) hash(parent, sym uint32) uint64 {
	return (uint64(parent)<<32 | uint64(sym)) * 0x9e3779b97f4a7c15 >> b.shift
}

// newNode adds a node, without linking it to its caller.
func (b *builder) newNode(parent, sym uint32) uint32 {
	id := uint32(b.self.n)
	if id == math.MaxUint32 {
		// ParseFolded stops before; a profile this large (tens of
		// gigabytes of stacks) does not load.
		panic("flamegraph: more than 4 billion frames")
	}
	b.kid.grow()
	b.parent.grow()
	b.sym.grow()
	b.self.grow()
	*b.parent.at(id), *b.sym.at(id) = parent, sym
	return id
}

// child finds or adds parent's callee sym.
func (b *builder) child(parent, sym uint32) uint32 {
	k := b.kid.at(parent)
	if *k == 0 {
		id := b.newNode(parent, sym)
		*k = uint64(sym)<<32 | uint64(id)
		return id
	}
	if uint32(*k>>32) == sym {
		return uint32(*k)
	}
	mask := uint64(len(b.slots) - 1)
	for i := b.hash(parent, sym); ; i = (i + 1) & mask {
		s := &b.slots[i]
		if s.id == 0 {
			id := b.newNode(parent, sym)
			*s = slot{parent, sym, id}
			if b.used++; b.used*4 >= len(b.slots)*3 {
				b.resize(2 * len(b.slots))
				if len(b.slots) >= bigTable {
					runtime.GC() // the old table, tens of megabytes: reuse it now
				}
			}
			return id
		}
		if s.parent == parent && s.sym == sym {
			return s.id
		}
	}
}

// add adds v along a root→leaf path of frame numbers.
func (b *builder) add(syms []uint32, v float64) {
	n := uint32(0)
	same := true
	for d, s := range syms {
		if same && d < len(b.prevSym) && b.prevSym[d] == s {
			n = b.prevNode[d]
			continue
		}
		same = false
		n = b.child(n, s)
		b.prevSym = append(b.prevSym[:d], s)
		b.prevNode = append(b.prevNode[:d], n)
	}
	b.prevSym, b.prevNode = b.prevSym[:len(syms)], b.prevNode[:len(syms)]
	*b.self.at(n) += v
}

// group is how many lines addBatch walks down side by side.
const group = 16

// addBatch adds a batch of lines, group lines at a time walked down level
// by level side by side: the probes of different lines do not depend on
// each other, so the processor overlaps their cache misses, where one line
// after another waits for each miss in turn. A line shares the nodes of the
// one before it as far as their frames agree.
func (b *builder) addBatch(bt *batch) {
	var (
		st, ln, lcp [group]int
		cur         [group]uint32
		prev        []uint32 // the path of the line before the group
	)
	start := 0
	for g := 0; g < len(bt.ends); g += group {
		k := min(group, len(bt.ends)-g)
		deepest := 0
		for j := 0; j < k; j++ {
			st[j], ln[j] = start, bt.ends[g+j]-start
			start = bt.ends[g+j]
			deepest = max(deepest, ln[j])
			line := bt.syms[st[j] : st[j]+ln[j]]
			before := b.prevSym
			if j > 0 {
				before = bt.syms[st[j-1] : st[j-1]+ln[j-1]]
			}
			lcp[j] = commonPrefix(before, line)
			cur[j] = 0
		}
		prev = append(prev[:0], b.prevNode...)
		b.prevNode = b.prevNode[:0]
		for d := 0; d < deepest; d++ {
			for j := 0; j < k; j++ {
				switch {
				case d >= ln[j]:
				case d >= lcp[j]:
					cur[j] = b.child(cur[j], bt.syms[st[j]+d])
				case j == 0:
					cur[0] = prev[d]
				default:
					cur[j] = cur[j-1]
				}
			}
			if d < ln[k-1] {
				b.prevNode = append(b.prevNode, cur[k-1])
			}
		}
		b.prevSym = append(b.prevSym[:0], bt.syms[st[k-1]:st[k-1]+ln[k-1]]...)
		for j := 0; j < k; j++ {
			*b.self.at(cur[j]) += bt.counts[g+j]
		}
	}
}

func commonPrefix(a, b []uint32) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// token interns one token of folded input at depth d.
func (b *builder) token(tok []byte, d int, caller uint32) uint32 {
	idx := b.tokIdx
	if d == 0 {
		idx = b.topIdx
	} else if s := b.succ[caller]; s != noSym && b.tokOf[s] == string(tok) {
		return s
	}
	id, ok := idx[string(tok)]
	if !ok {
		id = b.newToken(tok, d)
	}
	if d > 0 {
		b.succ[caller] = id
	}
	return id
}

// newToken interns a token not seen before at its level.
func (b *builder) newToken(tok []byte, d int) uint32 {
	idx := b.tokIdx
	if d == 0 {
		idx = b.topIdx
	}
	t := string(tok)
	s := symInfo{t, KindUser}
	if n, ok := strings.CutSuffix(t, "_[k]"); ok {
		s = symInfo{n, KindKernel}
	} else if n, ok := strings.CutSuffix(t, "_[j]"); ok {
		s = symInfo{n, KindJIT}
	}
	if d == 0 && s.kind == KindUser {
		s.kind = KindOther // the first frame is the process name
	}
	id := b.intern(s)
	idx[t] = id
	if d > 0 {
		b.tokOf[id] = t
	}
	return id
}

// foldedLine splits one line of folded input, "frame;frame;... COUNT",
// into frame numbers appended to syms, and its count.
func (b *builder) foldedLine(line []byte, syms []uint32) ([]uint32, float64, error) {
	i := len(line) - 1
	for i >= 0 && line[i] != ' ' && line[i] != '\t' {
		i--
	}
	if i < 0 {
		return syms, 0, errors.New("no count")
	}
	v, err := parseCount(line[i+1:])
	if err != nil {
		return syms, 0, err
	}
	stack := bytes.TrimRight(line[:i], " \t")
	if n := len(stack); n > 0 && stack[n-1] == ';' && n < i {
		// A last frame named by blanks only (perf script's "pc  (object)"
		// for a function without a name, which stackcollapse-perf.pl and
		// inferno fold as " "): keep it, less the separator before the count.
		stack = line[:i]
	}
	caller := noSym
	for d := 0; ; d++ {
		j := bytes.IndexByte(stack, ';')
		if j < 0 {
			return append(syms, b.token(stack, d, caller)), v, nil
		}
		caller = b.token(stack[:j], d, caller)
		syms = append(syms, caller)
		stack = stack[j+1:]
	}
}

// parseCount reads a count as FlameGraph does: digits, optionally a
// fraction (2, 2.5, 2.); no sign, exponent, infinity or NaN.
func parseCount(s []byte) (float64, error) {
	dot := -1
	for i, c := range s {
		switch {
		case c >= '0' && c <= '9':
		case c == '.' && dot < 0 && i > 0:
			dot = i
		default:
			return 0, fmt.Errorf("bad count %q", s)
		}
	}
	if len(s) == 0 {
		return 0, errors.New("no count")
	}
	if dot < 0 && len(s) <= 15 {
		// Fast path: every integer below 10^15 is exact in a float64.
		var v uint64
		for _, c := range s {
			v = v*10 + uint64(c-'0')
		}
		return float64(v), nil
	}
	v, err := strconv.ParseFloat(string(s), 64)
	if err != nil {
		return 0, fmt.Errorf("bad count %q", s)
	}
	return v, nil
}

// finish sorts each frame's callees by name (as FlameGraph does: the x
// axis is not time), sums each frame's weight from its callees, and drops
// the builder's tables.
func (b *builder) finish() *Node {
	n := b.self.n
	t := &tree{syms: b.syms, sym: make([]uint32, n), self: b.self}
	for i := range t.sym {
		t.sym[i] = *b.sym.at(uint32(i))
	}
	rank := b.ranks()
	parent := b.parent
	big := len(b.slots) >= bigTable || n >= bigTable
	*b = builder{}
	if big {
		// The table and the first callees were the largest things here:
		// give their memory back before the arrays below are made (one
		// piece each, which the chunks freed could not hold), so that
		// these take its place rather than add to it.
		debug.FreeOSMemory()
	}
	// A callee's number is above its caller's: one pass from the leaves
	// up sums weights and sizes, and counting callees then placing them
	// (from the last, so each frame's range ends where it began) lists
	// them in one array.
	t.value = make([]float64, n)
	for i := range t.value {
		t.value[i] = *t.self.at(uint32(i))
	}
	t.size = make([]uint32, n)
	t.off = make([]uint32, n+1)
	for id := n - 1; id >= 0; id-- {
		t.size[id]++
		if id > 0 {
			p := *parent.at(uint32(id))
			t.value[p] += t.value[id]
			t.size[p] += t.size[id]
			t.off[p+1]++
		}
	}
	for i := 1; i <= n; i++ {
		t.off[i] += t.off[i-1]
	}
	t.kids = make([]uint32, max(n-1, 0))
	for id := n - 1; id > 0; id-- {
		p := *parent.at(uint32(id))
		t.off[p+1]--
		t.kids[t.off[p+1]] = uint32(id)
	}
	// Now off[i+1] is where i's callees start, which is where i-1's end.
	copy(t.off, t.off[1:])
	t.off[n] = uint32(len(t.kids))
	for i := 0; i < n; i++ {
		if k := t.children(uint32(i)); len(k) > 1 {
			slices.SortFunc(k, func(x, y uint32) int { return int(rank[t.sym[x]]) - int(rank[t.sym[y]]) })
		}
	}
	return t.node(0)
}

// ranks numbers the frames' names in sibling order: by name, then kind.
func (b *builder) ranks() []uint32 {
	order := make([]uint32, len(b.syms))
	for i := range order {
		order[i] = uint32(i)
	}
	slices.SortFunc(order, func(x, y uint32) int {
		if c := strings.Compare(b.syms[x].name, b.syms[y].name); c != 0 {
			return c
		}
		return int(b.syms[x].kind) - int(b.syms[y].kind)
	})
	rank := make([]uint32, len(order))
	for r, s := range order {
		rank[s] = uint32(r)
	}
	return rank
}

// FromProfile merges the profile's stacks under a root, one level per
// process name, counting samples.
func FromProfile(p *model.Profile) *Node {
	counts := map[[2]int32]uint64{}
	for _, g := range p.SampleGroups() {
		switch p.Meta.Unit {
		case "ns":
			// Blocked time: weigh by microseconds, not by sample count.
			counts[[2]int32{g.Thread, g.Stack}] += g.Period / 1000
		case "bytes":
			// Outstanding memory (memleak): weigh by bytes, not by stack.
			counts[[2]int32{g.Thread, g.Stack}] += g.Period
		default:
			counts[[2]int32{g.Thread, g.Stack}] += g.Count
		}
	}
	keys := make([][2]int32, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})
	b := newBuilder()
	// A frame's number by location and a process's by thread, so each
	// name is hashed once.
	locSym := make([]uint32, len(p.Locs))
	for i := range locSym {
		locSym[i] = math.MaxUint32
	}
	threadSym := map[int32]uint32{}
	var syms []uint32
	for _, k := range keys {
		ts, ok := threadSym[k[0]]
		if !ok {
			ts = b.intern(symInfo{p.Threads[k[0]].Comm, KindOther})
			threadSym[k[0]] = ts
		}
		syms = append(syms[:0], ts)
		stack := p.Stacks[k[1]]
		for i := len(stack) - 1; i >= 0; i-- {
			loc := stack[i]
			if locSym[loc] == math.MaxUint32 {
				locSym[loc] = b.intern(symInfo{p.FrameName(loc), KindOf(p, loc)})
			}
			syms = append(syms, locSym[loc])
		}
		b.add(syms, float64(counts[k]))
	}
	return b.finish()
}

// KindOf is how a location is coloured: by its object, and unknown
// memory without a symbol as "other".
func KindOf(p *model.Profile, loc int32) Kind {
	switch p.Kind(loc) {
	case model.DSOKernel, model.DSOModule:
		return KindKernel
	case model.DSOJIT:
		return KindJIT
	case model.DSOUnknown:
		if p.Locs[loc].Func < 0 {
			return KindOther
		}
	}
	return KindUser
}

func suffix(k Kind) string {
	switch k {
	case KindKernel:
		return "_[k]"
	case KindJIT:
		return "_[j]"
	}
	return ""
}

// formatCount writes a weight as folded stacks carry it: integers without a
// fraction, fractions as short as they read back exactly.
func formatCount(dst []byte, v float64) []byte {
	return strconv.AppendFloat(dst, v, 'f', -1, 64)
}

// WriteFolded writes one line per distinct stack: "a;b;c COUNT". It is
// exact: every stack of the tree, however small.
func WriteFolded(w io.Writer, root *Node) error {
	t := root.t
	bw := bufio.NewWriterSize(w, 1<<16)
	var line []byte
	var walk func(i uint32, depth int) error
	walk = func(i uint32, depth int) error {
		mark := len(line)
		if depth > 0 {
			line = append(line, ';')
		}
		start := len(line)
		s := t.syms[t.sym[i]]
		line = append(line, s.name...)
		// ";" separates frames: a name holding one is written with ":";
		// a line is a stack: a newline in a name (read from a process's
		// memory) is written as a space.
		for i := start; i < len(line); i++ {
			switch line[i] {
			case ';':
				line[i] = ':'
			case '\n', '\r':
				line[i] = ' '
			}
		}
		line = append(line, suffix(s.kind)...)
		if self := *t.self.at(i); self != 0 {
			end := len(line)
			line = append(line, ' ')
			line = formatCount(line, self)
			line = append(line, '\n')
			if _, err := bw.Write(line); err != nil {
				return err
			}
			line = line[:end]
		}
		for _, c := range t.children(i) {
			if err := walk(c, depth+1); err != nil {
				return err
			}
		}
		line = line[:mark]
		return nil
	}
	for _, c := range t.children(root.i) {
		if err := walk(c, 0); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// batch carries parsed lines from ParseFolded's reader to its tree: the
// frame numbers of the lines one after another, where each line ends, and
// its count.
type batch struct {
	syms   []uint32
	ends   []int
	counts []float64
}

// batchFrames is about how many frames a batch carries.
const batchFrames = 1 << 15

// ParseFolded reads collapsed stacks (from sonde, FlameGraph's stackcollapse
// scripts or others) into a tree, line by line. Counts may have a fraction
// ("a;b 2.5"), as FlameGraph allows. A last line without a newline may have
// been cut anywhere, even inside its count, so it is skipped and warn (if
// not nil) is told in one line; any other malformed line is an error.
//
// Two goroutines share the work: one reads, splits and interns names, the
// other grows the tree from frame numbers; batches of lines pass between
// them, three in all, reused.
func ParseFolded(r io.Reader, warn func(string)) (*Node, error) {
	b := newBuilder()
	full := make(chan *batch, 2)
	free := make(chan *batch, 3)
	for range 3 {
		free <- &batch{}
	}
	var warning string
	var err error
	go func() {
		defer close(full)
		warning, err = b.readFolded(r, free, full)
	}()
	tooMany := false
	for bt := range full {
		// Frame numbers are 32 bits: stop (reading on, so the reader ends)
		// before a batch could make more frames than they count.
		if tooMany = tooMany || uint64(b.self.n)+uint64(len(bt.syms)) >= math.MaxUint32; !tooMany {
			b.addBatch(bt)
		}
		free <- bt
	}
	if err != nil {
		return nil, err
	}
	if tooMany {
		return nil, fmt.Errorf("more than %d distinct frames: too many for one tree", uint32(math.MaxUint32-1))
	}
	if warning != "" && warn != nil {
		warn(warning)
	}
	return b.finish(), nil
}

// readFolded is ParseFolded's reader: it fills batches from free and sends
// them on full. It touches only the builder's names, never its tree.
func (b *builder) readFolded(r io.Reader, free <-chan *batch, full chan<- *batch) (warning string, err error) {
	br := bufio.NewReaderSize(r, 1<<18)
	var long []byte // a line longer than br's buffer
	ln := 0
	bt := <-free
	bt.syms, bt.ends, bt.counts = bt.syms[:0], bt.ends[:0], bt.counts[:0]
	for {
		chunk, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long, chunk...)
			continue
		}
		line := chunk
		if len(long) > 0 {
			long = append(long, chunk...)
			line = long
		}
		if err == io.EOF {
			if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
				warning = fmt.Sprintf("skipped folded line %d (%d bytes): it has no newline, so the input may be cut", ln+1, len(line))
			}
			break
		}
		if err != nil {
			return "", fmt.Errorf("reading folded stacks: %w", err)
		}
		ln++
		long = long[:0]
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		var v float64
		if bt.syms, v, err = b.foldedLine(line, bt.syms); err != nil {
			return "", fmt.Errorf("folded line %d: %w", ln, err)
		}
		bt.ends = append(bt.ends, len(bt.syms))
		bt.counts = append(bt.counts, v)
		if len(bt.syms) >= batchFrames {
			full <- bt
			bt = <-free
			bt.syms, bt.ends, bt.counts = bt.syms[:0], bt.ends[:0], bt.counts[:0]
		}
	}
	if len(bt.ends) > 0 {
		full <- bt
	}
	return warning, nil
}
