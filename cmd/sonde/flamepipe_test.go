package main

import (
	"encoding/json"
	"fmt"
	"html"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// TestFlamegraphPipeBesideInferno draws folded stacks read from a pipe and
// written to one (-i - -o -, as FlameGraph and inferno are used), and
// checks every frame against inferno-flamegraph's drawing of the same
// stacks: the same frames with the same weights, both drawing every frame
// (--minwidth 0), kernel suffixes stripped as both do. (No name is another
// followed by a character that sorts before ";": inferno merges frames of
// lines it has sorted as text, so "f;g 1", "f0 1", "f 1" would draw f twice.)
func TestFlamegraphPipeBesideInferno(t *testing.T) {
	inferno := testutil.RequireTool(t, "inferno-flamegraph", "inferno (cargo install inferno; .ci/run does)")
	var in strings.Builder
	total := 0
	for i := 0; i < 400; i++ {
		fmt.Fprintf(&in, "proc%d;main;mod%d::run;lib::call_%02d", i%3, i%7, i%13)
		if i%4 == 0 {
			in.WriteString(";do_syscall_64_[k];ksys_read_[k]")
		}
		if i%5 == 0 {
			in.WriteString(";std::vector<int, std::allocator<int> >::push_back(int const&)")
		}
		fmt.Fprintf(&in, " %d\n", 1+i%9)
		total += 1 + i%9
	}
	dir := t.TempDir()
	r := mustEnv(t, dir, nil, []byte(in.String()), "flamegraph", "-i", "-", "-o", "-", "--format", "svg", "--minwidth", "0")
	if !strings.HasPrefix(r.Stdout, "<?xml") || strings.Contains(r.Stderr, "written to") {
		t.Fatalf("want the SVG on stdout, got %d bytes starting %.40q; stderr %q", len(r.Stdout), r.Stdout, r.Stderr)
	}
	ref := exec.Command(inferno, "--minwidth", "0")
	ref.Stdin = strings.NewReader(in.String())
	out, err := ref.Output()
	if err != nil {
		t.Fatalf("inferno-flamegraph: %v", err)
	}
	var want []string
	for _, m := range regexp.MustCompile(`<title>([^<]*) \(([0-9,]+) samples?, [0-9.]+%\)</title>`).FindAllStringSubmatch(string(out), -1) {
		want = append(want, html.UnescapeString(m[1])+" "+strings.ReplaceAll(m[2], ",", ""))
	}
	m := regexp.MustCompile(`(?m)^var FG_DATA = (.*);$`).FindStringSubmatch(r.Stdout)
	if m == nil {
		t.Fatal("no frame data in sonde's SVG")
	}
	var d struct {
		N []string
		I []int     `json:"n"`
		V []float64 `json:"v"`
	}
	if err := json.Unmarshal([]byte(m[1]), &d); err != nil {
		t.Fatal(err)
	}
	var got []string
	for k, i := range d.I {
		got = append(got, d.N[i]+" "+strconv.FormatFloat(d.V[k], 'f', -1, 64))
	}
	if len(want) < 50 || !slices.Contains(want, fmt.Sprint("all ", total)) {
		t.Fatalf("inferno drew %d frames, want at least 50 and all %d", len(want), total)
	}
	if testutil.SameLines(t, "frames drawn", "inferno", got, want) {
		t.Logf("%d frames, each as wide as inferno draws it", len(got))
	}
}
