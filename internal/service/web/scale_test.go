package web

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/format/datafile"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/service/load"
)

// bigProfile is a 1 M-sample recording of a program shaped like a real
// one: 8 threads over 10 s, a call tree of 3,000 functions in 20 objects
// whose stacks, 8 to 40 frames deep, share prefixes, and a skewed split of
// time (some paths far hotter than others).
func bigProfile(samples int) *model.Profile {
	r := rand.New(rand.NewPCG(1, 2))
	p := &model.Profile{Meta: model.Meta{Event: "cpu-clock", Freq: 100000, Callchain: true, DurationNS: 10e9, Target: "synthetic"}}
	for i := 0; i < 20; i++ {
		p.DSOs = append(p.DSOs, model.DSO{Name: fmt.Sprintf("/usr/lib/libbench%d.so", i)})
	}
	for i := 0; i < 3000; i++ {
		p.Funcs = append(p.Funcs, model.Func{Name: fmt.Sprintf("bench::module%d::function_%d", i%50, i), DSO: int32(i % 20), Start: uint64(i) << 12, Size: 4096})
		p.Locs = append(p.Locs, model.Loc{DSO: int32(i % 20), Addr: uint64(i)<<12 + 16, Func: int32(i), File: -1})
	}
	for i := 0; i < 8; i++ {
		p.Threads = append(p.Threads, model.Thread{Pid: 100, Tid: int32(100 + i), Comm: fmt.Sprintf("worker-%d", i)})
	}
	// 40,000 distinct stacks grown from a few roots, each frame chosen from
	// a handful of callees of its parent, so stacks share long prefixes.
	callee := func(parent int32, k int) int32 { return int32((int(parent)*7919 + k*104729) % 3000) }
	for len(p.Stacks) < 40000 {
		depth := 8 + r.IntN(33)
		st := make([]int32, depth)
		cur := int32(r.IntN(4))
		for d := depth - 1; d >= 0; d-- {
			st[d] = cur
			cur = callee(cur, int(r.ExpFloat64()*1.5)%6)
		}
		p.Stacks = append(p.Stacks, st)
	}
	for i := 0; i < samples; i++ {
		s := int32(float64(len(p.Stacks)) * r.Float64() * r.Float64() * r.Float64()) // skewed
		p.Samples = append(p.Samples, model.Sample{Time: 1e9 + uint64(i)*10_000, Thread: s % 8, CPU: uint32(i % 2), Stack: s, Period: 10_000})
	}
	return p
}

// TestWebScale (SONDE_WEB_SCALE=1; make bench runs it) serves a 1 M-sample
// recording with the sonde binary and measures in Chromium: first paint
// ≤ 1 s, a zoom ≤ 100 ms (Performance API), server peak RSS ≤ 2× the
// loaded model.
func TestWebScale(t *testing.T) {
	if os.Getenv("SONDE_WEB_SCALE") == "" {
		t.Skip("a measurement: set SONDE_WEB_SCALE=1 (make bench does)")
	}
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("SONDE_WEB_SCALE")); err == nil && v > 1 {
		n = v // a smaller run, to try the test
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "big.data")
	if err := datafile.WriteFile(path, bigProfile(n)); err != nil {
		t.Fatal(err)
	}
	// The model as every view loads it: its heap once loaded.
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	p, err := load.Profile(path, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	model := after.HeapAlloc - before.HeapAlloc
	runtime.KeepAlive(p)

	url, pid := startServe(t, dir, "-i", path)
	b := newBrowser(t, url)
	b.open(url + "#v=flame&f=0")
	paint := eval[float64](b, `performance.getEntriesByName("sonde-first-paint")[0].startTime`)
	nodes := eval[int](b, `window.sondeFrames().length`)
	// Zoom into the widest frame two levels down, five times over.
	var zoom float64
	for i := 0; i < 5; i++ {
		b.show(fmt.Sprintf("v=flame&f=0&i=%d", i))
		var best frameRect
		rootY := b.frame("flame", "all").Y
		for _, f := range b.frames("flame") {
			if near(f.Y, rootY-3*(f.H+1), 0.5) && f.W > best.W {
				best = f
			}
		}
		b.clickFrame("flame", best.Name)
		zoom = max(zoom, eval[float64](b, `performance.getEntriesByName("sonde-zoom").at(-1).duration`))
	}
	b.check()
	rss := peakRSS(t, pid)
	t.Logf("%d samples: first paint %.0f ms (≤ 1000), %d frames drawn, slowest zoom %.1f ms (≤ 100), server peak RSS %.0f MiB = %.2f× the %.0f MiB model (≤ 2)",
		n, paint, nodes, zoom, float64(rss)/(1<<20), float64(rss)/float64(model), float64(model)/(1<<20))
	if paint > 1000 {
		t.Errorf("first paint %.0f ms, want ≤ 1000", paint)
	}
	if zoom > 100 {
		t.Errorf("zoom %.1f ms, want ≤ 100", zoom)
	}
	if float64(rss) > 2*float64(model) {
		t.Errorf("server peak RSS %d bytes, over twice the model's %d", rss, model)
	}
}

// peakRSS is a process's VmHWM in bytes.
func peakRSS(t *testing.T, pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}
