package web

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/view/report"
)

// TestPageSynthetic drives every view of a known recording in Chromium:
// nothing breaks, nothing leaves the server, names made of markup stay
// text, a click zooms, search gives report's share, a time range filters,
// the diff colours growth red.
func TestPageSynthetic(t *testing.T) {
	base, cur := synth(30), synth(90)
	srv := httptest.NewServer(New([]string{"base.data", "new.data"}, []*model.Profile{base, cur}).Handler())
	defer srv.Close()
	b := newBrowser(t, srv.URL+"/")
	b.open(srv.URL + "/#v=flame&f=0&event=cpu-clock")
	b.check()

	// A click on work zooms it to the full width.
	full := b.frame("flame", "all").W
	w := b.frame("flame", "work")
	if w.W > full*0.95 {
		t.Fatalf("work is already %0.f of %0.f px wide", w.W, full)
	}
	b.clickFrame("flame", "work")
	if z := b.frame("flame", "work"); !near(z.W, full, 1) {
		t.Errorf("after a click work is %.1f px wide, want %.1f", z.W, full)
	}
	for _, f := range b.frames("flame") {
		if f.Name == evilFunc {
			t.Errorf("%s still drawn after zooming into work", evilFunc)
		}
	}
	crumbs := eval[string](b, `[...document.querySelectorAll(".crumb")].map(e => e.textContent).join(";")`)
	if crumbs != "all;app;main;work" {
		t.Errorf("breadcrumbs %q", crumbs)
	}
	// Esc zooms back out; a double click focuses on the function.
	b.do("pressing Esc", chromedp.KeyEvent(kb.Escape))
	if w := b.frame("flame", "work"); w.W > full*0.95 {
		t.Errorf("Esc left work %.0f px wide", w.W)
	}
	a := b.frame("flame", "alpha")
	b.do("double-clicking alpha", chromedp.MouseClickXY(a.X+a.W/2, a.Y+a.H/2, chromedp.ClickCount(2)))
	b.waitReady()
	if h := eval[string](b, `location.hash`); !strings.Contains(h, "focus=alpha") {
		t.Errorf("a double click on alpha gave %s", h)
	}
	b.show("v=flame&f=0&event=cpu-clock")

	// Search: the share of alpha is report's.
	rep := report.Build(base, report.Options{Sort: []string{"sym"}, Children: true, Graph: "none", OnlyEvent: 1})
	var want float64
	for _, e := range rep.Entries {
		if e.Keys["sym"] == "alpha" {
			want = e.ChildPct
		}
	}
	got := eval[float64](b, `(() => { const s = document.getElementById("search"); s.value = "^alpha$";
		s.dispatchEvent(new Event("input")); return Number(document.getElementById("match").dataset.percent); })()`)
	if want == 0 || !near(got, want, 0.0001) {
		t.Errorf("search ^alpha$ matched %.4f%%, report says %.4f%%", got, want)
	}

	// Every view, with the markup names; none may become an element.
	for _, v := range []struct{ hash, shot, text string }{
		{"v=icicle&f=0", "", ""},
		{"v=top&f=0", "", evilFunc},
		{"v=sandwich&f=0&fn=work&event=cpu-clock", "", "main"},
		{"v=sandwich&f=0&fn=" + strings.ReplaceAll(evilFunc, "&", "%26"), "", evilFunc},
		{"v=time&f=0", "", evilComm},
		{"v=source&f=0&fn=alpha", "", "no code for alpha"},
		{"v=source&f=0&fn=" + strings.ReplaceAll(evilFunc, "&", "%26"), "", "no code for " + evilFunc},
		{"v=hist&f=0", "hist", "sched:sched_wakeup: prio"},
		{"v=fields&f=0", "fields", evilComm},
		{"v=flame&f=0&comm=" + strings.ReplaceAll(evilComm, "=", "%3D"), "", "8 samples in the selection"},
	} {
		b.show(v.hash)
		if v.shot != "" {
			b.shot(v.shot)
		}
		if txt := b.text(); !strings.Contains(txt, v.text) {
			t.Errorf("%s: the page does not show %q:\n%.600s", v.hash, v.text, txt)
		}
		if n := eval[int](b, `document.querySelectorAll("img, iframe, object, embed, script:not([src])").length`); n != 0 {
			t.Errorf("%s: %d elements made from names", v.hash, n)
		}
	}
	// The evil thread's tooltip and frames are text on the canvas: hover one.
	b.show("v=flame&f=0&event=cpu-clock")
	e := b.frame("flame", evilComm)
	b.do("hovering", mouseMove(e.X+e.W/2, e.Y+e.H/2))
	if tip := eval[string](b, `document.getElementById("tip").textContent`); !strings.HasPrefix(tip, evilComm) {
		t.Errorf("tooltip %q", tip)
	}

	// Time: drag across the first second; the top table then has alpha
	// and not beta.
	b.show("v=time&f=0&event=cpu-clock")
	lanes := eval[frameRect](b, `(() => { const r = document.getElementById("lanes").getBoundingClientRect(); return {X: r.left, Y: r.top, W: r.width, H: r.height}; })()`)
	// The recording spans 1.905 s from its first sample; 0.95 s is x at 0.95/1.905.
	b.drag(lanes.X+1, lanes.Y+5, lanes.X+lanes.W*0.95/1.905, lanes.Y+5)
	b.waitReady()
	if h := eval[string](b, `location.hash`); !strings.Contains(h, "t1=") {
		t.Fatalf("dragging did not select a range: %s", h)
	}
	b.show(strings.Replace(eval[string](b, `location.hash.slice(1)`), "v=time", "v=top", 1))
	rows := eval[[]string](b, `[...document.querySelectorAll("#top tbody td.name")].map(e => e.firstChild.textContent)`)
	if !contains(rows, "alpha") || contains(rows, "beta") {
		t.Errorf("top table of the first second: %v", rows)
	}
	if r := eval[[]float64](b, `[Number(new URLSearchParams(location.hash.slice(1)).get("t0")), Number(new URLSearchParams(location.hash.slice(1)).get("t1"))]`); r[0] > 5e6 || !near(r[1], 0.95e9, 0.03e9) {
		t.Errorf("selected %v ns, want 0 to 0.95 s", r)
	}
	if chip := eval[string](b, `document.getElementById("timerange").textContent`); !strings.HasPrefix(chip, "time ") {
		t.Errorf("time chip %q", chip)
	}

	// Diff: beta grew (red), alpha shrank (blue).
	b.show("v=diff&f=1&base=0&event=cpu-clock")
	for name, want := range map[string]string{"beta": "red", "alpha": "blue"} {
		var f frameRect
		for _, x := range b.frames("diff") {
			if x.Name == name && x.W > 20 {
				f = x
			}
		}
		rgb := eval[[]int](b, pixelAt(f.X+2, f.Y+2))
		if got := hue(rgb); got != want {
			t.Errorf("diff: %s is %v (%s), want %s", name, rgb, got, want)
		}
	}
	b.check()
}

// TestExportOffline opens an export from a file: every inlined view works
// with no server, and nothing is requested.
func TestExportOffline(t *testing.T) {
	s := New([]string{"base.data", "new.data"}, []*model.Profile{synth(30), synth(90)})
	path := filepath.Join(t.TempDir(), "export.html")
	if err := s.ExportFile(path); err != nil {
		t.Fatal(err)
	}
	page, _ := os.ReadFile(path)
	if strings.Contains(string(page), evilComm) {
		t.Errorf("the export holds %q unescaped", evilComm)
	}
	b := newBrowser(t, "file://")
	b.open("file://" + path + "#v=flame&f=0")
	b.clickFrame("flame", "work")
	if z := b.frame("flame", "work"); !near(z.W, b.frame("flame", "all").W, 1) {
		t.Errorf("export: zoom gave work %.1f px", z.W)
	}
	for _, v := range []string{"v=top&f=0", "v=sandwich&f=0&fn=work", "v=time&f=0", "v=diff&f=1&base=0", "v=fields&f=0"} {
		b.show(v)
		if txt := b.text(); strings.Contains(txt, "this export holds") {
			t.Errorf("%s: not in the export", v)
		}
	}
	b.show("v=top&f=0&comm=app")
	if !strings.Contains(b.text(), "run sonde serve") {
		t.Errorf("a filtered view in an export does not say it needs the server")
	}
	b.check()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
