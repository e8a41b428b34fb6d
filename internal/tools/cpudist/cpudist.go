// Package cpudist measures how long tasks run on a CPU each time they are
// switched in (bcc's cpudist), or with OffCPU how long they stay off it,
// from sched_switch, with the distribution kept in the kernel and the
// exact count and total beside it.
package cpudist

import (
	"context"
	"fmt"
	"time"

	"github.com/cilium/ebpf"

	"github.com/sonde-dev/sonde/internal/collect/bpfmaps"
	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/model/histogram"
)

// Options configure a run.
type Options struct {
	Pid      int
	Split    bpfskel.Split
	OffCPU   bool // time off the CPU between runs, instead of on it
	Duration time.Duration
	Interval time.Duration
	// OnInterval receives each interval's distributions.
	OnInterval func(map[uint32]*Group)
}

// Group is one distribution with its exact count and total.
type Group struct {
	Hist  histogram.Hist
	Runs  uint64
	SumNS uint64
}

// Counts are the program's counters (each tag names its member of enum
// cpudist_counter).
type Counts struct {
	Unknown uint64 `counter:"CPUDIST_UNKNOWN"`  // runs begun before tracing (not counted)
	LostMap uint64 `counter:"CPUDIST_LOST_MAP"` // runs not counted: a map was full
}

// Result holds a distribution per group (0 when not split).
type Result struct {
	Groups map[uint32]*Group
	Counts
	Elapsed time.Duration
}

// Run measures until the duration passes or ctx ends.
func Run(ctx context.Context, o Options) (*Result, error) {
	var maps cpudistMaps
	s, err := bpfskel.Open(bpfskel.Tool{
		Name: "on-CPU time per run", Spec: loadCpudist, Maps: &maps,
		Consts: map[string]any{cpudistVarTargetPid: uint32(o.Pid), cpudistVarSplit: uint32(o.Split), cpudistVarOffcpu: o.OffCPU},
		Hooks:  []bpfskel.Hook{bpfskel.BTFTracepoint("sched_switch", cpudistProgTpBtfSwitch, cpudistProgRawSwitch)},
	})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	read := func(reset bool) (map[uint32]*Group, error) { return drain(maps.Hist, maps.Totals, reset) }
	if o.Split == bpfskel.SplitNone {
		one := &oneGroup{slots: bpfskel.NewArraySlots(maps.OneHist), total: maps.OneTotal}
		read = one.read
	}
	res := &Result{}
	if res.Groups, res.Elapsed, err = bpfskel.RunDrained(ctx, s, o.Duration, o.Interval, read, o.OnInterval, maps.Counts, &res.Counts); err != nil {
		return nil, err
	}
	return res, nil
}

// drain reads the slots and totals, deleting them when reset is set (a
// run ending between the two reads lands in the next interval's slots and
// this one's total, or the other way round: intervals can disagree by a
// run; the whole run cannot).
func drain(hist, totals *ebpf.Map, reset bool) (map[uint32]*Group, error) {
	out := map[uint32]*Group{}
	group := func(id uint32) *Group {
		if out[id] == nil {
			out[id] = &Group{}
		}
		return out[id]
	}
	hists, err := bpfskel.ReadSlots(hist, reset)
	if err != nil {
		return nil, err
	}
	for id, h := range hists {
		group(id).Hist = *h
	}
	err = bpfmaps.Read(totals, reset, func(id uint32, t cpudistCpudistTotal) {
		g := group(id)
		g.Runs, g.SumNS = t.Runs, t.SumNs
	})
	if err != nil {
		return nil, fmt.Errorf("reading the run lengths: %w", err)
	}
	return out, nil
}

// oneGroup reads the one distribution of a run not split: its slots
// (bpfskel.ArraySlots) and its totals, per CPU, as what was added since
// the last reset.
type oneGroup struct {
	slots *bpfskel.ArraySlots
	total *ebpf.Map
	prev  cpudistCpudistTotal
}

func (o *oneGroup) read(reset bool) (map[uint32]*Group, error) {
	hists, err := o.slots.Read(reset)
	if err != nil {
		return nil, err
	}
	var per []cpudistCpudistTotal
	if err := o.total.Lookup(uint32(0), &per); err != nil {
		return nil, fmt.Errorf("reading the run lengths: %w", err)
	}
	var cur cpudistCpudistTotal
	for _, t := range per {
		cur.Runs += t.Runs
		cur.SumNs += t.SumNs
	}
	out := map[uint32]*Group{}
	if h := hists[0]; h != nil {
		out[0] = &Group{Hist: *h, Runs: cur.Runs - o.prev.Runs, SumNS: cur.SumNs - o.prev.SumNs}
	}
	if reset {
		o.prev = cur
	}
	return out, nil
}
