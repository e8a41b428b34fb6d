package flamegraph

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
)

//go:embed flame.js
var script string

// Options for the interactive graph.
type Options struct {
	Title    string
	Subtitle string
	Inverted bool   // icicle: roots at the top
	Diff     *Diff  // differential graph: change in percentage points per frame
	Unit     string // "samples"
	Width    int
	MinWidth MinWidth // frames narrower than this are not drawn
}

// pad is the margin left and right of the frames, in pixels (as in flame.js).
const pad = 10

// MinWidth is FlameGraph's --minwidth: frames narrower than this are left
// out of the drawing, with everything above them. Their weight stays in
// their caller, so the total and every percentage remain exact; the graph
// says how many frames it left out. In pixels of the full graph ("0.1"), or
// a percentage of the total ("0.05%"). The zero value is FlameGraph's
// default, 0.1 px; "0" draws every frame.
type MinWidth struct {
	value   float64
	percent bool
	set     bool
}

// ParseMinWidth reads "PIXELS" or "PERCENT%".
func ParseMinWidth(s string) (MinWidth, error) {
	var m MinWidth
	err := m.Set(s)
	return m, err
}

// Set implements flag.Value.
func (m *MinWidth) Set(s string) error {
	num, pct := strings.CutSuffix(strings.TrimSpace(s), "%")
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || (pct && v > 100) {
		return fmt.Errorf("minimum width %q: want pixels (0.1) or a percentage of the total (0.05%%)", s)
	}
	*m = MinWidth{value: v, percent: pct, set: true}
	return nil
}

// String implements flag.Value.
func (m MinWidth) String() string {
	if !m.set {
		return "0.1"
	}
	s := strconv.FormatFloat(m.value, 'g', -1, 64)
	if m.percent {
		s += "%"
	}
	return s
}

// Type names the value for pflag.
func (m *MinWidth) Type() string { return "minwidth" }

// Fraction is the share of the total below which a frame is not drawn on a
// graph width pixels wide.
func (m MinWidth) Fraction(width int) float64 {
	switch {
	case !m.set:
		return 0.1 / float64(width-2*pad)
	case m.percent:
		return m.value / 100
	}
	return m.value / float64(width-2*pad)
}

// flat is the drawn part of the tree in pre-order, as parallel arrays that
// keep the embedded JSON small; each distinct name is written once.
type flat struct {
	names   []string
	nameIdx map[string]int32
	n       []int32
	k       []uint8
	d       []int32
	s, v    []float64
	dl      []float64
	// Frames left out for being narrower than the minimum width (counting
	// everything above them) and their weight.
	pruned       int
	prunedWeight float64
}

func flatten(root *Node, diff *Diff, minValue float64) *flat {
	t := root.t
	f := &flat{nameIdx: map[string]int32{}}
	// A name's index in f.names by frame number: the map is asked once per
	// distinct frame, not once per drawn one.
	symName := make([]int32, len(t.syms))
	for i := range symName {
		symName[i] = -1
	}
	var walk func(i uint32, depth int32, start float64)
	walk = func(i uint32, depth int32, start float64) {
		sym := t.sym[i]
		id := symName[sym]
		if id < 0 {
			name := t.syms[sym].name
			var ok bool
			if id, ok = f.nameIdx[name]; !ok {
				id = int32(len(f.names))
				f.names = append(f.names, name)
				f.nameIdx[name] = id
			}
			symName[sym] = id
		}
		f.n = append(f.n, id)
		f.k = append(f.k, uint8(t.syms[sym].kind))
		f.d = append(f.d, depth)
		f.s = append(f.s, start)
		f.v = append(f.v, t.value[i])
		if diff != nil {
			f.dl = append(f.dl, float64(int(diff.pp[i]*100))/100)
		}
		// A left-out child keeps its place: its callers' widths, and the
		// positions of its siblings, are those of the full graph.
		off := start
		for _, c := range t.children(i) {
			if t.value[c] < minValue {
				f.pruned += int(t.size[c])
				f.prunedWeight += t.value[c]
			} else {
				walk(c, depth+1, off)
			}
			off += t.value[c]
		}
	}
	walk(root.i, 0, 0)
	return f
}

// writeJSON writes f as the object flame.js reads as FG_DATA. Names go
// through encoding/json, which escapes <, > and &, so no name can close the
// script's CDATA section.
func (f *flat) writeJSON(w io.Writer) error {
	names, err := json.Marshal(f.names)
	if err != nil {
		return err
	}
	buf := make([]byte, 0, 1<<16)
	flush := func(force bool) error {
		if len(buf) > 1<<15 || force {
			_, err := w.Write(buf)
			buf = buf[:0]
			return err
		}
		return nil
	}
	buf = append(buf, `{"N":`...)
	buf = append(buf, names...)
	array := func(key string, n int, elem func(i int)) error {
		buf = append(buf, `,"`...)
		buf = append(buf, key...)
		buf = append(buf, `":[`...)
		for i := 0; i < n; i++ {
			if i > 0 {
				buf = append(buf, ',')
			}
			elem(i)
			if err := flush(false); err != nil {
				return err
			}
		}
		buf = append(buf, ']')
		return nil
	}
	steps := []struct {
		key  string
		n    int
		elem func(i int)
	}{
		{"n", len(f.n), func(i int) { buf = strconv.AppendInt(buf, int64(f.n[i]), 10) }},
		{"k", len(f.k), func(i int) { buf = strconv.AppendInt(buf, int64(f.k[i]), 10) }},
		{"d", len(f.d), func(i int) { buf = strconv.AppendInt(buf, int64(f.d[i]), 10) }},
		{"s", len(f.s), func(i int) { buf = formatCount(buf, f.s[i]) }},
		{"v", len(f.v), func(i int) { buf = formatCount(buf, f.v[i]) }},
	}
	if f.dl != nil {
		steps = append(steps, struct {
			key  string
			n    int
			elem func(i int)
		}{"dl", len(f.dl), func(i int) { buf = strconv.AppendFloat(buf, f.dl[i], 'f', -1, 64) }})
	}
	for _, s := range steps {
		if err := array(s.key, s.n, s.elem); err != nil {
			return err
		}
	}
	buf = append(buf, '}')
	return flush(true)
}

// prunedNote says what the drawing left out, or "" when it is complete.
func (f *flat) prunedNote(o Options, total float64) string {
	if f.pruned == 0 {
		return ""
	}
	share := 0.0
	if total > 0 {
		share = 100 * f.prunedWeight / total
	}
	frames := "frames"
	if f.pruned == 1 {
		frames = "frame"
	}
	width := o.MinWidth.String()
	if !o.MinWidth.percent {
		width += " px"
	} else {
		width += " of the total"
	}
	return fmt.Sprintf("%s %s narrower than %s not drawn (%.2f%% of all %s, counted in their callers)",
		thousands(f.pruned), frames, width, share, o.Unit)
}

func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func writeSVGDoc(w io.Writer, root *Node, o Options) error {
	if o.Width == 0 {
		o.Width = 1200
	}
	if o.Unit == "" {
		o.Unit = "samples"
	}
	if o.Title == "" {
		o.Title = "Flame Graph"
	}
	f := flatten(root, o.Diff, o.MinWidth.Fraction(o.Width)*root.Value)
	note := f.prunedNote(o, root.Value)
	cfg, err := json.Marshal(map[string]any{"title": o.Title, "inverted": o.Inverted, "unit": o.Unit, "width": o.Width, "diff": o.Diff != nil, "pruned": f.pruned})
	if err != nil {
		return err
	}
	comment := ""
	if note != "" {
		// Also for readers that do not run the script.
		comment = "<!-- " + strings.ReplaceAll(note, "--", "- -") + " -->\n"
	}
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, `<svg version="1.1" id="flamegraph" width="%d" height="200" xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" font-family="Verdana, sans-serif" font-size="12">
%s<style>
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
<text id="pruned" x="10" y="-100" font-size="10" fill="#777">%s</text>
<text id="legend" x="%d" y="42" text-anchor="end" font-size="11">%s</text>
<g id="frames"></g>
<script type="text/ecmascript"><![CDATA[
var FG_DATA = `, o.Width, comment, o.Width/2, html.EscapeString(o.Title), o.Width/2, html.EscapeString(o.Subtitle), o.Width-10, o.Width-10, html.EscapeString(note), o.Width-10, legend(o))
	if ew.err == nil {
		ew.err = f.writeJSON(ew.w)
	}
	fmt.Fprintf(ew, ";\nvar FG_CFG = %s;\n%s\n]]></script>\n</svg>\n", cfg, script)
	return ew.err
}

// errWriter keeps the first write error, so a document is written as a
// sequence of prints checked once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// WriteSVG writes a standalone interactive SVG.
func WriteSVG(w io.Writer, root *Node, o Options) error {
	if _, err := io.WriteString(w, `<?xml version="1.0" standalone="no"?>`+"\n"); err != nil {
		return err
	}
	return writeSVGDoc(w, root, o)
}

// WriteHTML writes a standalone HTML page holding the SVG.
func WriteHTML(w io.Writer, root *Node, o Options) error {
	title := o.Title
	if title == "" {
		title = "Flame Graph"
	}
	if _, err := fmt.Fprintf(w, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>%s</title></head>\n<body style=\"margin:0\">\n", html.EscapeString(title)); err != nil {
		return err
	}
	if err := writeSVGDoc(w, root, o); err != nil {
		return err
	}
	_, err := io.WriteString(w, "</body></html>\n")
	return err
}

func legend(o Options) string {
	if o.Diff != nil {
		return `<tspan fill="#d83a3a">&#9632; grew</tspan> <tspan fill="#3a6ad8">&#9632; shrank</tspan> <tspan fill="#bbb">&#9632; same</tspan>`
	}
	return `<tspan fill="#d84a1b">&#9632; user</tspan> <tspan fill="#3b7dd8">&#9632; kernel</tspan> <tspan fill="#3aa655">&#9632; JIT</tspan> <tspan fill="#999">&#9632; other</tspan>`
}

// Diff is, for each frame of a tree, how its share of all samples changed
// against a base (percentage points).
type Diff struct {
	pp []float64 // by frame index
}

// Of is the change of frame n, a frame of the tree the diff was made for.
func (d *Diff) Of(n *Node) float64 { return d.pp[n.i] }

// Len is the number of frames the diff covers.
func (d *Diff) Len() int { return len(d.pp) }

// DiffTree returns, for each frame of cur, how its share of all samples
// changed against base, matching frames by their path from the root. Both
// trees have their children sorted (ParseFolded and FromProfile sort
// them), so matching children is a merge.
func DiffTree(base, cur *Node) *Diff {
	bt, ct := base.t, cur.t
	d := &Diff{pp: make([]float64, len(ct.sym))}
	var walk func(b int64, c uint32)
	walk = func(b int64, c uint32) {
		var bp float64
		if b >= 0 && base.Value > 0 {
			bp = 100 * bt.value[b] / base.Value
		}
		cp := 0.0
		if cur.Value > 0 {
			cp = 100 * ct.value[c] / cur.Value
		}
		d.pp[c] = cp - bp
		var bk []uint32
		if b >= 0 {
			bk = bt.children(uint32(b))
		}
		for _, cc := range ct.children(c) {
			cs := ct.syms[ct.sym[cc]]
			for len(bk) > 0 && less(bt.syms[bt.sym[bk[0]]], cs) {
				bk = bk[1:]
			}
			if len(bk) > 0 && bt.syms[bt.sym[bk[0]]] == cs {
				walk(int64(bk[0]), cc)
			} else {
				walk(-1, cc)
			}
		}
	}
	walk(int64(base.i), cur.i)
	return d
}

// less is the order of siblings: by name, then kind.
func less(a, b symInfo) bool {
	if a.name != b.name {
		return a.name < b.name
	}
	return a.kind < b.kind
}
