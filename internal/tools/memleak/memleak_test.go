package memleak

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/model/jsonout"
	"github.com/sonde-dev/sonde/internal/testutil"
)

// TestMain: the test binary is also the held child of the commands the
// tests start.
func TestMain(m *testing.M) { testutil.MainOrHeldChild(m) }

// leakBytes is what testdata/leak.c leaks: 5,000 blocks of 128 B from
// leak_one.
const leakBytes = 5000 * 128

func hasFrame(fs []jsonout.Frame, sym string) bool {
	return slices.ContainsFunc(fs, func(f jsonout.Frame) bool { return strings.HasPrefix(f.Sym, sym) })
}

// runLeak traces testdata/leak.c (built with extra flags) to its exit and
// returns what it never freed.
func runLeak(t *testing.T, o Options, cflags ...string) *Report {
	t.Helper()
	testutil.RequirePrivileged(t)
	bin := testutil.BuildC(t, t.TempDir(), "leak", []string{"leak.c"}, append([]string{"-O2"}, cflags...)...)
	o.Command = []string{bin}
	o.Duration = time.Minute
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Exited || res.ExitCode != 0 {
		t.Fatalf("the workload did not run to its end (exited %v, code %d)", res.Exited, res.ExitCode)
	}
	rep := NewReport(res, ReportOptions{Top: 10})
	t.Logf("%d calls, %d tracked, %d frees, %d missed frees, %d lost; %s", rep.Calls, rep.Tracked, rep.Frees, rep.MissedFrees, rep.MapFull, res.Sampling)
	if rep.MapFull > 0 || rep.StackFails > 0 {
		t.Errorf("%d allocations lost to full maps, %d stack walks failed", rep.MapFull, rep.StackFails)
	}
	return rep
}

// checkLeak wants the leak (within tol of its bytes) at leak_one's stack
// and nothing outstanding anywhere else. One allowance: a stack the
// unwinder itself reports truncated (a walk made while the process's
// libc table was still being built: on the busy test VM a handful of the
// first leaks, whatever the workload's warm-up) is the same call site cut
// short; it may hold at most 1% of the bytes, and the total must still
// be right.
func checkLeak(t *testing.T, rep *Report, tol float64, exactCount bool) {
	t.Helper()
	var at, cut, count uint64
	for _, s := range rep.Stacks {
		switch {
		case hasFrame(s.Frames, "leak_one") && hasFrame(s.Frames, "_start"):
			at += s.Bytes
			count += s.Count
		case hasFrame(s.Frames, "main") && !hasFrame(s.Frames, "_start"):
			cut += s.Bytes
			count += s.Count
			t.Logf("truncated stack: %d B in %d allocations at %v", s.Bytes, s.Count, s.Frames)
		default:
			t.Errorf("outstanding elsewhere: %d B in %d allocations at %v", s.Bytes, s.Count, s.Frames)
		}
	}
	if d := float64(at+cut)/leakBytes - 1; d > tol || d < -tol {
		t.Errorf("%d B outstanding at leak_one, want %d (±%.0f%%)", at+cut, leakBytes, 100*tol)
	}
	if exactCount && count != 5000 {
		t.Errorf("%d allocations outstanding at leak_one, want 5000", count)
	}
	var truncated uint64
	if rep.UserStacks != nil {
		truncated = rep.UserStacks.Total - rep.UserStacks.Complete
	}
	if cut > truncated || cut > leakBytes/100 {
		t.Errorf("%d B at cut-short stacks (the unwinder reports %d B truncated); want at most 1%% of %d", cut, truncated, leakBytes)
	}
}

// TestLeakEveryAllocation: with every allocation tracked (-s 1) the leak
// is exactly 640,000 B in 5,000 allocations at one stack, and the 200,000
// allocations freed through malloc, calloc, realloc, posix_memalign,
// aligned_alloc, memalign, valloc and reallocarray (large ones through
// mmap inside malloc) leave nothing.
func TestLeakEveryAllocation(t *testing.T) {
	rep := runLeak(t, Options{Every: 1})
	checkLeak(t, rep, 0, true)
	if rep.MissedFrees != 0 {
		t.Errorf("%d frees of untracked addresses: every allocation was made under tracing", rep.MissedFrees)
	}
	if rep.Calls < 205000 {
		t.Errorf("%d allocation calls seen, want at least 205,000", rep.Calls)
	}
	if !rep.NeverFreed {
		t.Error("the report at the command's exit does not say it is what was never freed")
	}
}

// TestLeakByteSampling: sampling small allocations with probability
// size/512 tracks about a quarter of the 128 B leaks, each standing for
// 512 B; the estimate is within 10% (4 standard deviations: the count
// sampled is binomial, n = 5000, p = 1/4, so its relative error is 2.4%).
func TestLeakByteSampling(t *testing.T) {
	rep := runLeak(t, Options{SampleBytes: 512})
	checkLeak(t, rep, 0.10, false)
	if rep.Tracked >= rep.Calls {
		t.Errorf("%d of %d calls tracked: sampling did not sample", rep.Tracked, rep.Calls)
	}
}

// TestLeakSymbolPrefix: the same program on its own allocator (t_malloc,
// t_free, …, testdata/leak.c -DPREFIX) traced with --symbol-prefix t_.
func TestLeakSymbolPrefix(t *testing.T) {
	rep := runLeak(t, Options{Prefix: "t_"}, "-DPREFIX")
	checkLeak(t, rep, 0, true)
	if !strings.Contains(rep.Allocator, "t_malloc") || strings.Contains(rep.Allocator, "libc") {
		t.Errorf("probed %q, want the program's t_ functions", rep.Allocator)
	}
}

// TestKernelPipes: a process holding 200 pipes, each with one byte
// written, holds in the kernel (from how pipes are built, fs/pipe.c):
// one page per pipe, allocated by the first write (anon_pipe_write) —
// exactly 200 × PAGE_SIZE, as no page is shared; and per pipe, in
// alloc_pipe_info, the pipe_inode_info (about 170 B, a 192 or 256 B slab
// object) and the array of 16 struct pipe_buffer (16 × 40 = 640 B, a 1 KiB
// slab object): between 200 × 1 KiB and 200 × (1 KiB + 256 B).
func TestKernelPipes(t *testing.T) {
	testutil.RequirePrivileged(t)
	const pipes = 200
	bin := testutil.BuildC(t, t.TempDir(), "pipes", []string{"pipes.c"})
	var mu sync.Mutex
	var best *Report
	res, err := Run(context.Background(), Options{Kernel: true, Command: []string{bin, "200", "1500"}, Duration: time.Minute,
		Interval: 400 * time.Millisecond, OnInterval: func(r *Result) {
			rep := NewReport(r, ReportOptions{})
			mu.Lock()
			if best == nil || rep.OutstandingBytes > best.OutstandingBytes {
				best = rep
			}
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Exited || res.ExitCode != 0 || best == nil {
		t.Fatalf("the workload did not run to its end under tracing (exited %v, code %d)", res.Exited, res.ExitCode)
	}
	var pages, info uint64
	for _, s := range best.Stacks {
		switch {
		case hasFrame(s.Frames, "allocate_slab"): // slab pages: shared by objects, not the pipe's own
		case hasFrame(s.Frames, "anon_pipe_write") || hasFrame(s.Frames, "pipe_write"):
			pages += s.Bytes
		case hasFrame(s.Frames, "alloc_pipe_info"):
			info += s.Bytes
		}
	}
	page := uint64(os.Getpagesize())
	t.Logf("pipe pages %d B, alloc_pipe_info %d B, %d B outstanding in all", pages, info, best.OutstandingBytes)
	if pages != pipes*page {
		t.Errorf("pipe buffer pages: %d B outstanding, want %d × %d = %d", pages, pipes, page, pipes*page)
	}
	if info < pipes*1024 || info > pipes*(1024+256) {
		t.Errorf("alloc_pipe_info: %d B outstanding, want %d to %d", info, pipes*1024, pipes*(1024+256))
	}
	if best.OutstandingBytes < pipes*(page+1024) {
		t.Errorf("%d B outstanding in all, less than the pipes' own %d", best.OutstandingBytes, pipes*(page+1024))
	}
}

// The Go counters name members of the C enum (no root: the object's BTF).
func TestCounterTags(t *testing.T) {
	if err := bpfskel.CheckCounters(loadMemleak, memleakMapCounters, &Counters{}); err != nil {
		t.Fatal(err)
	}
}
