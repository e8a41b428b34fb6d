package flamegraph

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// TestPrunedGraphInBrowser renders a graph with frames left out in headless
// Chromium: the footer says so, search percentages and tooltips are exact
// shares of the whole input, zoom still fills the width.
func TestPrunedGraphInBrowser(t *testing.T) {
	chromium := testutil.RequireTool(t, "chromium", "chromium")
	var in strings.Builder
	in.WriteString("p;main;hot 90000\np;main;warm 9000\np;main;warm;hot 500\n")
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&in, "p;main;cold;c%04d 1\n", i)
	}
	const total = 90000 + 9000 + 500 + 2000
	root, err := ParseFolded(strings.NewReader(in.String()), nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "flame.html")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(f, root, Options{Title: "pruned"}); err != nil {
		t.Fatal(err)
	}
	f.Close()

	dump := func(query string) string { return testutil.DumpDOM(t, chromium, dir, "file://"+path+query) }
	page := dump("")
	// 0.1 px of 1180 is 8.6 samples: the 2000 callees of cold go.
	m := regexp.MustCompile(`<text id="pruned" x="10" y="(\d+)"[^>]*>([^<]*)</text>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no footer in the rendered page")
	}
	if y, _ := strconv.Atoi(m[1]); y <= 0 || !strings.HasPrefix(m[2], "2,000 frames narrower than 0.1 px not drawn (1.97% of all samples") {
		t.Errorf("footer %q at y=%s", m[2], m[1])
	}
	for _, name := range []string{"main", "hot", "warm", "cold"} {
		if !strings.Contains(page, `data-name="`+name+`"`) {
			t.Errorf("frame %s not rendered", name)
		}
	}
	if strings.Contains(page, `data-name="c0001"`) {
		t.Errorf("a pruned frame was rendered")
	}
	// Tooltips: cold keeps the weight of its left-out callees.
	if !strings.Contains(page, `<title>cold (2,000 samples, 1.97%)</title>`) {
		t.Errorf("cold's tooltip lacks its weight:\n%.3000s", page)
	}
	// Search: both hot frames, exact shares of the whole input.
	page = dump("?s=%5Ehot%24")
	want := 100 * float64(90000+500) / total
	if got := testutil.SearchPercent(t, page); math.Abs(got-want) > 0.001 {
		t.Errorf("search matched %.3f%%, want %.3f%%", got, want)
	}
	// Zoom: warm fills the width.
	testutil.CheckZoomed(t, dump("?x=warm"), "warm", "cold")
}
