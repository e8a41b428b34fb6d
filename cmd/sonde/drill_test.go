package main

// Tests for drill-down and comparison: annotate against addr2line, srcline,
// diff and the differential flame graph, on the examples/ programs.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

func buildExample(t *testing.T, dir, out, src string, flags ...string) string {
	t.Helper()
	return testutil.BuildC(t, dir, out, []string{filepath.Join(testutil.RepoRoot(), "examples", src)}, flags...)
}

// sourceLines returns the line numbers of src whose text matches re.
func sourceLines(t *testing.T, src string, re *regexp.Regexp) map[int]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "examples", src))
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]bool{}
	for i, l := range strings.Split(string(b), "\n") {
		if re.MatchString(l) {
			out[i+1] = true
		}
	}
	return out
}

type annJSON []struct {
	Function string `json:"function"`
	Insns    []struct {
		Addr    uint64  `json:"addr"`
		Percent float64 `json:"percent"`
		Line    int     `json:"line"`
		File    string  `json:"file"`
	} `json:"instructions"`
	HotLines []struct {
		Line    int     `json:"line"`
		Percent float64 `json:"percent"`
	} `json:"hot_lines"`
}

func TestAnnotateMatmul(t *testing.T) {
	testutil.RequirePrivileged(t)
	testutil.RequireTool(t, "addr2line", "binutils")
	dir := t.TempDir()
	bin := buildExample(t, dir, "matmul", "matmul/matmul.c")
	testutil.MustRun(t, dir, "record", "-q", "-F", "4999", "-o", "mm.data", "--", bin, "naive", "400")
	check := func() annJSON {
		r := testutil.MustRun(t, dir, "annotate", "-i", "mm.data", "-s", "multiply", "--json")
		var a annJSON
		if err := json.Unmarshal([]byte(r.Stdout), &a); err != nil || len(a) != 1 {
			t.Fatalf("annotate JSON: %v\n%.500s", err, r.Stdout)
		}
		return a
	}
	a := check()
	inner := sourceLines(t, "matmul/matmul.c", regexp.MustCompile(`for \(int k = 0; k < n; k\+\+\)|sum \+= a\[i \* n \+ k\] \* b\[k \* n \+ j\]`))
	// The hottest instructions sit on the inner loop of multiply.
	type hot struct {
		addr uint64
		pct  float64
		line int
	}
	var hs []hot
	for _, in := range a[0].Insns {
		if in.Percent > 0 {
			hs = append(hs, hot{in.Addr, in.Percent, in.Line})
		}
	}
	if len(hs) == 0 {
		t.Fatal("no sampled instructions")
	}
	for i := range hs {
		for j := i + 1; j < len(hs); j++ {
			if hs[j].pct > hs[i].pct {
				hs[i], hs[j] = hs[j], hs[i]
			}
		}
	}
	var onInner float64
	for _, h := range hs {
		if inner[h.line] {
			onInner += h.pct
		}
	}
	if onInner < 80 {
		t.Errorf("%.1f%% of multiply's samples on the inner-loop lines %v, want most (hottest: %+v)", onInner, inner, hs[:min(3, len(hs))])
	}
	// Source lines shown match addr2line for the hottest addresses.
	for _, h := range hs[:min(5, len(hs))] {
		out := testutil.Tool(t, "addr2line", "-e", bin, "0x"+strconv.FormatUint(h.addr, 16))
		s := strings.TrimSpace(string(out))
		line, _ := strconv.Atoi(strings.Fields(s[strings.LastIndexByte(s, ':')+1:])[0])
		if line != h.line {
			t.Errorf("0x%x: annotate says line %d, addr2line %q", h.addr, h.line, s)
		}
	}
	// Still works once the binary is gone: the code is in the data file.
	txt := testutil.MustRun(t, dir, "annotate", "-i", "mm.data", "-s", "multiply").Stdout
	os.Remove(bin)
	b := check()
	if len(b[0].Insns) != len(a[0].Insns) {
		t.Errorf("annotate changed after deleting the binary")
	}
	if !strings.Contains(txt, "code from the data file") || !strings.Contains(txt, "Hottest source lines") {
		t.Errorf("annotate text:\n%.800s", txt)
	}
}

func TestSrclineKnapsack(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	bin := buildExample(t, dir, "knapsack", "knapsack/knapsack.c")
	testutil.MustRun(t, dir, "record", "-q", "-F", "4999", "-o", "ks.data", "--", bin)
	r := testutil.MustRun(t, dir, "report", "-i", "ks.data", "--no-children", "--sort", "srcline", "--json")
	var rep jsonReport
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || len(rep.Entries) == 0 {
		t.Fatalf("%v\n%s", err, r.Stdout)
	}
	top := rep.Entries[0].Keys["srcline"]
	// The hot loop of the slow solve() (the #ifndef IMPROVED block).
	loop := sourceLines(t, "knapsack/knapsack.c", regexp.MustCompile(`for \(int w = 0; w <= cap; w\+\+\)|strided loads|if \(wt\[i - 1\] <= w\)|int with = table|if \(with > best\)|best = with;|table\[\(size_t\)w \* \(n \+ 1\) \+ i\] = best`))
	m := regexp.MustCompile(`knapsack\.c:(\d+)$`).FindStringSubmatch(top)
	if m == nil {
		t.Fatalf("top srcline %q is not a knapsack.c line", top)
	}
	n, _ := strconv.Atoi(m[1])
	if !loop[n] {
		t.Errorf("top srcline %s (%.1f%%) is not in the hot loop (lines %v)", top, rep.Entries[0].SelfPct, loop)
	}
	t.Logf("top srcline %s %.1f%%", top, rep.Entries[0].SelfPct)
}

type diffJSON []struct {
	Sym      string  `json:"sym"`
	Baseline float64 `json:"baseline_percent"`
	New      float64 `json:"new_percent"`
	Delta    float64 `json:"delta_percent"`
}

func TestDiffKnapsack(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	slow := buildExample(t, mkdir(t, dir, "slow"), "knapsack", "knapsack/knapsack.c")
	fast := buildExample(t, mkdir(t, dir, "fast"), "knapsack", "knapsack/knapsack.c", "-DIMPROVED")
	testutil.MustRun(t, dir, "record", "-q", "-F", "4999", "-g", "-o", "slow.data", "--", slow)
	testutil.MustRun(t, dir, "record", "-q", "-F", "4999", "-g", "-o", "fast.data", "--", fast)
	r := testutil.MustRun(t, dir, "diff", "slow.data", "fast.data", "--json")
	var d diffJSON
	r.JSON(t, &d)
	found := false
	for _, row := range d {
		if row.Sym == "solve" {
			found = true
			t.Logf("solve's own share: %.1f%% → %.1f%% (%+.1f)", row.Baseline, row.New, row.Delta)
		}
	}
	if !found {
		t.Errorf("no solve row: %+v", d)
	}
	// solve got faster: its samples with what it called (the kernel's
	// page faults under the slow build's strided table, which on this VM
	// take as much time as solve's own code and make its own share of the
	// profile swing by ±8 points between runs) at least halve.
	slowIn, fastIn := inclusiveSamples(t, dir, "slow.data", "solve"), inclusiveSamples(t, dir, "fast.data", "solve")
	t.Logf("solve with its callees: %.0f samples → %.0f", slowIn, fastIn)
	if fastIn*2 > slowIn {
		t.Errorf("solve did not get faster: %.0f samples with its callees → %.0f", slowIn, fastIn)
	}
	// A profile against itself: no deltas.
	r = testutil.MustRun(t, dir, "diff", "slow.data", "slow.data", "--json")
	json.Unmarshal([]byte(r.Stdout), &d)
	for _, row := range d {
		if row.Delta != 0 {
			t.Errorf("self-diff has a delta: %+v", row)
		}
	}
	txt := testutil.MustRun(t, dir, "diff", "slow.data", "slow.data").Stdout
	if regexp.MustCompile(`[+-]\d+\.\d\d%`).MatchString(txt) {
		t.Errorf("self-diff text shows deltas:\n%s", txt)
	}
	// Differential flame graph: solve shrank (blue), rendered in Chromium.
	testutil.MustRun(t, dir, "flamegraph", "--diff", "slow.data", "fast.data", "-o", "diff.html")
	b, _ := os.ReadFile(filepath.Join(dir, "diff.html"))
	if !strings.Contains(string(b), `"dl":[`) || !strings.Contains(string(b), "shrank") {
		t.Errorf("diff flame graph lacks deltas")
	}
	if chromium, ok := testutil.HaveTool("chromium"); ok {
		out := testutil.DumpDOM(t, chromium, dir, "file://"+filepath.Join(dir, "diff.html"))
		// prepare is fixed work: its share grew; it is drawn red.
		if !regexp.MustCompile(`data-name="prepare"><title>[^<]*points\)</title><rect[^>]*fill="rgb\(235,`).MatchString(out) {
			t.Errorf("prepare not drawn as grown (red)")
		}
	}
}

// inclusiveSamples is how many samples of file have sym on their stack.
func inclusiveSamples(t *testing.T, dir, file, sym string) float64 {
	t.Helper()
	rep := reportJSON(t, dir, "-i", file, "--children")
	for _, e := range rep.Entries {
		if e.Keys["sym"] == sym {
			return e.ChildPct * float64(rep.Samples) / 100
		}
	}
	t.Fatalf("no %s in %s", sym, file)
	return 0
}
