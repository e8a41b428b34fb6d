// Package flamegraph builds the stack tree of a profile and writes it as
// collapsed ("folded") stacks or as an interactive flame graph (SVG or HTML,
// self-contained: zoom on click, regex search with match percentage,
// tooltips, colours by frame kind).
package flamegraph

import (
	"bufio"
	"fmt"
	"io"
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

// Node is one frame in the merged stack tree.
type Node struct {
	Name     string
	Kind     Kind
	Value    uint64 // samples in this frame and below
	Children []*Node
	index    map[string]*Node
}

func (n *Node) child(name string, kind Kind) *Node {
	key := name + "\x00" + string(rune('0'+kind))
	if n.index == nil {
		n.index = map[string]*Node{}
	}
	c := n.index[key]
	if c == nil {
		c = &Node{Name: name, Kind: kind}
		n.index[key] = c
		n.Children = append(n.Children, c)
	}
	return c
}

// Add adds one root→leaf stack with a value.
func (n *Node) Add(frames []Frame, v uint64) {
	n.Value += v
	cur := n
	for _, f := range frames {
		cur = cur.child(f.Name, f.Kind)
		cur.Value += v
	}
}

// Frame is a name and kind.
type Frame struct {
	Name string
	Kind Kind
}

// Sort orders children by name (as FlameGraph does: the x axis is not time).
func (n *Node) Sort() {
	sort.Slice(n.Children, func(i, j int) bool {
		if n.Children[i].Name != n.Children[j].Name {
			return n.Children[i].Name < n.Children[j].Name
		}
		return n.Children[i].Kind < n.Children[j].Kind
	})
	for _, c := range n.Children {
		c.Sort()
	}
}

// FromProfile merges the profile's stacks under a root, one level per
// process name, counting samples.
func FromProfile(p *model.Profile) *Node {
	root := &Node{Name: "all", Kind: KindOther}
	counts := map[[2]int32]uint64{}
	for _, g := range p.SampleGroups() {
		if p.Meta.Unit == "ns" {
			// Blocked time: weigh by microseconds, not by sample count.
			counts[[2]int32{g.Thread, g.Stack}] += g.Period / 1000
		} else {
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
	var frames []Frame
	for _, k := range keys {
		stack := p.Stacks[k[1]]
		frames = frames[:0]
		frames = append(frames, Frame{Name: p.Threads[k[0]].Comm, Kind: KindOther})
		for i := len(stack) - 1; i >= 0; i-- {
			loc := stack[i]
			kind := KindUser
			switch p.Kind(loc) {
			case model.DSOKernel, model.DSOModule:
				kind = KindKernel
			case model.DSOJIT:
				kind = KindJIT
			case model.DSOUnknown:
				if p.Locs[loc].Func < 0 {
					kind = KindOther
				}
			}
			frames = append(frames, Frame{Name: p.FrameName(loc), Kind: kind})
		}
		root.Add(frames, counts[k])
	}
	root.Sort()
	return root
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

// WriteFolded writes one line per distinct stack: "a;b;c COUNT".
func WriteFolded(w io.Writer, root *Node) error {
	bw := bufio.NewWriter(w)
	var path []string
	var walk func(n *Node)
	walk = func(n *Node) {
		path = append(path, strings.ReplaceAll(n.Name, ";", ":")+suffix(n.Kind))
		var below uint64
		for _, c := range n.Children {
			below += c.Value
		}
		if self := n.Value - below; self > 0 {
			bw.WriteString(strings.Join(path, ";"))
			bw.WriteByte(' ')
			bw.WriteString(strconv.FormatUint(self, 10))
			bw.WriteByte('\n')
		}
		for _, c := range n.Children {
			walk(c)
		}
		path = path[:len(path)-1]
	}
	for _, c := range root.Children {
		walk(c)
	}
	return bw.Flush()
}

// ParseFolded reads collapsed stacks (from sonde, FlameGraph's stackcollapse
// scripts or others) into a tree.
func ParseFolded(r io.Reader) (*Node, error) {
	root := &Node{Name: "all", Kind: KindOther}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	ln := 0
	var frames []Frame
	for sc.Scan() {
		ln++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			return nil, fmt.Errorf("folded line %d: no count", ln)
		}
		v, err := strconv.ParseUint(line[i+1:], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("folded line %d: bad count %q", ln, line[i+1:])
		}
		frames = frames[:0]
		for j, name := range strings.Split(line[:i], ";") {
			k := KindUser
			if j == 0 {
				k = KindOther
			}
			if n, ok := strings.CutSuffix(name, "_[k]"); ok {
				name, k = n, KindKernel
			} else if n, ok := strings.CutSuffix(name, "_[j]"); ok {
				name, k = n, KindJIT
			}
			frames = append(frames, Frame{Name: name, Kind: k})
		}
		root.Add(frames, v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading folded stacks: %w", err)
	}
	root.Sort()
	return root, nil
}
