package continuous

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/sonde-dev/sonde/internal/model"
)

// testProfile: pid 10 (comm "srv") runs main→spin_a 3 samples and
// main→spin_b once; pid 20 (comm "db") has one frame without a symbol.
func testProfile() *model.Profile {
	p := &model.Profile{
		Meta:    model.Meta{StartUnixNS: 1e18, DurationNS: 1e10},
		Threads: []model.Thread{{Pid: 10, Tid: 10, Comm: "srv"}, {Pid: 10, Tid: 11, Comm: "worker"}, {Pid: 20, Tid: 20, Comm: "db"}},
		DSOs:    []model.DSO{{Name: "/usr/bin/srv", BuildID: "abcd"}, {Name: "/usr/bin/db"}},
		Funcs:   []model.Func{{Name: "main", DSO: 0}, {Name: "spin_a", DSO: 0}, {Name: "spin_b", DSO: 0}},
		Files:   []string{"srv.c"},
		Locs: []model.Loc{{DSO: 0, Addr: 0x10, Func: 0, File: 0, Line: 5}, {DSO: 0, Addr: 0x20, Func: 1, File: -1},
			{DSO: 0, Addr: 0x30, Func: 2, File: -1}, {DSO: 1, Addr: 0x40, Func: -1, File: -1}},
		Stacks: [][]int32{{1, 0}, {2, 0}, {3}},
	}
	for _, s := range []struct{ th, st int32 }{{0, 0}, {1, 0}, {0, 0}, {1, 1}, {2, 2}} {
		p.Samples = append(p.Samples, model.Sample{Thread: s.th, Stack: s.st, Period: 1e6})
	}
	return p
}

// leafShares sums each process's samples by leaf function name, reading
// the OTLP form back as a consumer would.
func leafShares(t *testing.T, ps pprofile.Profiles) map[string]map[string]int64 {
	t.Helper()
	d := ps.Dictionary()
	str := func(i int32) string { return d.StringTable().At(int(i)) }
	out := map[string]map[string]int64{}
	for i := 0; i < ps.ResourceProfiles().Len(); i++ {
		rp := ps.ResourceProfiles().At(i)
		exe, _ := rp.Resource().Attributes().Get("process.executable.name")
		m := map[string]int64{}
		out[exe.Str()] = m
		prof := rp.ScopeProfiles().At(0).Profiles().At(0)
		for j := 0; j < prof.Samples().Len(); j++ {
			s := prof.Samples().At(j)
			st := d.StackTable().At(int(s.StackIndex()))
			loc := d.LocationTable().At(int(st.LocationIndices().At(0)))
			fn := d.FunctionTable().At(int(loc.Lines().At(0).FunctionIndex()))
			m[str(fn.NameStrindex())] += s.Values().At(0)
		}
	}
	return out
}

func TestConvert(t *testing.T) {
	ps := Convert(testProfile(), "box", 1e6, func(pid int32) string {
		if pid == 10 {
			// A Kubernetes pod's container under containerd and systemd.
			return "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0a1b2c3d_1111_2222_3333_444455556666.slice/cri-containerd-" + strings.Repeat("ab", 32) + ".scope"
		}
		return "/system.slice/postgresql.service"
	})
	// Through the wire format, as a collector gets it.
	var m pprofile.ProtoMarshaler
	b, err := m.MarshalProfiles(ps)
	if err != nil {
		t.Fatal(err)
	}
	var u pprofile.ProtoUnmarshaler
	if ps, err = u.UnmarshalProfiles(b); err != nil {
		t.Fatal(err)
	}
	got := leafShares(t, ps)
	if got["srv"]["spin_a"] != 3 || got["srv"]["spin_b"] != 1 || got["db"]["[db]"] != 1 {
		t.Errorf("leaf counts = %v", got)
	}
	want := map[string]map[string]string{
		"srv": {"host.name": "box", "process.pid": "10", "service.name": "srv", "container.id": strings.Repeat("ab", 32), "k8s.pod.uid": "0a1b2c3d-1111-2222-3333-444455556666"},
		"db":  {"host.name": "box", "process.pid": "20", "service.name": "postgresql", "process.linux.cgroup": "/system.slice/postgresql.service"},
	}
	for i := 0; i < ps.ResourceProfiles().Len(); i++ {
		a := ps.ResourceProfiles().At(i).Resource().Attributes()
		exe, _ := a.Get("process.executable.name")
		for k, v := range want[exe.Str()] {
			if got, ok := a.Get(k); !ok || got.AsString() != v {
				t.Errorf("%s: %s = %q, want %q", exe.Str(), k, got.AsString(), v)
			}
		}
	}
}

// TestQueueDropsOldest: while the backend refuses, at most Queue periods
// wait and the oldest go; once it is back, the kept ones arrive in order.
func TestQueueDropsOldest(t *testing.T) {
	var up atomic.Bool
	var mu sync.Mutex
	var got []int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != profilesPath || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "wrong path or type", http.StatusNotFound)
			return
		}
		if !up.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		b, _ := io.ReadAll(r.Body)
		var u pprofile.ProtoUnmarshaler
		ps, err := u.UnmarshalProfiles(b)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, int(ps.ResourceProfiles().At(0).ScopeProfiles().At(0).Profiles().At(0).Period()))
		mu.Unlock()
	}))
	defer srv.Close()
	p, err := New(Options{OTLP: srv.URL, Queue: 3})
	if err != nil {
		t.Fatal(err)
	}
	p.retry = 20 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.send(ctx)
	for i := 1; i <= 5; i++ { // period i is tagged by its Period field
		p.enqueue(Convert(testProfile(), "box", int64(i), func(int32) string { return "" }))
	}
	time.Sleep(100 * time.Millisecond)
	if s := p.Stats(); s.Dropped != 2 || s.Failed == 0 {
		t.Errorf("while down: %+v, want 2 dropped and failures", s)
	}
	up.Store(true)
	for end := time.Now().Add(5 * time.Second); p.Stats().Sent < 3 && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 || got[0] != 3 || got[2] != 5 {
		t.Errorf("received periods %v, want [3 4 5]", got)
	}
}
