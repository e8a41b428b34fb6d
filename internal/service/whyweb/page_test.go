package whyweb

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/sonde-dev/sonde/internal/model/jsonout"
	"github.com/sonde-dev/sonde/internal/testutil"
	"github.com/sonde-dev/sonde/internal/tools/why"
)

// whyJSON is the part of `why --json` the page is checked against.
type whyJSON struct {
	Findings []struct {
		Kind     string  `json:"kind"`
		Share    float64 `json:"share"`
		Function string  `json:"function"`
		Text     string  `json:"text"`
		Root     string  `json:"root"`
		Threads  []struct {
			TID int `json:"tid"`
		} `json:"threads"`
		Chain []struct {
			TID  int    `json:"tid"`
			Comm string `json:"comm"`
		} `json:"chain"`
	} `json:"findings"`
	Threads []struct {
		TID    int    `json:"tid"`
		Comm   string `json:"comm"`
		WallNS uint64 `json:"wall_ns"`
	} `json:"threads"`
	Timeline struct {
		EdgesNS []uint64 `json:"edges_ns"`
		Threads []struct {
			TID         int      `json:"tid"`
			Comm        string   `json:"comm"`
			OnCPUNS     []uint64 `json:"on_cpu_ns"`
			RunnableNS  []uint64 `json:"runnable_ns"`
			ThrottledNS []uint64 `json:"throttled_ns"`
			BlockedNS   []uint64 `json:"blocked_ns"`
		} `json:"threads"`
	} `json:"timeline"`
}

// pageNode is a node of the chain graph as the page drew it.
type pageNode struct {
	Role string `json:"role"`
	TID  string `json:"tid"`
	Comm string `json:"comm"`
}

// runWhyWeb runs `sonde why -p pid -d 2 --json -o FILE --web` on the
// seed-004 server and returns its JSON output (from FILE: -o is checked
// too) and the URL it serves.
func runWhyWeb(t *testing.T) (whyJSON, string) {
	_, bin := testutil.Workload(t, "whyserver", []string{"whyserver.c"}, "-pthread")
	srv := testutil.StartReady(t, bin, "4", "20")
	out := filepath.Join(t.TempDir(), "why.json")
	cmd := exec.Command(testutil.Sonde(t), "why", "-p", strconv.Itoa(srv.Cmd.Process.Pid), "-d", "2", "--json", "-o", out, "--web")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGINT) // the page serves until Ctrl-C
		if err := cmd.Wait(); err != nil {
			t.Errorf("sonde why --web after Ctrl-C: %v", err)
		}
		if stdout.Len() > 0 {
			t.Errorf("with -o, standard output has %q", stdout.String())
		}
	})
	// The report is written before the URL is told.
	served := regexp.MustCompile(`serving the findings at (http://\S+)`)
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if m := served.FindStringSubmatch(sc.Text()); m != nil {
			go func() { // drain, so sonde never blocks on a full pipe
				for sc.Scan() {
				}
			}()
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatalf("the -o file: %v", err)
			}
			var doc whyJSON
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatalf("decoding why's JSON from -o %s: %v", out, err)
			}
			return doc, m[1]
		}
		t.Logf("sonde: %s", sc.Text())
	}
	t.Fatal("sonde why --web ended without serving")
	return whyJSON{}, ""
}

// TestWhyPage: a real `why --web` run's page, in Chromium, shows the
// findings of the same run's --json output: the top finding's text and
// share, its chain's nodes (the waiting threads, every link's thread, the
// root), and a budget bar per thread that adds up to its wall time.
func TestWhyPage(t *testing.T) {
	testutil.RequirePrivileged(t)
	chromium := testutil.RequireTool(t, "chromium", "chromium")
	doc, url := runWhyWeb(t)
	checkPage(t, chromium, doc, url)
}

// TestWhyPageSynthetic is TestWhyPage's check on a made-up report, without
// root: a chain of two links, a thread whose blocked time no reason claims.
func TestWhyPageSynthetic(t *testing.T) {
	chromium := testutil.RequireTool(t, "chromium", "chromium")
	rep := synthetic()
	h, err := Handler(rep)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	var b bytes.Buffer
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var doc whyJSON
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	checkPage(t, chromium, doc, srv.URL+"/")
}

func synthetic() *why.Report {
	w := jsonout.Task{PID: 10, TID: 11, Comm: "worker"}
	r := &why.Report{Run: jsonout.Run{Command: "why", Target: "process id '10'", DurationNS: 3e9},
		Budget: why.Budget{WallNS: 6e9, OnCPUNS: 1e9, RunnableNS: 5e8, BlockedNS: 4.5e9, ByReason: map[string]uint64{"net": 4e9, "sleep": 3e8}},
		Threads: []why.Thread{
			{Task: w, WallNS: 3e9, OnCPUNS: 1e8, RunnableNS: 1e8, BlockedNS: 2.8e9, ByReason: map[string]uint64{"net": 2.8e9}},
			{Task: jsonout.Task{PID: 10, TID: 12, Comm: "responder"}, WallNS: 3e9, OnCPUNS: 9e8, RunnableNS: 4e8, BlockedNS: 1.7e9, ByReason: map[string]uint64{"net": 1.2e9, "sleep": 3e8}},
		},
		Findings: []why.Finding{{Kind: "net", Share: 0.4667, Text: "thread worker (11) spent 46.7% <of> the target's time in poll", DurationNS: 2.8e9, Count: 30,
			Threads: []jsonout.Task{w}, Function: "resolve_peer", Call: "poll", Root: "sleep",
			Frames: []why.Frame{{Sym: "do_sys_poll", Kernel: true}, {Sym: "poll", DSO: "libc.so.6"}, {Sym: "resolve_peer", DSO: "whyserver"}},
			Chain: []why.Link{
				{Task: jsonout.Task{PID: 10, TID: 12, Comm: "responder"}, Share: 0.9, Reason: "net", Frames: []why.Frame{{Sym: "sendto"}}},
				{Task: jsonout.Task{PID: 20, TID: 21, Comm: "peer \"x\""}, Share: 1, Reason: "sleep", WaitNS: 2e7, WaitFrames: []why.Frame{{Sym: "usleep"}}},
			},
			Latency: []why.Bucket{{LowNS: 65536000, HighNS: 131072000, Count: 30}}},
			{Kind: "cpu", Share: 0.15, Text: "responder ran on a CPU", Root: "cpu"}},
	}
	poll := []why.Frame{{Sym: "do_sys_poll", Kernel: true}, {Sym: "poll", DSO: "libc.so.6"}, {Sym: "resolve_peer", DSO: "whyserver"}, {Sym: "main", DSO: "whyserver"}}
	r.Findings[0].AddStack("worker", poll, 2.5e9)
	r.Findings[0].AddStack("worker", append(poll[:3:3], why.Frame{Sym: "loop", DSO: "whyserver"}, poll[3]), 3e8)
	r.Findings[1].AddStack("responder", []why.Frame{{Sym: "answer_query", DSO: "whyserver"}}, 9e8)
	// Three slices of 1 s; each thread's lists add up to its wall time.
	r.Timeline = &why.Timeline{EdgesNS: []uint64{0, 1e9, 2e9, 3e9}, Threads: []why.ThreadStates{
		{Task: w, OnCPUNS: []uint64{1e8, 0, 0}, RunnableNS: []uint64{0, 1e8, 0}, ThrottledNS: []uint64{0, 0, 0}, BlockedNS: []uint64{9e8, 9e8, 1e9}},
		{Task: jsonout.Task{PID: 10, TID: 12, Comm: "responder"}, OnCPUNS: []uint64{3e8, 3e8, 3e8}, RunnableNS: []uint64{2e8, 1e8, 1e8}, ThrottledNS: []uint64{0, 0, 0}, BlockedNS: []uint64{5e8, 6e8, 6e8}},
	}}
	return r
}

// checkPage loads url in Chromium and checks it shows doc.
func checkPage(t *testing.T, chromium string, doc whyJSON, url string) {
	t.Helper()
	if len(doc.Findings) == 0 {
		t.Fatal("why found nothing")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	var mu sync.Mutex
	var problems []string // exceptions the page threw
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithListener(func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok {
			mu.Lock()
			problems = append(problems, e.ExceptionDetails.Text)
			mu.Unlock()
		}
	}))
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 60*time.Second)
	defer cancelT()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("opening %s: %v", url, err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.body && document.body.dataset.ready === "1"`,
		chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
		t.Fatalf("the page did not render: %v", err)
	}
	text := evalPage[string](t, ctx, `document.querySelector('#findings li[data-rank="1"] .text').textContent`)
	share := evalPage[string](t, ctx, `document.querySelector('#findings li[data-rank="1"] .share').textContent`)
	ranks := evalPage[int](t, ctx, `document.querySelectorAll('#findings li.finding').length`)
	nodes := evalPage[[]pageNode](t, ctx, `[...document.querySelectorAll('#detail svg.chain g.node')].map(g => ({role: g.dataset.role, tid: g.dataset.tid, comm: g.dataset.comm}))`)
	// Each thread's bar: its parts' ns, summed.
	bars := evalPage[map[string]float64](t, ctx, `Object.fromEntries([...document.querySelectorAll('#threads tr[data-tid]')].map(r => [r.dataset.tid,
		[...r.querySelectorAll('.seg')].reduce((a, s) => a + Number(s.dataset.ns), 0)]))`)
	checkFlame(t, ctx, doc)
	checkTimeline(t, ctx, doc)
	mu.Lock()
	if len(problems) > 0 {
		t.Errorf("the page threw: %v", problems)
	}
	mu.Unlock()
	f := doc.Findings[0]
	t.Logf("page: %d findings, finding 1 %s %q; chain nodes %+v", ranks, share, text, nodes)
	if ranks != len(doc.Findings) {
		t.Errorf("%d findings on the page, %d in the JSON", ranks, len(doc.Findings))
	}
	if text != f.Text {
		t.Errorf("finding 1 on the page %q, in the JSON %q", text, f.Text)
	}
	if want := fmt.Sprintf("%.1f%%", 100*f.Share); share != want {
		t.Errorf("finding 1's share on the page %s, in the JSON %s (%v)", share, want, f.Share)
	}
	if len(f.Chain) == 0 || f.Root == "" {
		t.Fatalf("finding 1 (%s) has no chain in the JSON: nothing to check the graph against", f.Kind)
	}
	if want := len(f.Chain) + 2; len(nodes) != want {
		t.Fatalf("the chain graph has %d nodes, want %d (waiters, %d links, root)", len(nodes), want, len(f.Chain))
	}
	if nodes[0].Role != "waiters" || nodes[len(nodes)-1].Role != "root" {
		t.Errorf("graph from %s to %s, want from the waiters to the root", nodes[0].Role, nodes[len(nodes)-1].Role)
	}
	for i, l := range f.Chain {
		n := nodes[i+1]
		if n.Role != "link" || n.TID != strconv.Itoa(l.TID) || n.Comm != l.Comm {
			t.Errorf("chain node %d: %+v, the JSON's link %d is %s (tid %d)", i+1, n, i+1, l.Comm, l.TID)
		}
	}
	if len(bars) != len(doc.Threads) {
		t.Errorf("%d thread bars, %d threads in the JSON", len(bars), len(doc.Threads))
	}
	for _, th := range doc.Threads {
		got := bars[strconv.Itoa(th.TID)]
		if d := got - float64(th.WallNS); d > 0.01*float64(th.WallNS) || -d > 0.01*float64(th.WallNS) {
			t.Errorf("tid %d's bar adds up to %.0f ns, its wall time is %d", th.TID, got, th.WallNS)
		}
	}
}

// checkFlame: finding 1's flame graph is drawn, its roots the names of the
// finding's threads, and its function among its frames.
func checkFlame(t *testing.T, ctx context.Context, doc whyJSON) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`(() => { const f = document.querySelector('#detail iframe.flame'); return !!f && f.dataset.loaded === "1"; })()`,
		chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
		t.Fatalf("finding 1's flame graph did not load: %v", err)
	}
	names := evalPage[[]string](t, ctx, `[...document.querySelector('#detail iframe.flame').contentDocument.querySelectorAll('#frames g.frame')].map(g => g.dataset.name)`)
	height := evalPage[float64](t, ctx, `document.querySelector('#detail iframe.flame').getBoundingClientRect().height`)
	f := doc.Findings[0]
	t.Logf("flame graph of finding 1: %d frames drawn, %.0f px high", len(names), height)
	has := map[string]bool{}
	for _, n := range names {
		has[n] = true
	}
	comms := map[int]string{}
	for _, th := range doc.Threads {
		comms[th.TID] = th.Comm
	}
	for _, th := range f.Threads {
		if c := comms[th.TID]; !has[c] {
			t.Errorf("the flame graph has no frame for the finding's thread %s (tid %d): %v", c, th.TID, names)
		}
	}
	if f.Function != "" && !has[f.Function] {
		t.Errorf("the flame graph has no frame %s (the finding's function): %v", f.Function, names)
	}
	if height < 100 {
		t.Errorf("the flame graph's frame is %.0f px high", height)
	}
}

// checkTimeline: a timeline row per thread of the JSON's timeline, named
// as it names it, whose slices add up to the thread's lists there and,
// within 1%, to its wall time.
func checkTimeline(t *testing.T, ctx context.Context, doc whyJSON) {
	t.Helper()
	type row struct {
		Comm   string  `json:"comm"`
		Slices int     `json:"slices"`
		NS     float64 `json:"ns"`
	}
	rows := evalPage[map[string]row](t, ctx, `Object.fromEntries([...document.querySelectorAll('#timeline tr[data-tid]')].map(r => [r.dataset.tid,
		{comm: r.cells[1].textContent, slices: r.querySelectorAll('.slice').length, ns: [...r.querySelectorAll('.seg')].reduce((a, s) => a + Number(s.dataset.ns), 0)}]))`)
	tl := doc.Timeline
	if len(tl.Threads) == 0 {
		t.Fatal("no timeline in the JSON")
	}
	if len(rows) != len(tl.Threads) {
		t.Errorf("%d timeline rows, %d threads in the JSON's timeline", len(rows), len(tl.Threads))
	}
	walls := map[int]uint64{}
	for _, th := range doc.Threads {
		walls[th.TID] = th.WallNS
	}
	for _, th := range tl.Threads {
		r, ok := rows[strconv.Itoa(th.TID)]
		var sum uint64
		for i := range th.OnCPUNS {
			sum += th.OnCPUNS[i] + th.RunnableNS[i] + th.ThrottledNS[i] + th.BlockedNS[i]
		}
		t.Logf("timeline tid %d (%s): %d slices, %.0f ns on the page, %d in the JSON, wall %d", th.TID, th.Comm, r.Slices, r.NS, sum, walls[th.TID])
		if !ok || r.Comm != th.Comm || r.Slices != len(tl.EdgesNS)-1 {
			t.Errorf("tid %d (%s): row %+v, want %d slices", th.TID, th.Comm, r, len(tl.EdgesNS)-1)
			continue
		}
		if r.NS != float64(sum) {
			t.Errorf("tid %d: the page's slices add up to %.0f ns, the JSON's to %d", th.TID, r.NS, sum)
		}
		if w := float64(walls[th.TID]); math.Abs(float64(sum)-w) > 0.01*w {
			t.Errorf("tid %d: the timeline adds up to %d ns, its wall time is %.0f", th.TID, sum, w)
		}
	}
}

func evalPage[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}
