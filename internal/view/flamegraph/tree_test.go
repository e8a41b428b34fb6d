package flamegraph

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/model/modeltest"
	"github.com/sonde-dev/sonde/internal/testutil"
)

func TestFoldedFromProfile(t *testing.T) {
	var buf bytes.Buffer
	root := FromProfile(modeltest.Sample())
	if err := WriteFolded(&buf, root); err != nil {
		t.Fatal(err)
	}
	want := `work;__libc_start_call_main;main;spin_a 600
work;__libc_start_call_main;main;spin_b 200
work;__libc_start_call_main;main;work+0x5000 10
work;__libc_start_call_main;main;write;do_syscall_64_[k];ksys_write_[k] 20
`
	if buf.String() != want {
		t.Errorf("folded:\n%s\nwant:\n%s", buf.String(), want)
	}
	again, err := ParseFolded(strings.NewReader(buf.String()), nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf2 bytes.Buffer
	WriteFolded(&buf2, again)
	if buf2.String() != want {
		t.Errorf("round trip:\n%s", buf2.String())
	}
	if again.Value != 830 {
		t.Errorf("total %g, want 830", again.Value)
	}
}

func TestParseFoldedErrors(t *testing.T) {
	for _, in := range []string{"a;b;c\n", "a;b x\n"} {
		if _, err := ParseFolded(strings.NewReader(in), nil); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

func TestSVGIsSelfContained(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSVG(&buf, FromProfile(modeltest.Sample()), Options{Title: "t <&>"}); err != nil {
		t.Fatal(err)
	}
	s := buf.String()
	if strings.Contains(s, "http://") && strings.Count(s, "http://www.w3.org") != strings.Count(s, "http://") {
		t.Error("SVG refers to external resources")
	}
	if !strings.Contains(s, "t &lt;&amp;&gt;") {
		t.Error("title not escaped")
	}
	if strings.Count(s, "]]>") != 1 {
		t.Error("frame data can close the CDATA section")
	}
}

func foldedOf(t *testing.T, root *Node) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteFolded(&b, root); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestParseFoldedCutLastLine(t *testing.T) {
	for _, c := range []struct {
		name, in, want string
		warned         bool
	}{
		{"complete", "p;a 5\np;b 1\n", "p;a 5\np;b 1\n", false},
		{"no_newline", "p;a 5\np;b 1", "p;a 5\n", true},
		{"cut_in_count", "p;a 5\np;b 12", "p;a 5\n", true},
		{"cut_in_stack", "p;a 5\np;b;c", "p;a 5\n", true},
		{"cut_in_fraction", "p;a 5\np;b 2.", "p;a 5\n", true},
		{"comment_last", "p;a 5\n# end", "p;a 5\n", false},
		{"blank_last", "p;a 5\n  ", "p;a 5\n", false},
		{"crlf", "p;a 5\r\np;b 1\r\n", "p;a 5\np;b 1\n", false},
		// perf script's "pc  (libc.so)" folds to a frame named " "
		// (FlameGraph's perf-vertx-stacks-01); extra blanks elsewhere go.
		{"blank_frame", "p;a;  3\np;a 1\np;b  2\n", "p;a 1\np;a;  3\np;b 2\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var warnings []string
			root, err := ParseFolded(strings.NewReader(c.in), func(w string) { warnings = append(warnings, w) })
			if err != nil {
				t.Fatal(err)
			}
			if got := foldedOf(t, root); got != c.want {
				t.Errorf("folded %q, want %q", got, c.want)
			}
			if c.warned {
				if len(warnings) != 1 || !strings.Contains(warnings[0], "line 2") || strings.Contains(warnings[0], "\n") {
					t.Errorf("warnings %q, want one line about line 2", warnings)
				}
			} else if len(warnings) > 0 {
				t.Errorf("unexpected warnings %q", warnings)
			}
		})
	}
}

func TestParseFoldedLongLine(t *testing.T) {
	// Longer than the reader's buffer: the line is put together again.
	deep := strings.Repeat("frame_with_a_long_name;", 10000) + "leaf"
	root, err := ParseFolded(strings.NewReader("p;"+deep+" 3\np;x 1\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := foldedOf(t, root); got != "p;"+deep+" 3\np;x 1\n" {
		t.Errorf("long line changed (%d bytes out)", len(got))
	}
}

func TestFractionalCounts(t *testing.T) {
	root, err := ParseFolded(strings.NewReader("p;a;b 2.5\np;a;b 0.25\np;a;c 1\np;a;c 3.\np;a 0.125\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "p;a 0.125\np;a;b 2.75\np;a;c 4\n"; foldedOf(t, root) != want {
		t.Errorf("folded:\n%s\nwant:\n%s", foldedOf(t, root), want)
	}
	if root.Value != 6.875 {
		t.Errorf("total %g, want 6.875", root.Value)
	}
	for _, bad := range []string{"1e5", "-1", ".5", "nan", "inf", "1..2", "1.2.3", "0x10", "+1", "1_000", "½"} {
		if _, err := ParseFolded(strings.NewReader("p;a "+bad+"\n"), nil); err == nil {
			t.Errorf("count %q accepted", bad)
		}
	}
}

type drawing struct {
	Data struct {
		N        []string
		Names    []int32   `json:"n"`
		Kinds    []uint8   `json:"k"`
		Depth    []int     `json:"d"`
		Start    []float64 `json:"s"`
		Value    []float64 `json:"v"`
		Delta    []float64 `json:"dl"`
		resolved []string
	}
	Cfg struct {
		Pruned int `json:"pruned"`
	}
	doc string
}

var dataRE = regexp.MustCompile(`(?m)^var FG_DATA = (.*);\nvar FG_CFG = (.*);$`)

// draw writes the SVG and reads back the data it embeds.
func draw(t *testing.T, root *Node, o Options) *drawing {
	t.Helper()
	var b bytes.Buffer
	if err := WriteSVG(&b, root, o); err != nil {
		t.Fatal(err)
	}
	m := dataRE.FindStringSubmatch(b.String())
	if m == nil {
		t.Fatal("no frame data in the SVG")
	}
	d := &drawing{doc: b.String()}
	if err := json.Unmarshal([]byte(m[1]), &d.Data); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(m[2]), &d.Cfg); err != nil {
		t.Fatal(err)
	}
	for _, i := range d.Data.Names {
		d.Data.resolved = append(d.Data.resolved, d.Data.N[i])
	}
	return d
}

func (d *drawing) value(name string) float64 {
	for i, n := range d.Data.resolved {
		if n == name {
			return d.Data.Value[i]
		}
	}
	return -1
}

// checkNested checks that every drawn frame lies inside its caller.
func (d *drawing) checkNested(t *testing.T) {
	t.Helper()
	var stack []int
	for i := range d.Data.Depth {
		for len(stack) > 0 && d.Data.Depth[stack[len(stack)-1]] >= d.Data.Depth[i] {
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 {
			p := stack[len(stack)-1]
			if d.Data.Depth[i] != d.Data.Depth[p]+1 || d.Data.Start[i] < d.Data.Start[p] || d.Data.Start[i]+d.Data.Value[i] > d.Data.Start[p]+d.Data.Value[p] {
				t.Errorf("frame %s [%g+%g] outside its caller %s [%g+%g]", d.Data.resolved[i], d.Data.Start[i], d.Data.Value[i], d.Data.resolved[p], d.Data.Start[p], d.Data.Value[p])
			}
		}
		stack = append(stack, i)
	}
}

func TestPruneKeepsTotalsExact(t *testing.T) {
	var in strings.Builder
	in.WriteString("p;big 1000000\np;mid;x 200\n")
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&in, "p;small;f%03d 1\n", i)
	}
	const total = 1000300
	root, err := ParseFolded(strings.NewReader(in.String()), nil)
	if err != nil {
		t.Fatal(err)
	}
	exact := foldedOf(t, root)

	for _, c := range []struct {
		minWidth string
		pruned   int
		note     string
		absent   []string
	}{
		// 0.1 px of 1180 is 84.8 samples: each f### (1) goes, small (100) stays.
		{"", 100, "100 frames narrower than 0.1 px not drawn (0.01% of all samples, counted in their callers)", []string{"f000", "f099"}},
		{"0", 0, "", nil},
		// 1% is 10003 samples: mid and x, small and its 100 callees go.
		{"1%", 103, "103 frames narrower than 1% of the total not drawn (0.03% of all samples", []string{"small", "mid", "x", "f050"}},
		// 200 px of 1180 is 169,542 samples: only big stays.
		{"200", 103, "103 frames narrower than 200 px", []string{"small", "mid"}},
	} {
		t.Run("minwidth_"+c.minWidth, func(t *testing.T) {
			var o Options
			if c.minWidth != "" {
				mw, err := ParseMinWidth(c.minWidth)
				if err != nil {
					t.Fatal(err)
				}
				o.MinWidth = mw
			}
			d := draw(t, root, o)
			if d.Data.Value[0] != total {
				t.Errorf("drawn total %g, want %d", d.Data.Value[0], total)
			}
			if v := d.value("p"); v != total {
				t.Errorf("p is %g wide, want %d (pruned weight stays in the caller)", v, total)
			}
			if v := d.value("big"); v != 1000000 {
				t.Errorf("big %g, want 1000000", v)
			}
			if c.pruned <= 100 && d.value("small") != 100 {
				t.Errorf("small %g, want 100", d.value("small"))
			}
			if d.Cfg.Pruned != c.pruned {
				t.Errorf("pruned %d frames, want %d", d.Cfg.Pruned, c.pruned)
			}
			if got := len(d.Data.Names) + d.Cfg.Pruned; got != root.frames() {
				t.Errorf("drawn %d + pruned %d = %d frames, tree has %d", len(d.Data.Names), d.Cfg.Pruned, got, root.frames())
			}
			if c.note == "" && strings.Contains(d.doc, "not drawn") {
				t.Errorf("complete graph says frames were left out")
			}
			if c.note != "" && strings.Count(d.doc, c.note) != 2 {
				t.Errorf("footer and comment should say %q", c.note)
			}
			for _, name := range c.absent {
				if d.value(name) >= 0 {
					t.Errorf("%s drawn although narrower than the minimum", name)
				}
			}
			d.checkNested(t)
			if foldedOf(t, root) != exact {
				t.Errorf("drawing changed the tree")
			}
		})
	}
	if !strings.Contains(exact, "p;small;f099 1\n") || strings.Count(exact, "\n") != 102 {
		t.Errorf("folded output is not exact:\n%s", exact)
	}
}

func TestMinWidthParse(t *testing.T) {
	for _, bad := range []string{"", "x", "-1", "101%", "NaN", "inf", "1%%"} {
		if _, err := ParseMinWidth(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	var zero MinWidth
	if f := zero.Fraction(1200); math.Abs(f-0.1/1180) > 1e-15 {
		t.Errorf("default fraction %g, want 0.1 px of 1180", f)
	}
	if m, _ := ParseMinWidth("0.5%"); m.Fraction(1200) != 0.005 || m.String() != "0.5%" {
		t.Errorf("0.5%% read as %v, fraction %g", m, m.Fraction(1200))
	}
}

// TestSmallGolden: a small profile is drawn whole, its frames as the tree
// has them, and written back unchanged.
func TestSmallGolden(t *testing.T) {
	in, err := os.ReadFile("testdata/small.folded")
	if err != nil {
		t.Fatal(err)
	}
	root, err := ParseFolded(bytes.NewReader(in), func(w string) { t.Errorf("warning: %s", w) })
	if err != nil {
		t.Fatal(err)
	}
	d := draw(t, root, Options{})
	if d.Cfg.Pruned != 0 || len(d.Data.Names) != root.frames() {
		t.Errorf("small profile: %d of %d frames drawn, %d pruned", len(d.Data.Names), root.frames(), d.Cfg.Pruned)
	}
	d.checkNested(t)
	m := dataRE.FindStringSubmatch(d.doc)
	golden(t, "testdata/small.data.golden", "FG_DATA = "+m[1]+"\nFG_CFG = "+m[2]+"\n")
	folded := foldedOf(t, root)
	golden(t, "testdata/small.folded.golden", folded)
	again, err := ParseFolded(strings.NewReader(folded), nil)
	if err != nil {
		t.Fatal(err)
	}
	if foldedOf(t, again) != folded || again.Value != root.Value || root.Value != 889.5 {
		t.Errorf("round trip changed the stacks (total %g, again %g, want 889.5)", root.Value, again.Value)
	}
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	testutil.Golden(t, path, []byte(got))
}

func TestDiffTree(t *testing.T) {
	parse := func(s string) *Node {
		r, err := ParseFolded(strings.NewReader(s), nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	base := parse("p;a 1\np;b 1\np;k_[k] 2\n")
	cur := parse("p;b 3\np;c 1\np;k 4\n")
	d := DiffTree(base, cur)
	want := map[string]float64{"all": 0, "p": 0, "b": 3.0/8*100 - 25, "c": 12.5, "k": 50}
	for _, n := range cur.Children()[0].Children() {
		if math.Abs(d.Of(n)-want[n.Name]) > 1e-9 {
			t.Errorf("%s changed %g points, want %g", n.Name, d.Of(n), want[n.Name])
		}
	}
	if d.Len() != 5 {
		t.Errorf("%d frames in the diff, want 5", d.Len())
	}
}

func FuzzParseFolded(f *testing.F) {
	for _, s := range []string{"p;a 1\n", "p;a;b 2.5\np;a 1", "a;;b 3\n#x\n\n", "p;k_[k];j_[j] 0\n", "x 1.\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		root, err := ParseFolded(strings.NewReader(in), func(string) {})
		if err != nil {
			return
		}
		out := foldedOf(t, root)
		again, err := ParseFolded(strings.NewReader(out), func(w string) { t.Errorf("own output: %s", w) })
		if err != nil {
			t.Fatalf("own output rejected: %v\n%q", err, out)
		}
		if foldedOf(t, again) != out {
			t.Fatalf("not stable:\n%q\n%q", out, foldedOf(t, again))
		}
		var b bytes.Buffer
		if err := WriteSVG(&b, root, Options{}); err != nil {
			t.Fatal(err)
		}
	})
}

// TestParseFoldedMatchesAMap checks the tree against the plainest merge
// there is, a map from stack to total, on stacks sharing prefixes at every
// depth (each given more than once, in sorted, shuffled and reversed
// order), with more lines than one batch and than one group of lines
// walked side by side, names recurring under different callers, kernel
// suffixes and process names that are also frame names.
func TestParseFoldedMatchesAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	var lines []string
	want := map[string]float64{}
	for i := 0; i < 30000; i++ {
		depth := 1 + rng.IntN(12)
		frames := []string{fmt.Sprintf("proc%d", rng.IntN(3))}
		for d := 1; d < depth; d++ {
			name := fmt.Sprintf("f%d", rng.IntN(4+2*d)%12)
			switch rng.IntN(10) {
			case 0:
				name += "_[k]"
			case 1:
				name = "proc1"
			}
			frames = append(frames, name)
		}
		stack := strings.Join(frames, ";")
		n := 1 + rng.IntN(3)
		lines = append(lines, fmt.Sprintf("%s %d", stack, n))
		want[stack] += float64(n)
	}
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	var exp strings.Builder
	var total float64
	// FlameGraph's order: frame by frame, siblings by name, then kind.
	frame := func(tok string) (string, int) {
		if n, ok := strings.CutSuffix(tok, "_[k]"); ok {
			return n, 1
		}
		return tok, 0
	}
	slices.SortFunc(keys, func(a, b string) int {
		fa, fb := strings.Split(a, ";"), strings.Split(b, ";")
		for i := 0; i < len(fa) && i < len(fb); i++ {
			na, ka := frame(fa[i])
			nb, kb := frame(fb[i])
			if c := cmp.Or(strings.Compare(na, nb), ka-kb); c != 0 {
				return c
			}
		}
		return len(fa) - len(fb)
	})
	for _, k := range keys {
		fmt.Fprintf(&exp, "%s %g\n", k, want[k])
		total += want[k]
	}
	sorted := slices.Clone(lines)
	slices.Sort(sorted)
	reversed := slices.Clone(sorted)
	slices.Reverse(reversed)
	for name, order := range map[string][]string{"shuffled": lines, "sorted": sorted, "reversed": reversed} {
		root, err := ParseFolded(strings.NewReader(strings.Join(order, "\n")+"\n"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := foldedOf(t, root); got != exp.String() {
			t.Errorf("%s: folded output differs from the merged map (%d vs %d bytes)", name, len(got), exp.Len())
		}
		if root.Value != total {
			t.Errorf("%s: total %g, want %g", name, root.Value, total)
		}
	}
}

// TestWriteFoldedKeepsOneStackALine: a frame name with a separator or a
// newline (a name read from a process's memory) cannot split a stack.
func TestWriteFoldedKeepsOneStackALine(t *testing.T) {
	root, err := ParseFolded(strings.NewReader("a;b 3\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := root.t
	for i := range tr.syms {
		if tr.syms[i].name == "b" {
			tr.syms[i].name = "two\nlines;here"
		}
	}
	var out strings.Builder
	if err := WriteFolded(&out, root); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "a;two lines:here 3\n" {
		t.Fatalf("folded %q", got)
	}
}
