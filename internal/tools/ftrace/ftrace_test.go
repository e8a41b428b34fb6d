package ftrace

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/format/datafile"
	"github.com/sonde-dev/sonde/internal/model"
)

// knownTree is the call tree of testdata/calltree.c with made-up times
// (ns): main calls a() 3 times, each a() calls b() 10 times (1 us each,
// the last 2 ms), then c(5) recurses to depth 5 (each level 100 ns of
// its own). Calls arrive in return order, as the recorder writes them.
func knownTree() *Trace {
	fs := []Func{{Name: "main", Binary: "/bin/ct"}, {Name: "a", Binary: "/bin/ct"}, {Name: "b", Binary: "/bin/ct"}, {Name: "c", Binary: "/bin/ct"}}
	p := NewProfile(fs, "uprobe_multi", "")
	p.Threads = []model.Thread{{Pid: 7, Tid: 7, Comm: "ct"}}
	var calls []Call
	t := uint64(1000)
	mainStart := t
	t += 10
	for i := 0; i < 3; i++ {
		aStart := t
		t += 10
		for j := 0; j < 10; j++ {
			d := uint64(1000)
			if j == 9 {
				d = 2_000_000
			}
			calls = append(calls, Call{Fn: 2, Start: t, Dur: d, Depth: 2})
			t += d + 10
		}
		calls = append(calls, Call{Fn: 1, Start: aStart, Dur: t - aStart, Depth: 1})
		t += 10
	}
	var starts [5]uint64
	for d := 0; d < 5; d++ {
		starts[d] = t
		t += 100
	}
	end := t
	for d := 4; d >= 0; d-- {
		calls = append(calls, Call{Fn: 3, Start: starts[d], Dur: end - starts[d], Depth: 1 + d, Args: []uint64{uint64(5 - d)}})
		end += 1
	}
	calls = append(calls, Call{Fn: 0, Start: mainStart, Dur: end + 10 - mainStart, Depth: 0})
	for _, c := range calls {
		p.Samples = append(p.Samples, c.Sample())
	}
	// Through the data file, as the views read it.
	var buf bytes.Buffer
	if err := datafile.Write(&buf, p); err != nil {
		panic(err)
	}
	q, err := datafile.Read(&buf)
	if err != nil {
		panic(err)
	}
	tr, err := FromProfile(q)
	if err != nil {
		panic(err)
	}
	return tr
}

func TestReportCounts(t *testing.T) {
	tr := knownTree()
	rows := Stats(tr, tr.Calls)
	if err := SortRows(rows, "func"); err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{"main": 1, "a": 3, "b": 30, "c": 5}
	for _, r := range rows {
		if r.Count != want[r.Function] {
			t.Errorf("%s: %d calls, want %d", r.Function, r.Count, want[r.Function])
		}
		switch r.Function {
		case "b":
			if r.Total != 27*1000+3*2_000_000 || r.Self != r.Total || r.Max != 2_000_000 || r.Min != 1000 {
				t.Errorf("b: %+v", r)
			}
		case "c":
			// Recursion counts once in the total; self is 100 ns per level
			// (plus the 1 ns each return adds), 400+ for the outer four.
			outer := tr.Calls[len(tr.Calls)-5]
			if uint64(r.Total) != outer.Dur {
				t.Errorf("c total %d, want the outermost call's %d", r.Total, outer.Dur)
			}
			if r.Self < 500 || r.Self > 510 {
				t.Errorf("c self %d, want about 500", r.Self)
			}
		case "a":
			if r.Self != 3*(10+10*10) {
				t.Errorf("a self %d, want %d", r.Self, 3*(10+10*10))
			}
		}
	}
}

func TestReplayNesting(t *testing.T) {
	tr := knownTree()
	var out bytes.Buffer
	if err := Replay(&out, tr, ReplayOptions{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if lines[0] != "# DURATION     TID     FUNCTION" {
		t.Errorf("header %q", lines[0])
	}
	want := []string{
		"            [     7] | main() {",
		"            [     7] |   a() {",
		"   1.000 us [     7] |     b();",
	}
	for i, w := range want {
		if lines[1+i] != w {
			t.Errorf("line %d: %q, want %q", 1+i, lines[1+i], w)
		}
	}
	if got := strings.Count(out.String(), "b();"); got != 30 {
		t.Errorf("%d b() lines, want 30", got)
	}
	if !strings.Contains(out.String(), "   2.000 ms [     7] |     b();") {
		t.Error("no 2 ms b()")
	}
	if !strings.Contains(out.String(), "|           c(1);") || !strings.Contains(out.String(), "| } /* main */") {
		t.Errorf("recursion or main's end missing:\n%s", out.String())
	}
	// -D 2 hides b and everything below c(5)'s first level.
	out.Reset()
	Replay(&out, tr, ReplayOptions{Depth: 2})
	if strings.Contains(out.String(), "b()") || strings.Count(out.String(), "c(") != 1 || !strings.Contains(out.String(), "a();") {
		t.Errorf("-D 2:\n%s", out.String())
	}
	// -t 1ms keeps the sleeping b()s and their callers only.
	out.Reset()
	Replay(&out, tr, ReplayOptions{MinDuration: 1_000_000})
	if strings.Count(out.String(), "b();") != 3 || strings.Contains(out.String(), "c(") {
		t.Errorf("-t 1ms:\n%s", out.String())
	}
}

func TestGraph(t *testing.T) {
	tr := knownTree()
	n := Graph(tr, tr.Calls, "a", "ct")
	if n == nil || n.Count != 3 || len(n.Children) != 1 || n.Children[0].Name != "b" || n.Children[0].Count != 30 {
		t.Fatalf("graph under a: %+v", n)
	}
	if n.Total != n.Children[0].Total+3*110 {
		t.Errorf("a total %d, b total %d", n.Total, n.Children[0].Total)
	}
	all := Graph(tr, tr.Calls, "", "ct")
	var out bytes.Buffer
	WriteGraph(&out, all)
	for _, w := range []string{"(1) main", "+-(3) a", "| `-(30) b", "`-(1) c", "`-(1) c\n"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("graph lacks %q:\n%s", w, out.String())
		}
	}
	if Graph(tr, tr.Calls, "nosuch", "ct") != nil {
		t.Error("graph of a function never called")
	}
}

// checkChrome checks Chrome trace JSON structurally: per thread, every E
// closes the innermost open B of the same name, timestamps never go back,
// nothing stays open, and every thread with calls is named (thread_name
// metadata); it returns the calls and the names by tid.
func checkChrome(t *testing.T, b []byte) (int, map[int]string) {
	t.Helper()
	var doc struct {
		TraceEvents []struct {
			Name, Ph string
			Ts       float64
			Pid, Tid int
			Args     map[string]string
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	open := map[int][]string{}
	last := map[int]float64{}
	names := map[int]string{}
	n := 0
	for _, e := range doc.TraceEvents {
		switch e.Ph {
		case "M":
			if e.Name == "thread_name" {
				names[e.Tid] = e.Args["name"]
			}
			continue
		case "B":
			open[e.Tid] = append(open[e.Tid], e.Name)
			n++
		case "E":
			s := open[e.Tid]
			if len(s) == 0 || s[len(s)-1] != e.Name {
				t.Fatalf("E %s on %d closes %v", e.Name, e.Tid, s)
			}
			open[e.Tid] = s[:len(s)-1]
		default:
			t.Fatalf("phase %q", e.Ph)
		}
		if e.Ts < last[e.Tid] {
			t.Fatalf("time goes back on %d: %v after %v", e.Tid, e.Ts, last[e.Tid])
		}
		last[e.Tid] = e.Ts
	}
	for tid, s := range open {
		if len(s) > 0 {
			t.Errorf("thread %d: %v never end", tid, s)
		}
		if names[tid] == "" {
			t.Errorf("thread %d has calls but no name (thread_name %q)", tid, names[tid])
		}
	}
	return n, names
}

func TestChrome(t *testing.T) {
	tr := knownTree()
	var out bytes.Buffer
	if err := WriteChrome(&out, tr, tr.Calls); err != nil {
		t.Fatal(err)
	}
	if n, _ := checkChrome(t, out.Bytes()); n != 39 {
		t.Errorf("%d calls, want 39", n)
	}
}

func TestFolded(t *testing.T) {
	tr := knownTree()
	var out bytes.Buffer
	if err := Folded(&out, tr, tr.Calls); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "ct;main;a;b 6027000\n") {
		t.Errorf("folded:\n%s", out.String())
	}
	var sum uint64
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var v uint64
		json.Unmarshal([]byte(l[strings.LastIndexByte(l, ' ')+1:]), &v)
		sum += v
	}
	if main := tr.Calls[0]; sum != main.Dur {
		t.Errorf("self times add to %d, main lasted %d", sum, main.Dur)
	}
}

func FuzzDecodeRaw(f *testing.F) {
	f.Add(encodeRaw(&Call{Depth: 3, Args: []uint64{1, 2}, HasRet: true, Ret: 9}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var c Call
		if decodeRaw(&c, b) == nil {
			var d Call
			if err := decodeRaw(&d, encodeRaw(&c)); err != nil || d.Depth != c.Depth || len(d.Args) != len(c.Args) {
				t.Fatalf("round trip of %+v: %+v, %v", c, d, err)
			}
		}
	})
}
