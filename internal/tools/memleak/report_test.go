package memleak

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/testutil"
)

// fakeResult holds 640 B in 5 allocations at malloc ← leak ← main, the
// kernel's tracing frames above a kmalloc at 100 B, and one stack whose
// allocations were all freed.
func fakeResult() *Result {
	p := &model.Profile{
		Meta:    model.Meta{DurationNS: 2e9, Unit: "bytes"},
		Threads: []model.Thread{{Pid: 10, Tid: 10, Comm: "srv"}},
		DSOs:    []model.DSO{{Name: "/usr/bin/srv", Kind: model.DSOUser}, {Name: "[kernel.kallsyms]", Kind: model.DSOKernel}},
		Funcs: []model.Func{{Name: "malloc", DSO: 0}, {Name: "leak", DSO: 0}, {Name: "main", DSO: 0},
			{Name: "bpf_prog_1234_kmalloc", DSO: 1}, {Name: "perf_trace_kmalloc", DSO: 1}, {Name: "__kmalloc", DSO: 1}},
		Locs: []model.Loc{{DSO: 0, Func: 0, File: -1}, {DSO: 0, Func: 1, File: -1}, {DSO: 0, Func: 2, File: -1},
			{DSO: 1, Func: 3, File: -1}, {DSO: 1, Func: 4, File: -1}, {DSO: 1, Func: 5, File: -1}},
		Stacks:  [][]int32{{0, 1, 2}, {3, 4, 5}},
		Samples: []model.Sample{{Thread: 0, Stack: 0, Period: 640}, {Thread: 0, Stack: 1, Period: 100}},
	}
	trimTracing(p)
	return &Result{Profile: p, Elapsed: 2 * time.Second, Exited: true, Sampling: SamplingText(Options{}), Source: "uprobes on libc",
		Rows:     []Row{{Pid: 10, Bytes: 640, Count: 5, Oldest: 1500 * time.Millisecond, Stack: 0}, {Pid: 10, Bytes: 100, Count: 1, Stack: 1}},
		Counters: Counters{Calls: 9, Tracked: 9, Frees: 3, MissedFrees: 1}}
}

func TestReportText(t *testing.T) {
	var b bytes.Buffer
	NewReport(fakeResult(), ReportOptions{Top: 1}).WriteText(&b)
	out := b.String()
	for _, want := range []string{
		"top 1 stacks of allocations never freed (the command exited):\n",
		"\t640 bytes in 5 allocations from stack, oldest 1.5s ago (srv 10)\n\t\tmalloc [srv]\n\t\tleak [srv]\n\t\tmain [srv]\n",
		"# memleak: 740 B in 6 allocations from 2 stacks outstanding after 2s\n",
		"# sampling: none: every allocation tracked\n",
		"# 9 allocation calls, 9 tracked, 3 tracked frees; 1 frees of untracked addresses",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "__kmalloc") {
		t.Errorf("text report shows stacks beyond --top 1:\n%s", out)
	}
}

func TestTrimTracing(t *testing.T) {
	r := NewReport(fakeResult(), ReportOptions{Top: 10})
	k := r.Stacks[1].Frames
	if len(k) != 1 || k[0].Sym != "__kmalloc" {
		t.Errorf("kernel stack %v, want the tracing frames gone: [__kmalloc]", k)
	}
}

func TestSamplingText(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{}, "none"},
		{Options{Every: 1}, "none"},
		{Options{Every: 10}, "every 10th allocation call per CPU; bytes and counts are estimates (×10)"},
		{Options{SampleBytes: 4096}, "by bytes: allocations of 4096 B or more all tracked, smaller ones with probability size/4096"},
	} {
		if got := SamplingText(c.o); !strings.HasPrefix(got, c.want) {
			t.Errorf("%+v: %q, want %q…", c.o, got, c.want)
		}
	}
}

// TestDefinedFuncs: the prefixed allocator of testdata/leak.c is found in
// the program, and libc's aliases are probed once.
func TestDefinedFuncs(t *testing.T) {
	bin := testutil.BuildC(t, t.TempDir(), "leakp", []string{"leak.c"}, "-O2", "-DPREFIX")
	var names []string
	for _, f := range definedFuncs(testutil.OpenELF(t, bin), "t_") {
		names = append(names, f.symbol)
	}
	if got := strings.Join(names, ","); got != "t_malloc,t_calloc,t_realloc,t_free" {
		t.Errorf("found %s, want t_malloc,t_calloc,t_realloc,t_free", got)
	}
	libc, err := findLibc(0)
	if err != nil {
		t.Skip(err)
	}
	a := &allocator{funcs: definedFuncs(testutil.OpenELF(t, libc), "")}
	if !a.has("malloc") || !a.has("free") || !a.has("mmap") {
		t.Errorf("%s: found %v, want at least malloc, free and mmap", libc, a.funcs)
	}
}

func TestOptionsCheck(t *testing.T) {
	for _, o := range []Options{
		{Pid: 1, Every: 2, SampleBytes: 10},
		{Pid: 1, SampleBytes: 1 << 32},
		{Kernel: true, Prefix: "je_"},
		{},
	} {
		if err := o.Check(); err == nil {
			t.Errorf("%+v: accepted", o)
		}
	}
	if err := (&Options{Kernel: true}).Check(); err != nil {
		t.Errorf("--kernel system-wide refused: %v", err)
	}
}

// Every entry point has its attach cookie in the program's enum memleak_fn,
// and no two share one (no root: the object's BTF).
func TestEntryPointCookies(t *testing.T) {
	seen := map[uint64]string{}
	for _, fn := range entryPoints {
		c, err := cookie(fn)
		if err != nil {
			t.Fatal(err)
		}
		if prev, ok := seen[c]; ok {
			t.Errorf("%s and %s share the cookie %d", prev, fn, c)
		}
		seen[c] = fn
	}
}
