package flamegraph

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"strings"
)

//go:embed flame.js
var script string

// Options for the interactive graph.
type Options struct {
	Title    string
	Subtitle string
	Inverted bool              // icicle: roots at the top
	Diff     map[*Node]float64 // differential graph: change in percent per frame
	Unit     string            // "samples"
	Width    int
}

// flat is the tree in pre-order: parallel arrays keep the embedded JSON small.
type flat struct {
	Names []string  `json:"n"`
	Kinds []uint8   `json:"k"`
	Depth []int     `json:"d"`
	Start []uint64  `json:"s"`
	Value []uint64  `json:"v"`
	Delta []float64 `json:"dl,omitempty"`
}

func flatten(root *Node, diff map[*Node]float64) *flat {
	f := &flat{}
	var walk func(n *Node, depth int, start uint64)
	walk = func(n *Node, depth int, start uint64) {
		f.Names = append(f.Names, n.Name)
		f.Kinds = append(f.Kinds, uint8(n.Kind))
		f.Depth = append(f.Depth, depth)
		f.Start = append(f.Start, start)
		f.Value = append(f.Value, n.Value)
		if diff != nil {
			f.Delta = append(f.Delta, float64(int(diff[n]*100))/100)
		}
		off := start
		for _, c := range n.Children {
			walk(c, depth+1, off)
			off += c.Value
		}
	}
	walk(root, 0, 0)
	return f
}

func svgDoc(root *Node, o Options) (string, error) {
	if o.Width == 0 {
		o.Width = 1200
	}
	if o.Unit == "" {
		o.Unit = "samples"
	}
	if o.Title == "" {
		o.Title = "Flame Graph"
	}
	data, err := json.Marshal(flatten(root, o.Diff))
	if err != nil {
		return "", err
	}
	cfg, _ := json.Marshal(map[string]any{"title": o.Title, "inverted": o.Inverted, "unit": o.Unit, "width": o.Width, "diff": o.Diff != nil})
	var b strings.Builder
	fmt.Fprintf(&b, `<svg version="1.1" id="flamegraph" width="%d" height="200" xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" font-family="Verdana, sans-serif" font-size="12">
<style>
#flamegraph .frame rect { stroke: #ffffff; stroke-width: 0.5; rx: 2; }
#flamegraph .frame:hover rect { stroke: #000000; }
#flamegraph .frame text { pointer-events: none; fill: #000; font-size: 11px; }
#flamegraph .dim rect { opacity: 0.55; }
#flamegraph .hdr { font-size: 17px; }
#flamegraph .btn { cursor: pointer; fill: #2060a0; }
</style>
<rect x="0" y="0" width="100%%" height="100%%" fill="#f8f8f8"/>
<text class="hdr" x="%d" y="24" text-anchor="middle">%s</text>
<text id="subtitle" x="%d" y="42" text-anchor="middle" fill="#555">%s</text>
<text id="reset" class="btn" x="10" y="24" visibility="hidden">Reset zoom</text>
<text id="search" class="btn" x="%d" y="24" text-anchor="end">Search</text>
<text id="matched" x="%d" y="-100" text-anchor="end"></text>
<text id="details" x="10" y="-100"> </text>
<text id="legend" x="%d" y="42" text-anchor="end" font-size="11">%s</text>
<g id="frames"></g>
<script type="text/ecmascript"><![CDATA[
var FG_DATA = %s;
var FG_CFG = %s;
%s
]]></script>
</svg>
`, o.Width, o.Width/2, html.EscapeString(o.Title), o.Width/2, html.EscapeString(o.Subtitle), o.Width-10, o.Width-10, o.Width-10, legend(o), data, cfg, script)
	return b.String(), nil
}

// WriteSVG writes a standalone interactive SVG.
func WriteSVG(w io.Writer, root *Node, o Options) error {
	doc, err := svgDoc(root, o)
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, `<?xml version="1.0" standalone="no"?>`+"\n"+doc)
	return err
}

// WriteHTML writes a standalone HTML page holding the SVG.
func WriteHTML(w io.Writer, root *Node, o Options) error {
	doc, err := svgDoc(root, o)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>%s</title></head>\n<body style=\"margin:0\">\n%s</body></html>\n", html.EscapeString(o.Title), doc)
	return err
}

func legend(o Options) string {
	if o.Diff != nil {
		return `<tspan fill="#d83a3a">&#9632; grew</tspan> <tspan fill="#3a6ad8">&#9632; shrank</tspan> <tspan fill="#bbb">&#9632; same</tspan>`
	}
	return `<tspan fill="#d84a1b">&#9632; user</tspan> <tspan fill="#3b7dd8">&#9632; kernel</tspan> <tspan fill="#3aa655">&#9632; JIT</tspan> <tspan fill="#999">&#9632; other</tspan>`
}

// DiffTree returns, for each frame of cur, how its share of all samples
// changed against base (percentage points), matching frames by their path
// from the root.
func DiffTree(base, cur *Node) map[*Node]float64 {
	out := map[*Node]float64{}
	var walk func(b, c *Node)
	walk = func(b, c *Node) {
		var bp float64
		if b != nil && base.Value > 0 {
			bp = 100 * float64(b.Value) / float64(base.Value)
		}
		cp := 0.0
		if cur.Value > 0 {
			cp = 100 * float64(c.Value) / float64(cur.Value)
		}
		out[c] = cp - bp
		for _, cc := range c.Children {
			var bc *Node
			if b != nil {
				for _, x := range b.Children {
					if x.Name == cc.Name && x.Kind == cc.Kind {
						bc = x
					}
				}
			}
			walk(bc, cc)
		}
	}
	walk(base, cur)
	return out
}
