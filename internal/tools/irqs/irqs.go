// Package irqs measures the time spent in hard interrupt handlers (bcc's
// hardirqs) and in softirq vectors (bcc's softirqs), from the irq
// tracepoints: exact counts and totals per interrupt, and a distribution
// of each handler's runs when asked.
package irqs

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/cilium/ebpf"

	"github.com/sonde-dev/sonde/internal/collect/bpfmaps"
	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/model/histogram"
)

// Options configure a run.
type Options struct {
	Soft     bool // softirq vectors, not hard interrupt handlers
	Dist     bool // also a distribution of each one's runs
	Duration time.Duration
	Interval time.Duration
	// OnInterval receives each interval's interrupts.
	OnInterval func([]Irq)
}

// Irq is one interrupt (or softirq vector) with its runs.
type Irq struct {
	Irq   uint32 // irq number, or softirq vector
	Name  string // the handler's name (irqaction.name), or the vector's (net_rx)
	Count uint64
	SumNS uint64
	Hist  *histogram.Hist // with Dist
}

// Counts are the program's counters (each tag names its member of enum
// irqs_counter).
type Counts struct {
	Unknown uint64 `counter:"IRQS_UNKNOWN"`  // exits without their entry (entered before tracing)
	LostMap uint64 `counter:"IRQS_LOST_MAP"` // runs not counted: a map was full
}

// Result of a run.
type Result struct {
	Irqs []Irq
	Counts
	Elapsed time.Duration
}

// SoftirqNames are the softirq vectors' names as /proc/softirqs and bcc
// print them (include/linux/interrupt.h's order).
var SoftirqNames = []string{"hi", "timer", "net_tx", "net_rx", "block", "irq_poll", "tasklet", "sched", "hrtimer", "rcu"}

// Run measures until the duration passes or ctx ends.
func Run(ctx context.Context, o Options) (*Result, error) {
	var maps irqsMaps
	hooks := []bpfskel.Hook{
		bpfskel.BTFTracepoint("irq_handler_exit", irqsProgTpBtfHardExit, irqsProgRawHardExit),
		bpfskel.BTFTracepoint("irq_handler_entry", irqsProgTpBtfHardEntry, irqsProgRawHardEntry),
	}
	name := "hard interrupt time"
	if o.Soft {
		name = "softirq time"
		hooks = []bpfskel.Hook{
			bpfskel.BTFTracepoint("softirq_exit", irqsProgTpBtfSoftExit, irqsProgRawSoftExit),
			bpfskel.BTFTracepoint("softirq_entry", irqsProgTpBtfSoftEntry, irqsProgRawSoftEntry),
		}
	}
	s, err := bpfskel.Open(bpfskel.Tool{Name: name, Spec: loadIrqs, Maps: &maps, Hooks: hooks,
		Consts: map[string]any{irqsVarDist: o.Dist}})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	soft := &softTotals{m: maps.SoftTotals}
	read := func(reset bool) ([]Irq, error) { return drain(maps.Totals, soft, maps.Hist, o, reset) }
	res := &Result{}
	if res.Irqs, res.Elapsed, err = bpfskel.RunDrained(ctx, s, o.Duration, o.Interval, read, o.OnInterval, maps.Counts, &res.Counts); err != nil {
		return nil, err
	}
	return res, nil
}

// drain reads the totals and slots, most time first, deleting them when
// reset is set.
func drain(totals *ebpf.Map, soft *softTotals, hist *ebpf.Map, o Options, reset bool) ([]Irq, error) {
	by := map[uint32]*Irq{}
	add := func(id uint32, name string, count, sum uint64) {
		x := &Irq{Irq: id, Name: name, Count: count, SumNS: sum}
		if o.Dist {
			x.Hist = &histogram.Hist{}
		}
		by[id] = x
	}
	var err error
	if o.Soft {
		err = soft.read(reset, func(vec uint32, t irqsIrqsSoft) {
			name := fmt.Sprintf("vec%d", vec)
			if int(vec) < len(SoftirqNames) {
				name = SoftirqNames[vec]
			}
			add(vec, name, t.Count, t.SumNs)
		})
	} else {
		err = bpfmaps.Read(totals, reset, func(id uint32, t irqsIrqsTotal) {
			add(id, bpfmaps.CString(t.Name[:]), t.Count, t.SumNs)
		})
	}
	if err != nil {
		return nil, fmt.Errorf("reading the interrupt totals: %w", err)
	}
	hists, err := bpfskel.ReadSlots(hist, reset)
	if err != nil {
		return nil, err
	}
	for id, h := range hists {
		if x := by[id]; x != nil && x.Hist != nil {
			x.Hist = h
		}
	}
	out := make([]Irq, 0, len(by))
	for _, x := range by {
		out = append(out, *x)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].SumNS != out[j].SumNS {
			return out[i].SumNS > out[j].SumNS
		}
		return out[i].Irq < out[j].Irq
	})
	return out, nil
}

// softTotals reads the softirq vectors' per-CPU totals (soft_totals). A
// per-CPU array cannot be emptied without losing what a CPU adds
// meanwhile: an interval is what was added since the last reset.
type softTotals struct {
	m    *ebpf.Map
	prev map[uint32]irqsIrqsSoft
}

func (s *softTotals) read(reset bool, fn func(vec uint32, t irqsIrqsSoft)) error {
	cur := map[uint32]irqsIrqsSoft{}
	for vec := range s.m.MaxEntries() {
		var per []irqsIrqsSoft
		if err := s.m.Lookup(vec, &per); err != nil {
			return err
		}
		var t irqsIrqsSoft
		for _, c := range per {
			t.Count += c.Count
			t.SumNs += c.SumNs
		}
		cur[vec] = t
		p := s.prev[vec]
		if d := (irqsIrqsSoft{Count: t.Count - p.Count, SumNs: t.SumNs - p.SumNs}); d.Count > 0 {
			fn(vec, d)
		}
	}
	if reset {
		s.prev = cur
	}
	return nil
}
