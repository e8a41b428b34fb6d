package web

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/view/report"
)

// Names made of markup: the page must show them as text.
const (
	evilComm = "<img src=x onerror=alert(1)>"
	evilFunc = "operator<< <a&b>"
)

// synth builds a recording with known shares: main→work→alpha 60 samples
// in the first second, main→work→beta 30 (nbeta) in the second, a thread
// named evilComm spending 10 in evilFunc→sys_write (kernel), and 5 in
// beta→deflate (libz.so). Every sample stands for 1 ms; a tracepoint event
// with a prio field is recorded on the evil thread.
func synth(nbeta int) *model.Profile {
	p := &model.Profile{
		Meta: model.Meta{Event: "cpu-clock", Freq: 1000, Callchain: true, DurationNS: 2e9, Target: "synthetic",
			Events: []model.EventInfo{{Name: "cpu-clock", Kind: "software"},
				{Name: "sched:sched_wakeup", Kind: "tracepoint", Fields: []model.Field{
					{Name: "common_type", Type: "unsigned short", Offset: 0, Size: 2},
					{Name: "prio", Type: "int", Offset: 8, Size: 4, Signed: true},
					{Name: "target_cpu", Type: "int", Offset: 12, Size: 4, Signed: true}}}}},
		Threads: []model.Thread{{Pid: 10, Tid: 10, Comm: "app"}, {Pid: 10, Tid: 11, Comm: evilComm}},
		DSOs:    []model.DSO{{Name: "/usr/bin/app"}, {Name: "[kernel.kallsyms]", Kind: model.DSOKernel}, {Name: "/lib/libz.so"}},
	}
	fn := map[string]int32{}
	for _, f := range []struct {
		name string
		dso  int32
	}{{"main", 0}, {"work", 0}, {"alpha", 0}, {"beta", 0}, {evilFunc, 0}, {"sys_write", 1}, {"deflate", 2}} {
		fn[f.name] = int32(len(p.Funcs))
		p.Funcs = append(p.Funcs, model.Func{Name: f.name, DSO: f.dso, Start: uint64(0x1000 * (len(p.Funcs) + 1)), Size: 0x100})
		p.Locs = append(p.Locs, model.Loc{DSO: f.dso, Addr: uint64(0x1000*len(p.Funcs) + 8), Func: fn[f.name], File: -1})
	}
	stack := func(names ...string) int32 { // leaf first
		var s []int32
		for _, n := range names {
			s = append(s, fn[n])
		}
		p.Stacks = append(p.Stacks, s)
		return int32(len(p.Stacks) - 1)
	}
	sa, sb := stack("alpha", "work", "main"), stack("beta", "work", "main")
	sk, sz := stack("sys_write", evilFunc, "main"), stack("deflate", "beta", "main")
	const t0, ms = 1_000_000_000, 1_000_000
	add := func(thread, st int32, n int, start, step uint64) {
		for i := 0; i < n; i++ {
			p.Samples = append(p.Samples, model.Sample{Time: start + uint64(i)*step, Thread: thread, Stack: st, Period: ms, CPU: uint32(i % 2)})
		}
	}
	add(0, sa, 60, t0, 16*ms)            // 0 … 0.95 s
	add(0, sb, nbeta, t0+1000*ms, 30*ms) // 1 s on
	add(1, sk, 10, t0+5*ms, 190*ms)
	add(0, sz, 5, t0+1500*ms, 10*ms)
	for i := 0; i < 8; i++ {
		raw := make([]byte, 16)
		binary.LittleEndian.PutUint32(raw[8:], uint32(100+i*3))
		binary.LittleEndian.PutUint32(raw[12:], uint32(i%2))
		p.Samples = append(p.Samples, model.Sample{Time: t0 + uint64(i)*200*ms, Thread: 1, Stack: sk, Period: 1, Event: 1, Raw: raw})
	}
	return p
}

func getJSON(t *testing.T, s *Server, path string, v any) int {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", path, nil)
	req.Host = "127.0.0.1:1"
	s.Handler().ServeHTTP(rec, req)
	if rec.Code == 200 && v != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	return rec.Code
}

func topOf(t *testing.T, s *Server, q string) map[string]TopRow {
	t.Helper()
	var d TopDoc
	if c := getJSON(t, s, "/api/top?"+q, &d); c != 200 {
		t.Fatalf("top %s: HTTP %d", q, c)
	}
	m := map[string]TopRow{}
	for _, r := range d.Rows {
		m[r.Name] = r
	}
	return m
}

func TestAggregates(t *testing.T) {
	s := New([]string{"a.data", "b.data"}, []*model.Profile{synth(30), synth(90)})
	const ms = 1_000_000
	top := topOf(t, s, "f=0&event=cpu-clock")
	for name, want := range map[string][2]uint64{"alpha": {60, 60}, "work": {0, 90}, "main": {0, 105}, "beta": {30, 35}, "deflate": {5, 5}, "sys_write": {10, 10}} {
		if r := top[name]; r.Self != want[0]*ms || r.Total != want[1]*ms {
			t.Errorf("top %s: self %d total %d, want %d %d ms", name, r.Self/ms, r.Total/ms, want[0], want[1])
		}
	}
	// The first second holds alpha and not beta.
	first := topOf(t, s, "f=0&t0=0&t1=1000000000")
	if first["alpha"].Self != 60*ms || first["beta"].Total != 0 {
		t.Errorf("first second: alpha %d, beta %d ms", first["alpha"].Self/ms, first["beta"].Total/ms)
	}
	for q, check := range map[string]func(map[string]TopRow) bool{
		"frames=user":                       func(m map[string]TopRow) bool { return m["sys_write"].Total == 0 && m[evilFunc].Self == 10*ms },
		"frames=kernel":                     func(m map[string]TopRow) bool { return m["main"].Total == 0 && m["sys_write"].Self == 10*ms },
		"hide=libz.so":                      func(m map[string]TopRow) bool { return m["deflate"].Total == 0 && m["beta"].Self == 35*ms },
		"merge=work":                        func(m map[string]TopRow) bool { return m["work"].Total == 0 && m["alpha"].Self == 60*ms },
		"focus=beta":                        func(m map[string]TopRow) bool { return m["alpha"].Total == 0 && m["beta"].Total == 35*ms },
		"comm=" + url.QueryEscape(evilComm): func(m map[string]TopRow) bool { return m["alpha"].Total == 0 && m["sys_write"].Self == 10*ms },
		"tid=10":                            func(m map[string]TopRow) bool { return m["sys_write"].Total == 0 && m["alpha"].Self == 60*ms },
		"cpu=1":                             func(m map[string]TopRow) bool { return m["alpha"].Self == 30*ms },
		"event=sched:sched_wakeup":          func(m map[string]TopRow) bool { return m["sys_write"].SelfSamples == 8 && m["alpha"].Total == 0 },
	} {
		if !strings.HasPrefix(q, "event=") {
			q += "&event=cpu-clock"
		}
		if m := topOf(t, s, "f=0&"+q); !check(m) {
			t.Errorf("%s: wrong top table %+v", q, m)
		}
	}
	// Sandwich: work's callers and callees with their shares.
	var sw SandwichDoc
	getJSON(t, s, "/api/sandwich?f=0&event=cpu-clock&fn=work", &sw)
	if len(sw.Callers.Nodes) != 3 || sw.Callers.Names[sw.Callers.Nodes[1][0]] != "main" || sw.Callers.Nodes[1][3] != 90*ms {
		t.Errorf("work's callers: %+v %v", sw.Callers.Names, sw.Callers.Nodes)
	}
	kids := map[string]uint64{}
	for _, n := range sw.Callees.Nodes {
		if n[2] == 1 {
			kids[sw.Callees.Names[n[0]]] = n[3]
		}
	}
	if kids["alpha"] != 60*ms || kids["beta"] != 30*ms || sw.Callees.TotalPeriod != 90*ms {
		t.Errorf("work's callees: %v", kids)
	}
	// Flame: values sum up, children sorted.
	var fl TreeDoc
	getJSON(t, s, "/api/flame?f=0&event=cpu-clock", &fl)
	if fl.TotalPeriod != 105*ms || fl.Samples != 105 || fl.Names[fl.Nodes[1][0]] != evilComm {
		t.Errorf("flame: total %d, first %q", fl.TotalPeriod, fl.Names[fl.Nodes[1][0]])
	}
	// Diff: beta grew from 35/105 to 95/165 of the total.
	var df TreeDoc
	getJSON(t, s, "/api/diff?base=0&f=1&event=cpu-clock", &df)
	for i, n := range df.Nodes {
		if df.Names[n[0]] == "beta" && n[2] == 4 {
			if want := 100 * (90.0/165 - 30.0/105); !near(df.Delta[i], want, 1e-9) {
				t.Errorf("beta's change %.3f points, want %.3f", df.Delta[i], want)
			}
		}
		if df.Names[n[0]] == "alpha" && df.Delta[i] >= 0 {
			t.Errorf("alpha shrank but its change is %.3f", df.Delta[i])
		}
	}
	// Histograms and fields of the tracepoint.
	var h HistDoc
	getJSON(t, s, "/api/hist?f=0", &h)
	if len(h.Histograms) != 2 || !strings.HasSuffix(h.Histograms[0].Name, "prio") {
		t.Errorf("histograms: %+v", h.Histograms)
	}
	var fd FieldsDoc
	getJSON(t, s, "/api/fields?f=0", &fd)
	if len(fd.Tables) != 1 || fd.Tables[0].Count != 8 || fd.Tables[0].Rows[1][5] != "103" || fd.Tables[0].Rows[1][1] != evilComm {
		t.Errorf("fields: %+v", fd.Tables)
	}
	var tm TimeDoc
	getJSON(t, s, "/api/time?f=0&event=cpu-clock", &tm)
	if len(tm.Lanes) != 2 || tm.Lanes[0].Samples != 95 || tm.Lanes[1].Comm != evilComm {
		t.Errorf("time lanes: %+v", tm.Lanes)
	}
}

// The search share the page shows is report's children share.
func TestSearchShareIsReports(t *testing.T) {
	p := synth(30)
	rep := report.Build(p, report.Options{Sort: []string{"sym"}, Children: true, Graph: "none"})
	s := New([]string{"a"}, []*model.Profile{p})
	var fl TreeDoc
	getJSON(t, s, "/api/flame?f=0", &fl)
	for _, e := range rep.Entries {
		var sum uint64
		for _, n := range fl.Nodes {
			if fl.Names[n[0]] == e.Keys["sym"] {
				sum += n[3] // no function here calls itself
			}
		}
		if got := 100 * float64(sum) / float64(fl.TotalPeriod); !near(got, e.ChildPct, 1e-9) {
			t.Errorf("%s: tree share %.4f%%, report %.4f%%", e.Keys["sym"], got, e.ChildPct)
		}
	}
}

// File parameters are indexes into the served inputs and nothing else;
// other hosts and bad filters are refused.
func TestRequestsCannotEscape(t *testing.T) {
	s := New([]string{"a"}, []*model.Profile{synth(30)})
	for _, q := range []string{"/api/flame?f=1", "/api/flame?f=-1", "/api/flame?f=../../etc/passwd", "/api/flame?f=/etc/passwd",
		"/api/flame?f=0x0", "/api/diff?f=0&base=7", "/api/nosuch?f=0", "/api/flame?f=0&pid=x", "/api/flame?f=0&t0=5&t1=2",
		"/api/flame?f=0&frames=all", "/api/sandwich?f=0"} {
		if c := getJSON(t, s, q, nil); c != http.StatusBadRequest {
			t.Errorf("%s: HTTP %d, want 400", q, c)
		}
	}
	for _, p := range []string{"/../../etc/passwd", "/app.js/../../go.mod", "/index.html", "/dist/app.js", "/ui.go"} {
		if c := getJSON(t, s, p, nil); c == 200 {
			t.Errorf("%s: served", p)
		}
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/api/meta", nil)
	req.Host = "attacker.example:80"
	s.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden {
		t.Errorf("Host attacker.example: HTTP %d, want 403", rec.Code)
	}
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "connect-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
}

// Off-CPU recordings weigh stacks by blocked time and carry its
// distribution.
func TestBlockedTime(t *testing.T) {
	p := synth(30)
	p.Meta.Unit = "ns"
	for i := range p.Samples {
		p.Samples[i].Period = 1000 << (i % 3) // 1, 2 and 4 µs
	}
	s := New([]string{"off.data"}, []*model.Profile{p})
	var h HistDoc
	getJSON(t, s, "/api/hist?f=0&event=cpu-clock", &h)
	if len(h.Histograms) == 0 || h.Histograms[0].Unit != "ns" {
		t.Fatalf("histograms %+v", h.Histograms)
	}
	var n uint64
	for _, b := range h.Histograms[0].Buckets {
		if b.Count > 0 && (b.Lo > 4000 || b.Hi < 1000) {
			t.Errorf("bucket %d-%d holds %d samples", b.Lo, b.Hi, b.Count)
		}
		n += b.Count
	}
	if n != 105 {
		t.Errorf("%d samples in the blocked-time histogram, want 105", n)
	}
	var fl TreeDoc
	getJSON(t, s, "/api/flame?f=0&event=cpu-clock", &fl)
	if fl.Unit != "ns" || fl.TotalPeriod == 0 {
		t.Errorf("flame unit %q total %d", fl.Unit, fl.TotalPeriod)
	}
}

// TestListenWarnsOffLoopback: serving on another address than loopback
// says, once, that the views are open to whoever reaches the port.
func TestListenWarnsOffLoopback(t *testing.T) {
	for addr, warned := range map[string]bool{"": false, "127.0.0.1:0": false, "[::1]:0": false, "0.0.0.0:0": true} {
		var out bytes.Buffer
		ln, err := Listen(addr, &out)
		if err != nil {
			if addr == "[::1]:0" {
				continue // no IPv6 here
			}
			t.Fatal(err)
		}
		ln.Close()
		got := strings.Contains(out.String(), "not loopback")
		if got != warned || strings.Count(out.String(), "\n") > 1 {
			t.Errorf("--addr %q: %q; want a warning: %v", addr, out.String(), warned)
		}
	}
}
