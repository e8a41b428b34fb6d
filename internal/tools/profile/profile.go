// Package profile samples on-CPU stacks with a BPF perf_event program that
// counts (process, user stack, kernel stack) in the kernel: unlike record,
// no sample crosses to user space until the end, so the cost stays flat at
// high rates and on busy systems. The counts become a model.Profile that
// every view (report, flame graph, pprof) reads.
package profile

import (
	"context"
	"fmt"
	"github.com/sonde-dev/sonde/internal/collect/cgroup"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sonde-dev/sonde/internal/collect/bpfmaps"
	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/collect/perf"
	"github.com/sonde-dev/sonde/internal/collect/procfs"
	"github.com/sonde-dev/sonde/internal/collect/runctl"
	"github.com/sonde-dev/sonde/internal/collect/unwind"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/symbolize"
	"github.com/sonde-dev/sonde/internal/symbolize/builder"
)

// Options configure one profile run.
type Options struct {
	Freq      uint64
	Pid       int            // 0: system-wide
	Cgroup    *cgroup.Target // only samples of its tasks (nil: every task)
	NoInterp  bool           // no interpreter frames (CPython) in user stacks
	PerThread bool
	User      bool
	Kernel    bool
	Idle      bool
	CPUs      []int
	Duration  time.Duration
	Version   string
	// Interval, when set, ends a report every Interval: OnInterval gets
	// that interval's stacks and the counts start over.
	Interval   time.Duration
	OnInterval func(*Result)
	// Symbolizer names each report's frames; nil: a fresh symbolize.Default
	// per report. A long-lived one (symbolize.NewKept) keeps objects open
	// between intervals.
	Symbolizer *symbolize.Symbolizer
	// Command, when set, is run and profiled (Pid must be 0): it is held
	// before its exec until the sampler and its tables are in place.
	Command []string
	// Only keeps the samples of these tasks (--comm): applied as the
	// counts are read, so the profile, every output formed from it and
	// the completeness of its stacks count the same samples.
	Only model.Tasks
}

// Errors the BPF program counted; non-zero values mean incomplete data
// (each counter tag names its member of enum profile_error,
// bpfskel.Counters).
type Errors struct {
	UserStack   uint64 `json:"user_stack_failures" counter:"ERR_USER_STACK"`
	KernelStack uint64 `json:"kernel_stack_failures" counter:"ERR_KERNEL_STACK"`
	MapFull     uint64 `json:"samples_lost_map_full" counter:"ERR_COUNTS_FULL"`
}

// Result of a run.
type Result struct {
	Profile *model.Profile
	Errors  Errors
	Attach  string // "perf_event"
	// Stacks says how many samples have complete user stacks (weighted by
	// samples); Unwind is the walker's own view and the loader's work.
	Stacks unwind.Completeness
	Unwind Unwind
	// Exited and ExitCode: the command (Options.Command) ended, with this
	// status, before the run did.
	Exited   bool
	ExitCode int
}

// Unwind is what the user-stack walker and its table loader did.
type Unwind struct {
	Walker unwind.Counters `json:"walker"`
	Loader unwind.Stats    `json:"loader"`
}

// Run loads the program, samples until the duration passes, ctx ends or
// SIGINT/SIGTERM arrives, then reads the counts.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Freq == 0 {
		o.Freq = 49
	}
	var maps profileMaps
	// Stacks are read at the end, when a process may be gone: the
	// mappings of each process the walker meets are kept as its loader
	// reads them (sampler.keep).
	keeper := procfs.NewMapsKeeper()
	s, ld, err := open(&maps, sampler{hz: o.Freq, cpus: o.CPUs, pid: o.Pid, command: o.Command, cgroup: o.Cgroup, keep: keeper}, map[string]any{
		profileVarTargetPid: uint32(o.Pid), profileVarPerThread: o.PerThread,
		profileVarUserStacks: o.User, profileVarKernelStacks: o.Kernel, profileVarIncludeIdle: o.Idle,
		unwind.PythonOff: o.NoInterp,
	})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	defer ld.Stop()
	if s.Pid() != 0 {
		o.Pid = s.Pid() // the command's
	}
	if o.Pid != 0 {
		keeper.Keep(o.Pid)
	}
	// Stack ids may still be in use by later samples: only counts are reset.
	// The interval's stacks are read by then: processes that exited are
	// forgotten, so memory stays flat however long the run.
	clearCounts := bpfskel.ClearMap[profileProfileKey](maps.Counts)
	iv := bpfskel.NewIntervals(func(start time.Time, d time.Duration) (*Result, error) {
		return collect(&maps, ld, o, d, start, keeper)
	}, func() error {
		keeper.ForgetGone()
		ld.ForgetExited()
		ld.ForgetKeptStacks()
		return clearCounts()
	}, o.OnInterval).Follow(s)
	run, err := s.Run(ctx, runctl.Options{Duration: o.Duration, Interval: o.Interval, OnInterval: iv.Tick})
	if err != nil {
		return nil, err
	}
	r, err := iv.Final()
	if r != nil && len(o.Command) > 0 && run.Reason == runctl.Done {
		r.Exited, r.ExitCode = true, run.ExitCode
	}
	return r, err
}

// sampler is what open attaches: a cpu-clock event at hz on each of cpus
// (nil: every online CPU), with the user-stack walker's tables loaded for
// pid (0: for each process as the walker meets it), or command started
// held and sampled alone; only cgroup's tasks when set. leaf: only each
// user stack's leaf, no tables (top's). keep, when set, gets the mappings
// of every process the walker's loader reads (unwind.Loader.WatchMaps).
type sampler struct {
	hz      uint64
	cpus    []int
	pid     int
	command []string
	cgroup  *cgroup.Target
	leaf    bool
	keep    *procfs.MapsKeeper
}

func open(maps *profileMaps, sm sampler, consts map[string]any) (*bpfskel.Session, *unwind.Loader, error) {
	cpus := sm.cpus
	events := func() ([]int, error) {
		if cpus == nil {
			var err error
			if cpus, err = perf.OnlineCPUs(); err != nil {
				return nil, err
			}
		}
		ev, _ := perf.ParseEvent("cpu-clock")
		attr := perf.NewAttr(perf.AttrOptions{Event: ev, Freq: sm.hz, Disabled: true})
		attr.Bits &^= unix.PerfBitWatermark // no ring: the program consumes samples
		attr.Wakeup = 0
		if consts[profileVarIncludeIdle] != true {
			// The kernel skips the program on an idle CPU's ticks (the
			// program would drop them): half the runs of a profile of
			// one busy CPU in two.
			attr.Bits |= unix.PerfBitExcludeIdle
		}
		var fds []int
		for _, c := range cpus {
			a := attr
			fd, err := perf.Open(&a, -1, c, -1, ev)
			if err != nil {
				return fds, err
			}
			fds = append(fds, fd)
		}
		return fds, nil
	}
	t := bpfskel.Tool{
		Name: "BPF profiler", Spec: loadProfile, Maps: maps, Consts: consts,
		Hooks:   []bpfskel.Hook{bpfskel.PerfEventHook(profileProgDoSample, events)},
		Command: sm.command, PidConst: profileVarTargetPid, Cgroup: sm.cgroup,
	}
	var ld *unwind.Loader
	switch {
	case sm.leaf:
		ld = unwind.WireLeaf(&t, nil)
	case consts[profileVarUserStacks] == false:
		// Kernel stacks only (-K): the walker is not loaded at all.
		ld = unwind.WireOff(&t, nil)
	default:
		ld = unwind.Wire(&t, sm.pid, nil)
		// Keys are read at the end: the stacks map must not fill meanwhile.
		ld.KeepStacks()
		if sm.keep != nil {
			// Every process with a user stack is loaded when the walker
			// first meets it (a notice, not a poll), and reloaded when
			// it maps code later: its mappings are kept then. Without
			// the walker (-K) no user address is named.
			ld.WatchMaps(func(pid int, ms []procfs.Mapping) { sm.keep.Put(pid, ms) })
		}
	}
	s, err := ld.Open(t)
	if err != nil {
		return nil, nil, err
	}
	return s, ld, nil
}

func collect(objs *profileMaps, ld *unwind.Loader, o Options, elapsed time.Duration, start time.Time, keeper *procfs.MapsKeeper) (*Result, error) {
	b := builder.New()
	b.ReadMapsWith(keeper.Read)
	if ld != nil {
		b.Python = ld.PythonNames() // read while the processes ran
	}
	b.Symbolizer = o.Symbolizer
	res := &Result{Attach: string(bpfskel.PerfEvent)}
	period := uint64(time.Second) / o.Freq
	var key profileProfileKey
	var count uint64
	kbuf := make([]uint64, perf.MaxStack)
	var ubuf [unwind.MaxFrames]uint64
	restore := ld.Restorer(b)
	it := objs.Counts.Iterate()
	for it.Next(&key, &count) {
		comm := bpfmaps.CString(key.Comm[:])
		if !o.Only.Keep(model.Thread{Pid: int32(key.Pid), Tid: int32(key.Tid), Comm: comm}) {
			continue
		}
		restore(key.Pid)
		tid := key.Tid
		if !o.PerThread {
			tid = key.Pid
		}
		var user []uint64
		if o.User && key.Pid != 0 {
			us, ok := ld.Stack(key.UserStack, &ubuf)
			if ok {
				user = us.PCs
				res.Stacks.Add(ld.FileOf, key.Pid, us, count)
			} else if key.UserStack != 0 {
				// A key that names no stack: never expected (the walker
				// gives out keys of stored stacks only, and the loader
				// keeps what it takes out of the map), but counted.
				res.Stacks.Unwritten += count
			}
		}
		locs := b.StackLocs(key.Pid, bpfmaps.HashedStack(objs.Kstacks, key.KernelStack, kbuf), user)
		if len(locs) == 0 {
			continue
		}
		b.SetComm(tid, comm)
		// The kernel counted them: one stack, count samples.
		b.SampleLocsN(key.Pid, tid, locs, period, count)
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("reading stack counts: %w", err)
	}
	if err := objs.Errors.Read(&res.Errors); err != nil {
		return nil, fmt.Errorf("reading the error counters: %w", err)
	}
	meta := model.Meta{
		Event: "cpu-clock", Freq: o.Freq, Callchain: true,
		Arch: runtime.GOARCH, SondeVersion: o.Version, StartUnixNS: start.UnixNano(),
		DurationNS: uint64(elapsed.Nanoseconds()), Lost: res.Errors.MapFull, Unwinder: "bpf-tables",
	}
	res.Unwind = Unwind{Walker: ld.Counters(), Loader: ld.Stats()}
	res.Stacks.Tables = ld.Sources()
	// Samples whose user stack found the stack map full carry none.
	res.Stacks.Lost = res.Unwind.Walker.StacksFull
	res.Stacks.Total += res.Stacks.Lost + res.Stacks.Unwritten
	var warn []string
	if res.Errors.KernelStack > 0 {
		warn = append(warn, fmt.Sprintf("kernel stacks not stored: %d (stack map full)", res.Errors.KernelStack))
	}
	if pw := ld.PythonWarning(); pw != "" {
		warn = append(warn, pw)
	}
	res.Profile = b.FinishLive(meta, o.Pid, o.User, &res.Stacks, warn...)
	res.Profile.Meta.Target = model.FilteredTarget(res.Profile.Meta.Target, o.Only)
	return res, nil
}
