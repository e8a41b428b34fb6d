// Package offcpu measures where threads block (offcputime) and, with waker
// tracking, who woke them from where (offwaketime): a BPF program on
// sched_switch and sched_waking sums blocked time per stack in the kernel.
// Results become a model.Profile whose periods are nanoseconds blocked, so
// report, flame graph and pprof views apply unchanged.
package offcpu

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/sonde-dev/sonde/internal/bpfmaps"
	"github.com/sonde-dev/sonde/internal/builder"
	"github.com/sonde-dev/sonde/internal/host"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/perf"
	"github.com/sonde-dev/sonde/internal/runctl"
)

// Options configure a run.
type Options struct {
	Pid       int
	PerThread bool
	User      bool
	Kernel    bool
	Wakers    bool
	MinBlock  time.Duration
	MaxBlock  time.Duration
	States    uint32 // bit per task state; 0x100 = running (preempted); 0 = any
	Duration  time.Duration
	Version   string
	// Interval, when set, ends a report every Interval: OnInterval gets
	// the blocked time of that interval, and the maps start over.
	Interval   time.Duration
	OnInterval func(*Result)
}

// Errors counted by the program.
type Errors struct {
	StackFailures uint64 `json:"stack_failures"`
	MapFull       uint64 `json:"lost_map_full"`
}

// Result of a run.
type Result struct {
	Profile *model.Profile
	Errors  Errors
	Attach  string // "tp_btf" or "raw_tp"
}

type programs struct {
	Switch *ebpf.Program
	Waking *ebpf.Program
}

type btfObjs struct {
	Switch *ebpf.Program `ebpf:"tp_btf_sched_switch"`
	Waking *ebpf.Program `ebpf:"tp_btf_sched_waking"`
	offcpuMaps
}

type rawObjs struct {
	Switch *ebpf.Program `ebpf:"raw_sched_switch"`
	Waking *ebpf.Program `ebpf:"raw_sched_waking"`
	offcpuMaps
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
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("raising the locked-memory limit for BPF maps: %w", err)
	}
	maxB := uint64(o.MaxBlock)
	if maxB == 0 {
		maxB = ^uint64(0)
	}
	set := map[string]any{
		"target_pid": uint32(o.Pid), "per_thread": o.PerThread, "user_stacks": o.User, "kernel_stacks": o.Kernel,
		"track_wakers": o.Wakers, "min_block_ns": uint64(o.MinBlock), "max_block_ns": maxB, "state_mask": o.States,
	}
	load := func(objs any) error {
		spec, err := loadOffcpu()
		if err != nil {
			return err
		}
		for n, v := range set {
			if err := spec.Variables[n].Set(v); err != nil {
				return fmt.Errorf("setting %s: %w", n, err)
			}
		}
		return spec.LoadAndAssign(objs, nil)
	}
	res := &Result{}
	var maps *offcpuMaps
	var links []link.Link
	defer func() {
		for _, l := range links {
			l.Close()
		}
	}()
	// Prefer tp_btf (typed arguments); fall back to raw_tp.
	var bo btfObjs
	errBTF := load(&bo)
	if errBTF == nil {
		defer bo.Switch.Close()
		defer bo.Waking.Close()
		defer bo.offcpuMaps.Close()
		maps, res.Attach = &bo.offcpuMaps, "tp_btf"
		for _, p := range []*ebpf.Program{bo.Switch, bo.Waking} {
			if p == bo.Waking && !o.Wakers {
				continue
			}
			l, err := link.AttachTracing(link.TracingOptions{Program: p})
			if err != nil {
				errBTF = err
				break
			}
			links = append(links, l)
		}
	}
	if errBTF != nil {
		for _, l := range links {
			l.Close()
		}
		links = nil
		var ro rawObjs
		if err := load(&ro); err != nil {
			return nil, loadError(err, errBTF)
		}
		defer ro.Switch.Close()
		defer ro.Waking.Close()
		defer ro.offcpuMaps.Close()
		maps, res.Attach = &ro.offcpuMaps, "raw_tp"
		for name, p := range map[string]*ebpf.Program{"sched_switch": ro.Switch, "sched_waking": ro.Waking} {
			if name == "sched_waking" && !o.Wakers {
				continue
			}
			l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: name, Program: p})
			if err != nil {
				return nil, fmt.Errorf("attaching to %s: %w", name, err)
			}
			links = append(links, l)
		}
	}
	last := time.Now()
	runctl.Until(ctx, o.Duration, o.Interval, nil, func() {
		now := time.Now()
		r, err := collect(maps, o, &Result{Attach: res.Attach}, last, now.Sub(last))
		if err != nil {
			return
		}
		clearMap(maps.Blocked)
		last = now
		if o.OnInterval != nil {
			o.OnInterval(r)
		}
	})
	for _, l := range links {
		l.Close()
	}
	links = nil
	return collect(maps, o, res, last, time.Since(last))
}

// clearMap deletes every key (interval mode starts each interval afresh).
func clearMap(m *ebpf.Map) {
	var keys []offcpuOffcpuKey
	var k offcpuOffcpuKey
	var v uint64
	it := m.Iterate()
	for it.Next(&k, &v) {
		keys = append(keys, k)
	}
	for _, k := range keys {
		m.Delete(k)
	}
}

func collect(m *offcpuMaps, o Options, res *Result, start time.Time, elapsed time.Duration) (*Result, error) {
	b := builder.New()
	var key offcpuOffcpuKey
	var ns uint64
	kbuf, ubuf := make([]uint64, perf.MaxStack), make([]uint64, perf.MaxStack)
	stackLocs := func(pid uint32, ustack, kstack int32) []int32 {
		return b.StackLocs(pid, bpfmaps.Stack(m.Stacks, kstack, kbuf), bpfmaps.Stack(m.Stacks, ustack, ubuf))
	}
	it := m.Blocked.Iterate()
	for it.Next(&key, &ns) {
		tid := key.Tid
		if !o.PerThread {
			tid = key.Pid
		}
		b.SetComm(tid, bpfmaps.CString(key.Comm[:]))
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
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("reading blocked time: %w", err)
	}
	res.Errors.StackFailures = bpfmaps.SumPerCPU(m.Errors, 0)
	res.Errors.MapFull = bpfmaps.SumPerCPU(m.Errors, 1)
	event := "offcpu"
	if o.Wakers {
		event = "wakeup"
	}
	meta := model.Meta{
		Event: event, Callchain: true, Target: "system-wide", Arch: runtime.GOARCH, SondeVersion: o.Version,
		StartUnixNS: start.UnixNano(), DurationNS: uint64(elapsed.Nanoseconds()), Lost: res.Errors.MapFull,
		Unwinder: "bpf-fp", Unit: "ns",
	}
	if o.Pid != 0 {
		meta.Target = fmt.Sprintf("pid %d", o.Pid)
	}
	host.Fill(&meta)
	if res.Errors.StackFailures > 0 {
		meta.Warnings = append(meta.Warnings, fmt.Sprintf("%d stack walks failed (stack map full or hash collisions)", res.Errors.StackFailures))
	}
	res.Profile = b.Finish(meta)
	trimBPFFrames(res.Profile)
	return res, nil
}

// trimBPFFrames drops the program's own frames (bpf_prog_…, bpf_trace_run…)
// from the top of kernel stacks walked inside the tracepoint.
func trimBPFFrames(p *model.Profile) {
	for i, st := range p.Stacks {
		out := st[:0:0]
		for _, loc := range st {
			n := p.FrameName(loc)
			if p.Kind(loc).IsKernel() && (strings.HasPrefix(n, "bpf_prog_") || strings.HasPrefix(n, "bpf_trace_run") || strings.HasPrefix(n, "__bpf_trace_") || strings.HasPrefix(n, "__traceiter_")) {
				continue
			}
			out = append(out, loc)
		}
		p.Stacks[i] = out
	}
}

func loadError(err, first error) error {
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		return fmt.Errorf("the kernel's verifier rejected the off-CPU program (tp_btf: %v): %w", first, err)
	}
	if errors.Is(err, unix.EPERM) {
		return fmt.Errorf("loading BPF: permission denied: need CAP_BPF and CAP_PERFMON (or root): %w", err)
	}
	return fmt.Errorf("loading the off-CPU program (tp_btf failed too: %v): %w", first, err)
}
