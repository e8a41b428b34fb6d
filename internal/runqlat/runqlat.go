// Package runqlat measures run-queue latency — how long runnable tasks wait
// for a CPU — from sched_wakeup, sched_wakeup_new and sched_switch, with the
// distribution kept in the kernel (tp_btf, falling back to raw_tp).
package runqlat

import (
	"context"
	"fmt"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"

	"github.com/sonde-dev/sonde/internal/bpfmaps"
	"github.com/sonde-dev/sonde/internal/histogram"
	"github.com/sonde-dev/sonde/internal/runctl"
)

// Split says how distributions are kept apart.
type Split uint32

const (
	SplitNone Split = iota
	SplitPid
	SplitTid
)

// Options configure a run.
type Options struct {
	Pid      int
	Split    Split
	Duration time.Duration
	Interval time.Duration
	// OnInterval receives each interval's distributions.
	OnInterval func(map[uint32]*histogram.Hist)
}

// Result holds a distribution per group (0 when not split).
type Result struct {
	Groups map[uint32]*histogram.Hist
	// Switches counts tasks switched in; Unknown those whose wait began
	// before tracing (not in the distributions).
	Switches, Unknown uint64
	Elapsed           time.Duration
	Attach            string
}

type btfObjs struct {
	Wakeup    *ebpf.Program `ebpf:"tp_btf_wakeup"`
	WakeupNew *ebpf.Program `ebpf:"tp_btf_wakeup_new"`
	Switch    *ebpf.Program `ebpf:"tp_btf_switch"`
	runqlatMaps
}

type rawObjs struct {
	Wakeup    *ebpf.Program `ebpf:"raw_wakeup"`
	WakeupNew *ebpf.Program `ebpf:"raw_wakeup_new"`
	Switch    *ebpf.Program `ebpf:"raw_switch"`
	runqlatMaps
}

// SlotValue is a representative latency (ns) for a histogram slot.
func SlotValue(slot uint32) uint64 {
	if slot < 8 {
		return uint64(slot)
	}
	msb, mant := slot>>3, uint64(slot&7)
	lo := (8 + mant) << (msb - 3)
	return lo + (uint64(1)<<(msb-3))/2
}

// Run measures until the duration passes, ctx ends or a signal arrives.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("raising the locked-memory limit for BPF maps: %w", err)
	}
	load := func(objs any) error {
		spec, err := loadRunqlat()
		if err != nil {
			return err
		}
		if err := spec.Variables["target_pid"].Set(uint32(o.Pid)); err != nil {
			return err
		}
		if err := spec.Variables["split"].Set(uint32(o.Split)); err != nil {
			return err
		}
		return spec.LoadAndAssign(objs, nil)
	}
	res := &Result{Groups: map[uint32]*histogram.Hist{}}
	var links []link.Link
	defer func() {
		for _, l := range links {
			l.Close()
		}
	}()
	var maps *runqlatMaps
	var bo btfObjs
	err := load(&bo)
	if err == nil {
		defer bo.Wakeup.Close()
		defer bo.WakeupNew.Close()
		defer bo.Switch.Close()
		defer bo.runqlatMaps.Close()
		maps, res.Attach = &bo.runqlatMaps, "tp_btf"
		for _, p := range []*ebpf.Program{bo.Wakeup, bo.WakeupNew, bo.Switch} {
			l, lerr := link.AttachTracing(link.TracingOptions{Program: p})
			if lerr != nil {
				err = lerr
				break
			}
			links = append(links, l)
		}
	}
	if err != nil {
		for _, l := range links {
			l.Close()
		}
		links = nil
		var ro rawObjs
		if rerr := load(&ro); rerr != nil {
			return nil, fmt.Errorf("loading run-queue latency programs (tp_btf: %v): %w", err, rerr)
		}
		defer ro.Wakeup.Close()
		defer ro.WakeupNew.Close()
		defer ro.Switch.Close()
		defer ro.runqlatMaps.Close()
		maps, res.Attach = &ro.runqlatMaps, "raw_tp"
		for name, p := range map[string]*ebpf.Program{"sched_wakeup": ro.Wakeup, "sched_wakeup_new": ro.WakeupNew, "sched_switch": ro.Switch} {
			l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: name, Program: p})
			if err != nil {
				return nil, fmt.Errorf("attaching to %s: %w", name, err)
			}
			links = append(links, l)
		}
	}
	start := time.Now()
	var tickErr error
	runctl.Until(ctx, o.Duration, o.Interval, nil, func() {
		if o.OnInterval == nil || tickErr != nil {
			return
		}
		g, err := drain(maps.Hist, true)
		if err != nil {
			tickErr = err
			return
		}
		o.OnInterval(g)
	})
	if tickErr != nil {
		return nil, tickErr
	}
	for _, l := range links {
		l.Close()
	}
	links = nil
	res.Elapsed = time.Since(start)
	g, err := drain(maps.Hist, false)
	if err != nil {
		return nil, err
	}
	res.Groups = g
	res.Switches = bpfmaps.SumPerCPU(maps.Switches, 0)
	res.Unknown = bpfmaps.SumPerCPU(maps.Switches, 1)
	return res, nil
}

// drain reads the slots into histograms, deleting them when reset is set.
func drain(m *ebpf.Map, reset bool) (map[uint32]*histogram.Hist, error) {
	out := map[uint32]*histogram.Hist{}
	var k runqlatRunqlatKey
	var c uint64
	var keys []runqlatRunqlatKey
	it := m.Iterate()
	for it.Next(&k, &c) {
		h := out[k.Group]
		if h == nil {
			h = &histogram.Hist{}
			out[k.Group] = h
		}
		h.AddN(SlotValue(k.Slot), c)
		keys = append(keys, k)
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("reading run-queue latency: %w", err)
	}
	if reset {
		for _, k := range keys {
			m.Delete(k)
		}
	}
	return out, nil
}
