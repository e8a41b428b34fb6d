package web

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdpinput "github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// -update-screenshots (or SONDE_UPDATE_SCREENSHOTS=1) writes docs/web/*.png
// from the browser tests; without it the tree stays clean.
var updateScreenshots = flag.Bool("update-screenshots", false, "write docs/web/*.png from the browser tests")

// browser is one headless Chromium tab that remembers what went wrong in
// the page (console errors, exceptions, dialogs) and every URL it asked for.
type browser struct {
	t        *testing.T
	ctx      context.Context
	mu       sync.Mutex
	problems []string
	requests []string
	origin   string // requests must stay here (or be data: / file:)
}

func newBrowser(t *testing.T, origin string) *browser {
	t.Helper()
	chromium := testutil.RequireTool(t, "chromium", "chromium")
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	b := &browser{t: t, origin: origin}
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithListener(b.event))
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	b.ctx = ctx
	return b
}

func (b *browser) event(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch e := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning {
			var args []string
			for _, a := range e.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			b.problems = append(b.problems, fmt.Sprintf("console.%s: %s", e.Type, strings.Join(args, " ")))
		}
	case *runtime.EventExceptionThrown:
		d := e.ExceptionDetails
		msg := d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		b.problems = append(b.problems, "exception: "+msg)
	case *log.EventEntryAdded:
		if e.Entry.Level == log.EntryLevelError || e.Entry.Level == log.EntryLevelWarning {
			b.problems = append(b.problems, fmt.Sprintf("log %s: %s %s", e.Entry.Level, e.Entry.Text, e.Entry.URL))
		}
	case *network.EventRequestWillBeSent:
		b.requests = append(b.requests, e.Request.URL)
	case *page.EventJavascriptDialogOpening:
		b.problems = append(b.problems, "dialog opened: "+e.Message)
		go chromedp.Run(b.ctx, func(ctx context.Context, t *chromedp.Target) (cdp.Empty, error) {
			return cdp.Call(ctx, t, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		})
	}
}

// check fails the test for anything the page got wrong so far: console
// errors, exceptions, dialogs, and requests that left the origin.
func (b *browser) check() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.problems {
		b.t.Errorf("page: %s", p)
	}
	for _, u := range b.requests {
		if !strings.HasPrefix(u, b.origin) && !strings.HasPrefix(u, "data:") {
			b.t.Errorf("a request left %s: %s", b.origin, u)
		}
	}
	b.problems = nil
}

func (b *browser) do(what string, a ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, a...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// waitReady waits until the page has rendered its current hash.
func (b *browser) waitReady() {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.body && document.body.dataset.ready === location.hash`,
		chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.t.Fatalf("the page did not render %v: %v", b.problems, err)
	}
}

// open loads url and waits for the first render.
func (b *browser) open(url string) {
	b.t.Helper()
	b.do("opening "+url, chromedp.Navigate(url))
	b.waitReady()
}

// show switches the page to a hash ("v=top&f=0") and waits for it.
func (b *browser) show(hash string) {
	b.t.Helper()
	eval[string](b, "location.hash = "+strconv.Quote(hash))
	b.waitReady()
}

type frameRect struct {
	Graph      string
	Name       string
	X, Y, W, H float64
}

func (b *browser) frames(graph string) []frameRect {
	var out []frameRect
	for _, f := range eval[[]frameRect](b, `window.sondeFrames()`) {
		if f.Graph == graph {
			out = append(out, f)
		}
	}
	return out
}

// frame is the widest frame named name: a function can stand at several
// paths (a few samples taken before a process's unwind tables were loaded
// end at a shorter root), and the one a user looks at is the main one.
func (b *browser) frame(graph, name string) frameRect {
	b.t.Helper()
	var best frameRect
	found := false
	for _, f := range b.frames(graph) {
		if f.Name == name && (!found || f.W > best.W) {
			best, found = f, true
		}
	}
	if !found {
		b.t.Fatalf("no frame %q in the %s graph", name, graph)
	}
	return best
}

// clickFrame scrolls a frame into view and clicks its middle.
func (b *browser) clickFrame(graph, name string) {
	b.t.Helper()
	f := b.frame(graph, name)
	eval[int](b, fmt.Sprintf(`window.scrollBy(0, %f - window.innerHeight / 2), 0`, f.Y))
	f = b.frame(graph, name)
	b.click(f.X+f.W/2, f.Y+f.H/2)
}

func (b *browser) click(x, y float64) {
	b.t.Helper()
	b.do("clicking", chromedp.MouseClickXY(x, y))
}

func (b *browser) drag(x0, y0, x1, y1 float64) {
	b.t.Helper()
	b.do("dragging", chromedp.MouseEvent(cdpinput.DispatchMouseEventTypeMousePressed, x0, y0, chromedp.ButtonLeft),
		chromedp.MouseEvent(cdpinput.DispatchMouseEventTypeMouseMoved, (x0+x1)/2, (y0+y1)/2, chromedp.ButtonLeft),
		chromedp.MouseEvent(cdpinput.DispatchMouseEventTypeMouseMoved, x1, y1, chromedp.ButtonLeft),
		chromedp.MouseEvent(cdpinput.DispatchMouseEventTypeMouseReleased, x1, y1, chromedp.ButtonLeft))
}

// text is the page's visible text.
func (b *browser) text() string { return eval[string](b, `document.body.innerText`) }

// shot writes docs/web/NAME.png when screenshots are asked for.
func (b *browser) shot(name string) {
	b.t.Helper()
	if !*updateScreenshots && os.Getenv("SONDE_UPDATE_SCREENSHOTS") == "" {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	path := filepath.Join(testutil.RepoRoot(), "docs", "web", name+".png")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func mouseMove(x, y float64) chromedp.Action[chromedp.Void] {
	return chromedp.MouseEvent(cdpinput.DispatchMouseEventTypeMouseMoved, x, y)
}

// pixelAt reads the canvas pixel under page point (x, y) as [r, g, b].
func pixelAt(x, y float64) string {
	// A copy made for reading, so the page's canvas is not read back.
	return fmt.Sprintf(`(() => { const c = document.elementFromPoint(%f, %f), r = c.getBoundingClientRect(), k = c.width / r.width;
		const o = document.createElement("canvas"); o.width = c.width; o.height = c.height;
		const g = o.getContext("2d", { willReadFrequently: true }); g.drawImage(c, 0, 0);
		return [...g.getImageData((%f - r.left) * k, (%f - r.top) * k, 1, 1).data.slice(0, 3)]; })()`, x, y, x, y)
}

// hue names a diff colour: red grew, blue shrank.
func hue(rgb []int) string {
	switch {
	case len(rgb) != 3:
		return "none"
	case rgb[0] > rgb[2]+40 && rgb[0] > rgb[1]+40:
		return "red"
	case rgb[2] > rgb[0]+40 && rgb[2] > rgb[1]+20:
		return "blue"
	}
	return "neutral"
}
