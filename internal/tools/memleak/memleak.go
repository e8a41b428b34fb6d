// Package memleak finds memory allocated and not freed, by stack, as bcc's
// memleak does, on any kernel with uprobes: uprobes and uretprobes on an
// allocator's entry points (libc's by default, or a library or symbol
// prefix: jemalloc, tcmalloc, a program's own), or the kmem tracepoints for
// the kernel's allocations. Outstanding bytes and counts per stack are kept
// in the kernel as they change, so a report reads one row per stack for
// them; every tracked address keeps its size, time and stack so frees find
// their allocation and reports can say how old the oldest one is (one
// pass over the addresses per report).
package memleak

import (
	"context"
	"fmt"
	"github.com/sonde-dev/sonde/internal/collect/cgroup"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/cilium/ebpf"

	"github.com/sonde-dev/sonde/internal/collect/bpfmaps"
	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/collect/perf"
	"github.com/sonde-dev/sonde/internal/collect/runctl"
	"github.com/sonde-dev/sonde/internal/collect/unwind"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/symbolize"
	"github.com/sonde-dev/sonde/internal/symbolize/builder"
	"github.com/sonde-dev/sonde/internal/tools/cputime"
)

// Options configure a run.
type Options struct {
	Pid      int            // the process traced (user mode needs it or Command)
	Cgroup   *cgroup.Target // kernel mode: only allocations its tasks make
	NoInterp bool           // no interpreter frames (CPython) in user stacks
	Command  []string       // run this and trace it; the final report is what it never freed
	NoLines  bool           // the output shows no source lines (no data file): none are read
	Kernel   bool           // the kernel's allocations (kmem tracepoints), not an allocator's
	// Lib is the allocator's library or binary ("": libc, or with Prefix
	// the traced program itself); Prefix goes before every function name
	// ("je_", "tc_").
	Lib, Prefix string
	Every       uint32        // track every Nth allocation call (0, 1: all)
	SampleBytes uint64        // >0: sample by bytes with this mean
	Older       time.Duration // report only allocations at least this old
	Duration    time.Duration
	Interval    time.Duration
	OnInterval  func(*Result) // outstanding memory at each interval (cumulative)
	Version     string
	// MaxAllocs is how many outstanding allocations can be tracked at once
	// (0: 1,048,576 in user mode, 262,144 in kernel mode).
	MaxAllocs uint32
}

// Counters are what the program counted (each tag names its member of
// enum memleak_counter, bpfskel.Counters).
type Counters struct {
	Calls       uint64 `json:"allocation_calls" counter:"MEMLEAK_CALLS"`      // allocation calls seen (nested ones not counted)
	Tracked     uint64 `json:"tracked_allocations" counter:"MEMLEAK_SAMPLED"` // allocations sampled and tracked
	Frees       uint64 `json:"tracked_frees" counter:"MEMLEAK_FREES"`         // frees of tracked allocations
	MissedFrees uint64 `json:"missed_frees" counter:"MEMLEAK_MISSED_FREE"`    // free() of an untracked address
	MapFull     uint64 `json:"lost_map_full" counter:"MEMLEAK_MAP_FULL"`      // allocations not tracked: a map was full
	StackFails  uint64 `json:"stack_failures" counter:"MEMLEAK_STACK_FAIL"`   // stack walks that failed
}

// Row is what one stack of one process still holds.
type Row struct {
	Pid    uint32
	Bytes  uint64        // outstanding, estimated under sampling
	Count  uint64        // outstanding allocations, estimated under sampling
	Oldest time.Duration // age of the oldest tracked one
	Stack  int           // the row's sample in Profile
}

// Result is one report's data.
type Result struct {
	// Profile holds one sample per row, its period the row's bytes, so
	// flame graphs and data files weigh stacks by outstanding bytes.
	Profile  *model.Profile
	Rows     []Row // largest first
	Counters Counters
	Sampling string // how allocations were sampled, in words
	Source   string // what was probed: "uprobes on /lib/…/libc.so.6 (12 functions)", "kmem tracepoints"
	Elapsed  time.Duration
	Stacks   unwind.Completeness // user stacks, weighted by bytes
	Final    bool                // the run's last report
	Exited   bool                // the traced command has exited: rows were never freed
	ExitCode int                 // the command's, once Exited
}

// Run traces allocations until the duration passes, ctx ends, a signal
// arrives or the command exits, and returns what is still outstanding.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	var maps memleakMaps
	t := bpfskel.Tool{
		Name: "memory leak tracing", Spec: loadMemleak, Maps: &maps, Command: o.Command, PidConst: memleakVarTargetPid, Cgroup: o.Cgroup,
		// Counting starts once every probe is in and ends before any goes:
		// detaching uprobes takes seconds, not part of what was asked.
		Gate: memleakVarArmed,
		Consts: map[string]any{
			memleakVarTargetPid: uint32(o.Pid), memleakVarSampleEvery: max(o.Every, 1), memleakVarSampleBytes: o.SampleBytes,
			memleakVarPageSize: uint64(os.Getpagesize()), memleakVarUserStacks: !o.Kernel, memleakVarCountMissed: !o.Kernel,
		},
	}
	var source string
	if o.Kernel {
		t.Hooks = kernelHooks()
		source = "kmem tracepoints (kmalloc, kmem_cache_alloc, mm_page_alloc and their frees)"
	} else {
		a, err := findAllocator(o)
		if err != nil {
			return nil, err
		}
		if len(o.Command) > 0 {
			// The held command's pid filters the uprobes in the kernel:
			// no other process's allocator takes a trap.
			t.CommandHooks = a.hooks
		} else {
			t.Hooks = a.hooks(o.Pid)
		}
		source = a.String()
	}
	spec := t.Spec
	t.Spec = func() (*ebpf.CollectionSpec, error) {
		s, err := spec()
		if err == nil {
			sizeAllocs(s.Maps[memleakMapAllocs], o)
		}
		return s, err
	}
	var ld *unwind.Loader
	if !o.Kernel {
		ld = unwind.Wire(&t, o.Pid, func() unwind.Maps {
			return unwind.Maps{Rules: maps.UnwindRules, Rows: maps.UnwindRows, Procs: maps.UnwindProcs,
				Stacks: maps.UnwindStacks, Counters: maps.UnwindCounters, Notices: maps.UnwindNotices}
		})
		ld.NoInterp = o.NoInterp
	}
	s, err := bpfskel.Open(t)
	if err != nil {
		if ld != nil {
			ld.Stop()
		}
		return nil, err
	}
	defer s.Close()
	if ld != nil {
		defer ld.Stop()
	}
	if why := s.MultiFallback(); why != "" {
		source += " (a uprobe per function, slower to detach: " + why + ")"
	}
	c := &collector{m: &maps, ld: ld, o: o, source: source, clock: s, comms: map[uint32]string{}}
	if s.Pid() != 0 {
		c.o.Pid = s.Pid()
		c.comms[uint32(s.Pid())] = filepath.Base(o.Command[0])
	}
	run, err := s.Run(ctx, runctl.Options{Duration: o.Duration, Interval: o.Interval, OnInterval: func() error {
		r, err := c.collect(false)
		if err == nil && o.OnInterval != nil {
			o.OnInterval(r)
		}
		return err
	}})
	if err != nil {
		return nil, err
	}
	r, err := c.collect(true)
	if r != nil && run.Reason == runctl.Done {
		r.Exited, r.ExitCode = true, run.ExitCode
	}
	return r, err
}

func (o *Options) Check() error {
	if o.Every > 1 && o.SampleBytes > 0 {
		return fmt.Errorf("sample by calls or by bytes, not both")
	}
	if o.SampleBytes > 1<<31 {
		return fmt.Errorf("byte sampling mean %d is above 2 GiB", o.SampleBytes)
	}
	if o.Kernel && (o.Lib != "" || o.Prefix != "") {
		return fmt.Errorf("kernel allocations come from the kmem tracepoints: no library or prefix applies")
	}
	if !o.Kernel && o.Cgroup != nil {
		return fmt.Errorf("-G/--cgroup goes with --kernel: user allocations are traced in one process (-p PID or -- COMMAND)")
	}
	if !o.Kernel && o.Pid == 0 && len(o.Command) == 0 {
		return fmt.Errorf("user allocations need a process (-p PID or -- COMMAND): uprobes on every process's allocator would slow the whole system; --kernel traces the kernel's allocations system-wide")
	}
	if !o.Kernel && !unwind.Supported() {
		return fmt.Errorf("memleak reads allocator arguments and walks user stacks on amd64 and arm64 only, not %s", runtime.GOARCH)
	}
	return nil
}

// sizeAllocs sets how many allocations can be outstanding at once. User
// mode allocates entries as they are used (memory follows the leak);
// kernel mode preallocates, so the map's own allocations never call the
// kmalloc it traces.
func sizeAllocs(m *ebpf.MapSpec, o Options) {
	if m == nil {
		return
	}
	const noPrealloc = 1 // BPF_F_NO_PREALLOC
	m.MaxEntries = o.MaxAllocs
	if o.Kernel {
		if m.MaxEntries == 0 {
			m.MaxEntries = 1 << 18
		}
		return
	}
	if m.MaxEntries == 0 {
		m.MaxEntries = 1 << 20
	}
	m.Flags |= noPrealloc
}

func kernelHooks() []bpfskel.Hook {
	var hs []bpfskel.Hook
	for _, p := range []string{memleakProgKmalloc, memleakProgKmemCacheAlloc, memleakProgMmPageAlloc,
		memleakProgKfree, memleakProgKmemCacheFree, memleakProgMmPageFree, memleakProgMmPageFreeBatched} {
		hs = append(hs, bpfskel.TracepointHook("kmem", p, p))
	}
	return hs
}

// SamplingText says how allocations were sampled and what the figures are.
func SamplingText(o Options) string {
	switch {
	case o.SampleBytes > 0:
		return fmt.Sprintf("by bytes: allocations of %d B or more all tracked, smaller ones with probability size/%d; bytes and counts are estimates", o.SampleBytes, o.SampleBytes)
	case o.Every > 1:
		return fmt.Sprintf("every %dth allocation call per CPU; bytes and counts are estimates (×%d)", o.Every, o.Every)
	}
	return "none: every allocation tracked"
}

type collector struct {
	m      *memleakMaps
	ld     *unwind.Loader
	o      Options
	source string
	clock  bpfskel.Clock // when tracing began and, for the final report, ended
	comms  map[uint32]string
}

// at is the instant a report stands at, wall and CLOCK_MONOTONIC (the
// programs' clock): now while tracing, when tracing stopped for the final
// report (ages and the duration do not count the time since, the
// detaching and the reading).
func (c *collector) at(final bool) (time.Time, uint64) {
	now, mono := time.Now(), cputime.Now()
	if stop := c.clock.Stopped(); final && !stop.IsZero() {
		back := uint64(now.Sub(stop))
		return stop, mono - min(back, mono)
	}
	return now, mono
}

// collect reads the per-stack totals, and the tracked addresses for ages
// (and, with Older, for the totals of the old ones only).
func (c *collector) collect(final bool) (*Result, error) {
	now, mono := c.at(final)
	start := c.clock.Started()
	type agg struct {
		bytes, count int64
		oldest       uint64 // CLOCK_MONOTONIC ns of the oldest
	}
	rows := map[memleakMemleakStack]*agg{}
	olderNS := uint64(c.o.Older)
	var addr uint64
	var a memleakMemleakAlloc
	it := c.m.Allocs.Iterate()
	for it.Next(&addr, &a) {
		if olderNS > 0 && mono-a.Ts < olderNS {
			continue
		}
		g := rows[a.Where]
		if g == nil {
			g = &agg{oldest: a.Ts}
			rows[a.Where] = g
		}
		g.oldest = min(g.oldest, a.Ts)
		if olderNS > 0 {
			g.bytes += int64(a.Bytes)
			g.count += int64(a.Count)
		}
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("reading the tracked allocations: %w", err)
	}
	if olderNS == 0 {
		var k memleakMemleakStack
		var t memleakMemleakTotal
		it := c.m.Totals.Iterate()
		for it.Next(&k, &t) {
			if g := rows[k]; g != nil {
				g.bytes, g.count = t.Bytes, t.Count
			}
		}
		if err := it.Err(); err != nil {
			return nil, fmt.Errorf("reading the per-stack totals: %w", err)
		}
	}
	res := &Result{Sampling: SamplingText(c.o), Source: c.source, Elapsed: now.Sub(start), Final: final,
		Stacks: unwind.Completeness{Unit: "bytes"}}
	if c.ld != nil {
		res.Stacks.Tables = c.ld.Sources()
	}
	b := builder.New()
	b.Symbolizer = symbolize.DefaultWith(!c.o.NoLines)
	if c.ld != nil {
		b.Python = c.ld.PythonNames()
	}
	kbuf := make([]uint64, perf.MaxStack)
	var ubuf [unwind.MaxFrames]uint64
	restore := c.ld.Restorer(b)
	for k, g := range rows {
		if g.bytes <= 0 || g.count <= 0 {
			continue
		}
		restore(k.Pid)
		var user []uint64
		if c.ld != nil {
			if us, ok := c.ld.Stack(k.UserStack, &ubuf); ok {
				user = us.PCs
				res.Stacks.Add(c.ld.FileOf, k.Pid, us, uint64(g.bytes))
			}
		}
		b.SetComm(k.Pid, c.comm(k.Pid))
		locs := b.StackLocs(k.Pid, bpfmaps.Stack(c.m.Stacks, k.KernelStack, kbuf), user)
		b.SampleLocs(k.Pid, k.Pid, locs, uint64(g.bytes))
		res.Rows = append(res.Rows, Row{Pid: k.Pid, Bytes: uint64(g.bytes), Count: uint64((g.count + countOne/2) / countOne),
			Oldest: time.Duration(mono - min(g.oldest, mono)), Stack: len(res.Rows)})
	}
	if err := c.m.Counters.Read(&res.Counters); err != nil {
		return nil, err
	}
	meta := model.Meta{Event: "memleak", Callchain: true, Arch: runtime.GOARCH, SondeVersion: c.o.Version,
		StartUnixNS: start.UnixNano(), DurationNS: uint64(res.Elapsed), Lost: res.Counters.MapFull, Unit: "bytes"}
	if !c.o.Kernel {
		meta.Unwinder = "bpf-tables"
	}
	var warn []string
	if final && res.Counters.Calls == 0 && !c.o.Kernel {
		warn = append(warn, "no allocation call was seen: the process allocates through another allocator (--lib, --symbol-prefix) or did not allocate while traced")
	}
	if res.Counters.MapFull > 0 {
		warn = append(warn, fmt.Sprintf("%d allocations not tracked: a map was full (raise the limit or sample)", res.Counters.MapFull))
	}
	res.Profile = b.FinishLive(meta, c.o.Pid, false, nil, warn...)
	trimTracing(res.Profile)
	sortRows(res)
	return res, nil
}

const countOne = 1024 // COUNT_ONE in memleak.h

// comm names a process: from /proc while it runs, remembered after.
func (c *collector) comm(pid uint32) string {
	if n, ok := c.comms[pid]; ok {
		return n
	}
	n := "?"
	if pid == 0 {
		n = "[kernel]"
	} else if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil {
		n = strings.TrimSpace(string(b))
	}
	c.comms[pid] = n
	return n
}
