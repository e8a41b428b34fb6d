package web

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// TestPageRecorded records testdata/phases.c twice (phase_a 1 s then
// phase_b 1 s; phase_a 0.3 s then phase_b 1 s), serves both with the sonde
// binary and checks the page against the program's known shape and against
// sonde report.
func TestPageRecorded(t *testing.T) {
	testutil.RequirePrivileged(t)
	if !testutil.PerfEventsUsable() {
		t.Skip("perf events unusable here")
	}
	dir := t.TempDir()
	testutil.BuildC(t, dir, "phases", []string{"phases.c"})
	testutil.MustRun(t, dir, "record", "-q", "-g", "-F", "999", "-o", "p11.data", "--", "./phases", "1000", "1000")
	testutil.MustRun(t, dir, "record", "-q", "-g", "-F", "999", "-o", "p31.data", "--", "./phases", "300", "1000")

	var rep struct {
		Entries []struct {
			Keys     map[string]string `json:"keys"`
			ChildPct float64           `json:"children_percent"`
		} `json:"entries"`
	}
	out := testutil.MustRun(t, dir, "report", "-i", "p11.data", "--json", "-s", "sym", "-g", "none")
	if err := json.Unmarshal([]byte(out.Stdout), &rep); err != nil {
		t.Fatal(err)
	}
	reportPct := -1.0
	for _, e := range rep.Entries {
		if e.Keys["sym"] == "phase_a" {
			reportPct = e.ChildPct
		}
	}

	url, _ := startServe(t, dir, "-i", "p11.data", "-i", "p31.data")

	b := newBrowser(t, url)
	b.open(url + "#v=flame&f=0")
	b.check()
	b.shot("flame")

	// Search: phase_a's share is report's.
	got := eval[float64](b, `(() => { const s = document.getElementById("search"); s.value = "^phase_a$";
		s.dispatchEvent(new Event("input")); return Number(document.getElementById("match").dataset.percent); })()`)
	if reportPct <= 0 || !near(got, reportPct, 0.01) {
		t.Errorf("search ^phase_a$ matched %.3f%%, sonde report says %.3f%%", got, reportPct)
	}
	// A click on phase_a zooms it to the full width.
	full := b.frame("flame", "all").W
	b.clickFrame("flame", "phase_a")
	if z := b.frame("flame", "phase_a"); !near(z.W, full, 1) {
		t.Errorf("after a click phase_a is %.1f px wide, want %.1f", z.W, full)
	}

	// The process named itself in markup: text everywhere.
	const comm = "<i>ph&amp;</i>"
	for _, v := range []string{"v=icicle&f=0", "v=top&f=0", "v=time&f=0", "v=fields&f=0", "v=hist&f=0"} {
		b.show(v)
		if v != "v=icicle&f=0" && v != "v=fields&f=0" && v != "v=hist&f=0" {
			b.shot(strings.TrimSuffix(strings.TrimPrefix(v, "v="), "&f=0"))
		}
		if n := eval[int](b, `document.querySelectorAll("main i, main img").length`); n != 0 {
			t.Errorf("%s: %d elements made from names", v, n)
		}
	}
	b.show("v=icicle&f=0")
	b.shot("icicle")
	b.show("v=time&f=0")
	if !strings.Contains(b.text(), comm) {
		t.Errorf("the time view does not name the thread %q", comm)
	}

	// Sandwich of spin in the 0.3 s + 1 s run: callers phase_a 23%, phase_b 77%.
	b.show("v=sandwich&f=1&fn=spin")
	b.shot("sandwich")
	shares := eval[map[string]float64](b, `Object.fromEntries([...document.querySelectorAll("#callers tbody tr")].map(
		r => [r.cells[0].textContent, Number(r.cells[1].dataset.percent)]))`)
	if len(shares) != 2 || !near(shares["phase_a"], 100*300/1300.0, 6) || !near(shares["phase_b"], 100*1000/1300.0, 6) {
		t.Errorf("spin's callers %v, want phase_a 23%% and phase_b 77%%", shares)
	}

	// Time: select the first 0.95 s; the top table has phase_a, not phase_b.
	var tl TimeDoc
	resp, err := http.Get(url + "api/time?f=0")
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&tl)
	resp.Body.Close()
	b.show("v=time&f=0")
	lanes := eval[frameRect](b, `(() => { const r = document.getElementById("lanes").getBoundingClientRect(); return {X: r.left, Y: r.top, W: r.width, H: r.height}; })()`)
	b.drag(lanes.X+0.5, lanes.Y+5, lanes.X+lanes.W*0.95e9/float64(tl.DurationNS), lanes.Y+5)
	b.waitReady()
	b.shot("time")
	b.show(strings.Replace(eval[string](b, `location.hash.slice(1)`), "v=time", "v=top", 1))
	rows := eval[[]string](b, `[...document.querySelectorAll("#top tbody td.name")].map(e => e.firstChild.textContent)`)
	if !contains(rows, "phase_a") || contains(rows, "phase_b") {
		t.Errorf("top table of the first second: %v", rows)
	}
	b.shot("top")

	// Diff: phase_b grew from 50% to 77% (red), phase_a shrank (blue).
	b.show("v=diff&f=1&base=0")
	b.shot("diff")
	for name, want := range map[string]string{"phase_b": "red", "phase_a": "blue"} {
		f := b.frame("diff", name)
		if got := hue(eval[[]int](b, pixelAt(f.X+2, f.Y+2))); got != want {
			t.Errorf("diff: %s is %s, want %s", name, got, want)
		}
	}

	// Source: the hottest line is the loop marked HOT.
	src, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "testdata", "phases.c"))
	if err != nil {
		t.Fatal(err)
	}
	hot := 0
	for i, l := range strings.Split(string(src), "\n") {
		if strings.Contains(l, "/* HOT */") {
			hot = i + 1
		}
	}
	b.show("v=source&f=0&fn=spin")
	b.shot("source")
	if got := eval[string](b, `(document.querySelector("#source tr.hot") || {dataset: {}}).dataset.line || ""`); got != fmt.Sprint(hot) {
		t.Errorf("the source panel marks line %q hottest, want %d", got, hot)
	}
	b.check()
}

// startServe runs sonde serve in dir until the test ends and returns its
// URL and process id.
func startServe(t *testing.T, dir string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(testutil.Sonde(t), append([]string{"serve"}, args...)...)
	cmd.Dir = dir
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
	line, _ := bufio.NewReader(stderr).ReadString('\n')
	m := regexp.MustCompile(`at (http://127\.0\.0\.1:\d+/)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("sonde serve said %q, want its URL", line)
	}
	return m[1], cmd.Process.Pid
}
