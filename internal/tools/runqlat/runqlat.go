// Package runqlat measures run-queue latency — how long runnable tasks wait
// for a CPU — from sched_wakeup, sched_wakeup_new and sched_switch, with the
// distribution kept in the kernel (tp_btf, falling back to raw_tp).
package runqlat

import (
	"context"
	"time"

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
		read = bpfskel.NewArraySlots(maps.OneHist).Read
	}
	res := &Result{Attach: s.Mode()}
	if res.Groups, res.Elapsed, err = bpfskel.RunDrained(ctx, s, o.Duration, o.Interval, read, o.OnInterval, maps.Switches, &res.Counts); err != nil {
		return nil, err
	}
	return res, nil
}
