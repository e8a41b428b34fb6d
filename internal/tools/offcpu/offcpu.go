// Package offcpu measures where threads block (offcputime) and, with waker
// tracking, who woke them from where (offwaketime): a BPF program on
// sched_switch and sched_waking sums blocked time per stack in the kernel.
// Results become a model.Profile whose periods are nanoseconds blocked, so
// report, flame graph and pprof views apply unchanged.
package offcpu

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/sonde-dev/sonde/internal/collect/bpfmaps"
	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/collect/cgroup"
	"github.com/sonde-dev/sonde/internal/collect/perf"
	"github.com/sonde-dev/sonde/internal/collect/runctl"
	"github.com/sonde-dev/sonde/internal/collect/unwind"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/symbolize"
	"github.com/sonde-dev/sonde/internal/symbolize/builder"
)

// Options configure a run.
type Options struct {
	Pid       int
	Cgroup    *cgroup.Target // only blocks of its tasks (nil: every task)
	NoInterp  bool           // no interpreter frames (CPython) in user stacks
	PerThread bool
	User      bool
	Kernel    bool
	Wakers    bool
	MinBlock  time.Duration
	MaxBlock  time.Duration
	States    uint32 // bit per task state; 0x100 = running (preempted); 0 = any
	Duration  time.Duration
	Version   string
	// Only keeps the blocked time of these tasks (--comm): applied as the
	// stacks are read, so the profile, every output formed from it and
	// the completeness of its stacks count the same blocks.
	Only model.Tasks
	// Command, when set, is run and traced (Pid must be 0): it is held
	// before its exec until the programs and its tables are in place.
	Command []string
	// NoLines: the output shows no source lines (no data file is
	// written), so none are read.
	NoLines bool
	// Interval, when set, ends a report every Interval: OnInterval gets
	// the blocked time of that interval, and the maps start over.
	Interval   time.Duration
	OnInterval func(*Result)
}

// Errors counted by the program (each counter tag names its member of
// enum offcpu_error, bpfskel.Counters).
type Errors struct {
	StackFailures uint64 `json:"stack_failures" counter:"OFFCPU_ERR_STACK"`
	MapFull       uint64 `json:"lost_map_full" counter:"OFFCPU_ERR_FULL"`
}

// Result of a run.
type Result struct {
	Profile *model.Profile
	Errors  Errors
	Attach  string // "tp_btf" or "raw_tp"
	// Stacks says how complete the blocked threads' user stacks are,
	// weighted by blocked ns; WakerStacks the same of their wakers' (with
	// Wakers).
	Stacks, WakerStacks unwind.Completeness
	// Exited and ExitCode: the command (Options.Command) ended, with this
	// status, before the run did.
	Exited   bool
	ExitCode int
}

// ParseStates turns "S,D" style lists into the program's state mask.
func ParseStates(s string) (uint32, error) {
	if s == "" {
		return 0, nil
	}
	var m uint32
	for _, c := range s {
		switch c {
		case 'R':
			m |= 0x100 // preempted while runnable
		case 'S':
			m |= 0x1 // TASK_INTERRUPTIBLE
		case 'D':
			m |= 0x2 // TASK_UNINTERRUPTIBLE
		case 'T':
			m |= 0x4 | 0x8
		case 'I':
			m |= 0x402 // TASK_IDLE
		case ',', ' ':
		default:
			return 0, fmt.Errorf("unknown state %q (R, S, D, T, I)", string(c))
		}
	}
	return m, nil
}

// Run measures until the duration passes, ctx ends or a signal arrives.
func Run(ctx context.Context, o Options) (*Result, error) {
	maxB := uint64(o.MaxBlock)
	if maxB == 0 {
		maxB = ^uint64(0)
	}
	hooks := []bpfskel.Hook{bpfskel.BTFTracepoint("sched_switch", offcpuProgTpBtfSchedSwitch, offcpuProgRawSchedSwitch)}
	if o.Wakers {
		hooks = append(hooks, bpfskel.BTFTracepoint("sched_waking", offcpuProgTpBtfSchedWaking, offcpuProgRawSchedWaking))
	}
	var maps offcpuMaps
	t := bpfskel.Tool{
		Name: "off-CPU analysis", Spec: loadOffcpu, Maps: &maps, Hooks: hooks,
		Command: o.Command, PidConst: offcpuVarTargetPid, Cgroup: o.Cgroup,
		Consts: map[string]any{
			offcpuVarTargetPid: uint32(o.Pid), offcpuVarPerThread: o.PerThread, offcpuVarUserStacks: o.User, offcpuVarKernelStacks: o.Kernel,
			offcpuVarTrackWakers: o.Wakers, offcpuVarMinBlockNs: uint64(o.MinBlock), offcpuVarMaxBlockNs: maxB, offcpuVarStateMask: o.States,
		},
	}
	// Wakers of a traced process are other processes: with -p, tables
	// are loaded up front for the target and on demand for the rest.
	only := o.Pid
	if o.Wakers {
		only = 0
	}
	var ld *unwind.Loader
	if o.User {
		ld = unwind.Wire(&t, o.Pid, nil)
	} else {
		ld = unwind.WireOff(&t, nil) // kernel stacks only (-K): no walker
	}
	ld.NoInterp = o.NoInterp
	ld.Only = only
	s, done, err := ld.OpenKept(t)
	if err != nil {
		return nil, err
	}
	defer done()
	if s.Pid() != 0 {
		o.Pid = s.Pid() // the command's: reports name it as their target
	}
	sym := symbolize.DefaultWith(!o.NoLines)
	if o.Interval > 0 {
		// Every interval names the same processes' frames: keep the
		// objects open between them.
		sym = symbolize.NewRepeated(symbolize.Kept{Budget: 16 << 20, Idle: 3, Memo: 4096}, !o.NoLines)
	}
	iv := bpfskel.NewDrainedIntervals(func(start time.Time, d time.Duration) (func() (*Result, error), error) {
		entries, errs, err := drain(&maps)
		if err != nil {
			return nil, err
		}
		return func() (*Result, error) {
			return build(&maps, ld, o, s.Mode(), start, d, sym, entries, errs)
		}, nil
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

// drained is one entry read from the blocked-time map.
type drained struct {
	key offcpuOffcpuKey
	ns  uint64
}

// drain reads and deletes every entry of the blocked-time map, and the
// error counters: an interval's blocked time is what was drained, and
// what blocks meanwhile is the next one's.
func drain(m *offcpuMaps) ([]drained, Errors, error) {
	var out []drained
	var errs Errors
	err := bpfmaps.Drain(m.Blocked, func(key offcpuOffcpuKey, ns uint64) {
		out = append(out, drained{key, ns})
	})
	if err != nil {
		return nil, errs, fmt.Errorf("reading blocked time: %w", err)
	}
	if err := m.Errors.Read(&errs); err != nil {
		return nil, errs, fmt.Errorf("reading the error counters: %w", err)
	}
	return out, errs, nil
}

// build names the drained entries' stacks and makes the report.
func build(m *offcpuMaps, ld *unwind.Loader, o Options, attach string, start time.Time, elapsed time.Duration, sym *symbolize.Symbolizer, entries []drained, errs Errors) (*Result, error) {
	res := &Result{Attach: attach, Errors: errs, Stacks: unwind.Completeness{Unit: "ns"}, WakerStacks: unwind.Completeness{Unit: "ns"}}
	b := builder.New()
	b.Symbolizer = sym
	b.Python = ld.PythonNames() // read while the processes ran
	kbuf := make([]uint64, perf.MaxStack)
	var ubuf [unwind.MaxFrames]uint64
	restore := ld.Restorer(b)
	stackLocs := func(pid uint32, ustack uint64, kstack int32) []int32 {
		restore(pid)
		us, _ := ld.Stack(ustack, &ubuf)
		return b.StackLocs(pid, bpfmaps.Stack(m.Stacks, kstack, kbuf), us.PCs)
	}
	for _, e := range entries {
		key, ns := e.key, e.ns
		comm := bpfmaps.CString(key.Comm[:])
		if !o.Only.Keep(model.Thread{Pid: int32(key.Pid), Tid: int32(key.Tid), Comm: comm}) {
			continue
		}
		tid := key.Tid
		if !o.PerThread {
			tid = key.Pid
		}
		b.SetComm(tid, comm)
		if o.User {
			if us, ok := ld.Stack(key.UserStack, &ubuf); ok {
				res.Stacks.Add(ld.FileOf, key.Pid, us, ns)
			}
			if us, ok := ld.Stack(key.WakerUserStack, &ubuf); ok && o.Wakers && key.WakerPid != 0 {
				res.WakerStacks.Add(ld.FileOf, key.WakerPid, us, ns)
			}
		}
		blocked := stackLocs(key.Pid, key.UserStack, key.KernelStack)
		locs := blocked
		if o.Wakers {
			// One chain, leaf first: the waker's comm, its stack from the
			// root down, a separator, then the blocked thread's stack.
			waker := stackLocs(key.WakerPid, key.WakerUserStack, key.WakerKernelStack)
			locs = nil
			wc := bpfmaps.CString(key.WakerComm[:])
			if wc == "" {
				wc = "[unknown waker]"
			}
			locs = append(locs, b.SyntheticLoc(wc))
			for i := len(waker) - 1; i >= 0; i-- {
				locs = append(locs, waker[i])
			}
			locs = append(locs, b.SyntheticLoc("--"))
			locs = append(locs, blocked...)
		}
		b.SampleLocs(key.Pid, tid, locs, ns)
	}
	event := "offcpu"
	if o.Wakers {
		event = "wakeup"
	}
	meta := model.Meta{
		Event: event, Callchain: true, Arch: runtime.GOARCH, SondeVersion: o.Version,
		StartUnixNS: start.UnixNano(), DurationNS: uint64(elapsed.Nanoseconds()), Lost: res.Errors.MapFull,
		Unwinder: "bpf-tables", Unit: "ns",
	}
	var warn []string
	if res.Errors.StackFailures > 0 {
		warn = append(warn, fmt.Sprintf("%d stack walks failed (stack map full or hash collisions)", res.Errors.StackFailures))
	}
	res.Stacks.Tables = ld.Sources()
	if pw := ld.PythonWarning(); pw != "" {
		warn = append(warn, pw)
	}
	res.Profile = b.FinishLive(meta, o.Pid, o.User, &res.Stacks, warn...)
	res.Profile.Meta.Target = model.FilteredTarget(res.Profile.Meta.Target, o.Only)
	res.Profile.TrimTracing()
	return res, nil
}
