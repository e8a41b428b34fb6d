// Package runqlat measures run-queue latency — how long runnable tasks wait
// for a CPU — from sched_wakeup, sched_wakeup_new and sched_switch, with the
// distribution kept in the kernel (tp_btf, falling back to raw_tp).
package runqlat

import (
	"context"
	"fmt"
	"time"

	"github.com/cilium/ebpf"

	"github.com/sonde-dev/sonde/internal/collect/bpfmaps"
	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/collect/cgroup"
	"github.com/sonde-dev/sonde/internal/model/histogram"
)

// Options configure a run.
type Options struct {
	Pid      int
	Cgroup   *cgroup.Target // only its tasks (nil: every task)
	Split    bpfskel.Split
	Duration time.Duration
	Interval time.Duration
	// OnInterval receives each interval's distributions.
	OnInterval func(map[uint32]*histogram.Hist)
}

// Result holds a distribution per group (0 when not split).
type Result struct {
	Groups map[uint32]*histogram.Hist
	Counts
	Elapsed time.Duration
	Attach  string
}

// Counts are the program's counters (each tag names its member of enum
// runqlat_counter, bpfskel.Counters).
type Counts struct {
	Switches uint64 `counter:"RUNQLAT_SWITCHES"` // tasks switched in
	Unknown  uint64 `counter:"RUNQLAT_UNKNOWN"`  // ... whose wait began before tracing (not in the distributions)
}

// Run measures until the duration passes, ctx ends or a signal arrives.
func Run(ctx context.Context, o Options) (*Result, error) {
	var maps runqlatMaps
	s, err := bpfskel.Open(bpfskel.Tool{
		Name: "run-queue latency", Spec: loadRunqlat, Maps: &maps, Cgroup: o.Cgroup,
		Consts: map[string]any{runqlatVarTargetPid: uint32(o.Pid), runqlatVarSplit: uint32(o.Split)},
		Hooks: []bpfskel.Hook{
			bpfskel.BTFTracepoint("sched_wakeup", runqlatProgTpBtfWakeup, runqlatProgRawWakeup),
			bpfskel.BTFTracepoint("sched_wakeup_new", runqlatProgTpBtfWakeupNew, runqlatProgRawWakeupNew),
			bpfskel.BTFTracepoint("sched_switch", runqlatProgTpBtfSwitch, runqlatProgRawSwitch),
		},
	})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	read := func(reset bool) (map[uint32]*histogram.Hist, error) { return bpfskel.ReadSlots(maps.Hist, reset) }
	if o.Split == bpfskel.SplitNone {
		read = (&arraySlots{m: maps.OneHist}).read
	}
	res := &Result{Attach: s.Mode()}
	if res.Groups, res.Elapsed, err = bpfskel.RunDrained(ctx, s, o.Duration, o.Interval, read, o.OnInterval, maps.Switches, &res.Counts); err != nil {
		return nil, err
	}
	return res, nil
}

// arraySlots reads the one distribution of a run not split (one_hist:
// log-linear slot → count). The kernel's counts only grow: an interval is
// what was added since the last, so no wait counted between a read and a
// reset is lost.
type arraySlots struct {
	m    *ebpf.Map
	prev []uint64
}

func (a *arraySlots) read(reset bool) (map[uint32]*histogram.Hist, error) {
	cur := make([]uint64, a.m.MaxEntries())
	err := bpfmaps.Each(a.m, func(i uint32, n uint64) {
		if int(i) < len(cur) {
			cur[i] = n
		}
	})
	if err != nil {
		return nil, fmt.Errorf("reading the histogram slots: %w", err)
	}
	out := map[uint32]*histogram.Hist{}
	for i, n := range cur {
		if i < len(a.prev) {
			n -= a.prev[i]
		}
		if n > 0 {
			if out[0] == nil {
				out[0] = &histogram.Hist{}
			}
			out[0].AddN(histogram.LogLinearValue(uint32(i)), n)
		}
	}
	if reset {
		a.prev = cur
	}
	return out, nil
}
