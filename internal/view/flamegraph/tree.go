// Package flamegraph builds the stack tree of a profile and writes it as
// collapsed ("folded") stacks or as an interactive flame graph (SVG or HTML,
// self-contained: zoom on click, regex search with match percentage,
// tooltips, colours by frame kind).
//
// Folded input is streamed: each line goes into the tree as it is read and
// only the tree is kept (frame names interned, nodes allocated in slabs), so
// a million distinct stacks fit in a few hundred megabytes. The drawing
// leaves out frames narrower than a minimum width (see MinWidth); the tree
// and the folded output stay exact.
package flamegraph

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
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

// Node is one frame in the merged stack tree. Children are kept as a linked
// list (first child, next sibling) rather than a slice: a million-stack tree
// has millions of nodes, and a slice header per node plus its regrowth
// garbage would double the memory.
type Node struct {
	Name  string
	Value float64 // weight of this frame and all below it (samples, or the input's unit)
	self  float64 // weight of stacks that end in this frame
	first *Node   // first child
	next  *Node   // next sibling
	nkids int32   // children
	size  int32   // frames in this subtree, counted when the tree is complete
	id    uint32  // number in the tree, for the builder's child lookup
	Kind  Kind
}

// Self is the weight of the stacks that end in this frame.
func (n *Node) Self() float64 { return n.self }

// Children returns the node's callees, sorted by name once the tree is
// complete.
func (n *Node) Children() []*Node {
	out := make([]*Node, 0, n.nkids)
	for c := n.first; c != nil; c = c.next {
		out = append(out, c)
	}
	return out
}

// frame is a name and kind.
type frame struct {
	Name string
	Kind Kind
}

// wideAt is the number of children from which a node's children are found
// through the builder's map instead of a walk along the sibling list.
const wideAt = 8

// slabSize nodes are allocated at once: one allocation instead of millions.
const slabSize = 1 << 14

// childKey finds a child of a wide node: the parent's id and the child's
// symbol's. Within one tree a symbol stands for one (name, kind) at any
// depth below the first, and for one at the first, so the pair names a
// child; one integer hashes and compares faster than the name, and keeps
// the map's slots small (the map is the builder's main cost in cache misses).
func childKey(parent *Node, s *symbol) uint64 { return uint64(parent.id)<<32 | uint64(s.id) }

// symbol is one distinct frame, interned: every node of that frame shares
// the name's bytes, and the tree's lookups compare symbols.
type symbol struct {
	tok  string // as written, with any _[k]/_[j] suffix
	name string
	kind Kind
	id   uint32
}

// builder grows a tree one stack at a time.
type builder struct {
	root  *Node
	slab  []Node
	wide  map[uint64]*Node
	nodes uint32 // ids given out

	syms map[string]*symbol // folded tokens
	fsym map[frame]*symbol  // FromProfile's frames
	// The previous stack's path: consecutive stacks usually share a prefix
	// (folded files are sorted), found again without hashing.
	prevTok  []string
	prevNode []*Node
}

func newBuilder() *builder {
	return &builder{
		root: &Node{Name: "all", Kind: KindOther},
		wide: map[uint64]*Node{},
		syms: map[string]*symbol{},
		fsym: map[frame]*symbol{},
	}
}

func (b *builder) newNode(name string, kind Kind) *Node {
	if len(b.slab) == 0 {
		b.slab = make([]Node, slabSize)
	}
	n := &b.slab[0]
	b.slab = b.slab[1:]
	b.nodes++
	n.Name, n.Kind, n.id = name, kind, b.nodes
	return n
}

// child finds or adds parent's child s, of kind (s.kind, but for the first
// level).
func (b *builder) child(parent *Node, s *symbol, kind Kind) *Node {
	if parent.nkids >= wideAt {
		if c := b.wide[childKey(parent, s)]; c != nil {
			return c
		}
	} else {
		for c := parent.first; c != nil; c = c.next {
			if c.Name == s.name && c.Kind == kind {
				return c
			}
		}
	}
	c := b.newNode(s.name, kind)
	c.next = parent.first
	parent.first = c
	parent.nkids++
	switch {
	case parent.nkids == wideAt:
		// The symbols of the children so far: interned names share their
		// bytes, so comparing them is cheap.
		for x := parent.first; x != nil; x = x.next {
			b.wide[childKey(parent, b.symOf(x, s))] = x
		}
	case parent.nkids > wideAt:
		b.wide[childKey(parent, s)] = c
	}
	return c
}

// symOf finds the symbol a node was made from: the one for its token in
// folded input (s is a symbol of the same level), or for its frame.
func (b *builder) symOf(n *Node, s *symbol) *symbol {
	if n.Name == s.name && n.Kind == s.kind {
		return s
	}
	if len(b.fsym) > 0 {
		return b.fsym[frame{n.Name, n.Kind}]
	}
	tok := n.Name + suffix(n.Kind)
	return b.syms[tok]
}

// addPath adds v along the path in prevNode.
func (b *builder) addPath(v float64) {
	b.root.Value += v
	for _, n := range b.prevNode {
		n.Value += v
	}
	if len(b.prevNode) > 0 {
		b.prevNode[len(b.prevNode)-1].self += v
	} else {
		b.root.self += v
	}
}

// addFrames adds one root→leaf stack.
func (b *builder) addFrames(frames []frame, v float64) {
	n := b.root
	same := true
	for d, f := range frames {
		if same && d < len(b.prevNode) && b.prevNode[d].Name == f.Name && b.prevNode[d].Kind == f.Kind {
			n = b.prevNode[d]
			continue
		}
		same = false
		sym := b.fsym[f]
		if sym == nil {
			sym = &symbol{name: f.Name, kind: f.Kind, id: uint32(len(b.fsym))}
			b.fsym[f] = sym
		}
		n = b.child(n, sym, f.Kind)
		b.prevNode = append(b.prevNode[:d], n)
	}
	b.prevNode = b.prevNode[:len(frames)]
	b.addPath(v)
}

// symbol interns one token of folded input.
func (b *builder) symbol(tok []byte) *symbol {
	if s := b.syms[string(tok)]; s != nil {
		return s
	}
	t := string(tok)
	s := &symbol{tok: t, name: t, kind: KindUser, id: uint32(len(b.syms))}
	if n, ok := strings.CutSuffix(t, "_[k]"); ok {
		s.name, s.kind = n, KindKernel
	} else if n, ok := strings.CutSuffix(t, "_[j]"); ok {
		s.name, s.kind = n, KindJIT
	}
	b.syms[t] = s
	return s
}

// addFolded adds one line of folded input: "frame;frame;... COUNT".
func (b *builder) addFolded(line []byte) error {
	i := bytes.LastIndexAny(line, " \t")
	if i < 0 {
		return errors.New("no count")
	}
	v, err := parseCount(line[i+1:])
	if err != nil {
		return err
	}
	stack := bytes.TrimRight(line[:i], " \t")
	if n := len(stack); n > 0 && stack[n-1] == ';' && n < i {
		// A last frame named by blanks only (perf script's "pc  (object)"
		// for a function without a name, which stackcollapse-perf.pl and
		// inferno fold as " "): keep it, less the separator before the count.
		stack = line[:i]
	}
	n := b.root
	same := true
	for d := 0; ; d++ {
		j := bytes.IndexByte(stack, ';')
		tok := stack
		if j >= 0 {
			tok = stack[:j]
		}
		if same && d < len(b.prevTok) && b.prevTok[d] == string(tok) {
			n = b.prevNode[d]
		} else {
			same = false
			s := b.symbol(tok)
			kind := s.kind
			if d == 0 && kind == KindUser {
				kind = KindOther // the first frame is the process name
			}
			n = b.child(n, s, kind)
			b.prevTok = append(b.prevTok[:d], s.tok)
			b.prevNode = append(b.prevNode[:d], n)
		}
		if j < 0 {
			b.prevTok = b.prevTok[:d+1]
			b.prevNode = b.prevNode[:d+1]
			break
		}
		stack = stack[j+1:]
	}
	b.addPath(v)
	return nil
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

// finish sorts the tree, counts the frames of each subtree and drops the
// lookup structures.
func (b *builder) finish() *Node {
	var buf []*Node
	var walk func(n *Node) int32
	walk = func(n *Node) int32 {
		if n.nkids > 1 {
			buf = buf[:0]
			for c := n.first; c != nil; c = c.next {
				buf = append(buf, c)
			}
			// By name, as FlameGraph does: the x axis is not time.
			slices.SortFunc(buf, func(x, y *Node) int {
				if c := strings.Compare(x.Name, y.Name); c != 0 {
					return c
				}
				return int(x.Kind) - int(y.Kind)
			})
			for i := range buf {
				if i+1 < len(buf) {
					buf[i].next = buf[i+1]
				} else {
					buf[i].next = nil
				}
			}
			n.first = buf[0]
		}
		n.size = 1
		for c := n.first; c != nil; c = c.next {
			n.size += walk(c)
		}
		return n.size
	}
	walk(b.root)
	root := b.root
	*b = builder{}
	return root
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
	var frames []frame
	for _, k := range keys {
		stack := p.Stacks[k[1]]
		frames = frames[:0]
		frames = append(frames, frame{Name: p.Threads[k[0]].Comm, Kind: KindOther})
		for i := len(stack) - 1; i >= 0; i-- {
			loc := stack[i]
			frames = append(frames, frame{Name: p.FrameName(loc), Kind: KindOf(p, loc)})
		}
		b.addFrames(frames, float64(counts[k]))
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
	bw := bufio.NewWriterSize(w, 1<<16)
	var line []byte
	var walk func(n *Node, depth int) error
	walk = func(n *Node, depth int) error {
		mark := len(line)
		if depth > 0 {
			line = append(line, ';')
		}
		start := len(line)
		line = append(line, n.Name...)
		// ";" separates frames: a name holding one is written with ":".
		for i := start; i < len(line); i++ {
			if line[i] == ';' {
				line[i] = ':'
			}
		}
		line = append(line, suffix(n.Kind)...)
		if n.self != 0 {
			end := len(line)
			line = append(line, ' ')
			line = formatCount(line, n.self)
			line = append(line, '\n')
			if _, err := bw.Write(line); err != nil {
				return err
			}
			line = line[:end]
		}
		for c := n.first; c != nil; c = c.next {
			if err := walk(c, depth+1); err != nil {
				return err
			}
		}
		line = line[:mark]
		return nil
	}
	for c := root.first; c != nil; c = c.next {
		if err := walk(c, 0); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// ParseFolded reads collapsed stacks (from sonde, FlameGraph's stackcollapse
// scripts or others) into a tree, line by line. Counts may have a fraction
// ("a;b 2.5"), as FlameGraph allows. A last line without a newline may have
// been cut anywhere, even inside its count, so it is skipped and warn (if
// not nil) is told in one line; any other malformed line is an error.
func ParseFolded(r io.Reader, warn func(string)) (*Node, error) {
	b := newBuilder()
	br := bufio.NewReaderSize(r, 1<<16)
	var long []byte // a line longer than br's buffer
	ln := 0
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
			if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' && warn != nil {
				warn(fmt.Sprintf("skipped folded line %d (%d bytes): it has no newline, so the input may be cut", ln+1, len(line)))
			}
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading folded stacks: %w", err)
		}
		ln++
		long = long[:0]
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		if err := b.addFolded(line); err != nil {
			return nil, fmt.Errorf("folded line %d: %w", ln, err)
		}
	}
	return b.finish(), nil
}
