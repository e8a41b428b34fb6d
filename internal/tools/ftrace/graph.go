package ftrace

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// Node is one path of an aggregated call graph: every call of Name
// reached from the root through the same chain of callers.
type Node struct {
	Name     string
	Count    uint64
	Total    uint64 // ns, summed over the calls
	Children []*Node
	index    map[string]*Node
}

func (n *Node) child(name string) *Node {
	if c := n.index[name]; c != nil {
		return c
	}
	if n.index == nil {
		n.index = map[string]*Node{}
	}
	c := &Node{Name: name}
	n.index[name] = c
	n.Children = append(n.Children, c)
	return c
}

// Graph aggregates the calls under fn (every outermost call of it, on any
// thread) by call path; with fn empty, every thread's root calls under a
// node named root. Nil when fn is never called.
func Graph(t *Trace, cs []Call, fn, root string) *Node {
	parent, _ := nest(cs)
	nodes := make([]*Node, len(cs))
	top := &Node{Name: root}
	if fn != "" {
		top.Name = fn
	}
	found := false
	for i := range cs {
		c := &cs[i]
		name := t.FuncName(c.Fn)
		var n *Node
		switch p := parent[i]; {
		case p >= 0 && nodes[p] != nil:
			n = nodes[p].child(name)
		case fn == "":
			n = top.child(name)
		case name == fn:
			n, found = top, true
		default:
			continue
		}
		n.Count++
		n.Total += c.Dur
		nodes[i] = n
	}
	if fn == "" {
		for _, c := range top.Children {
			top.Total += c.Total
		}
		top.Count = 1
	} else if !found {
		return nil
	}
	return top
}

// WriteGraph draws the graph as an indented tree: total time, then
// (calls) and the function.
func WriteGraph(w io.Writer, n *Node) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# Function call graph for '%s'\n# TOTAL TIME   FUNCTION\n", n.Name)
	var draw func(n *Node, prefix, branch string)
	draw = func(n *Node, prefix, branch string) {
		fmt.Fprintf(bw, "%s : %s%s(%d) %s\n", FormatDuration(n.Total), prefix, branch, n.Count, n.Name)
		for i, c := range n.Children {
			next := prefix
			if branch != "" {
				next += "| "
				if strings.HasPrefix(branch, "`") {
					next = prefix + "  "
				}
			}
			b := "+-"
			if i == len(n.Children)-1 {
				b = "`-"
			}
			draw(c, next, b)
		}
	}
	draw(n, "", "")
	return bw.Flush()
}
