package bpfskel

import (
	"context"
	"fmt"
	"structs"
	"time"

	"github.com/cilium/ebpf"

	"github.com/sonde-dev/sonde/internal/collect/bpfmaps"
	"github.com/sonde-dev/sonde/internal/collect/runctl"
	"github.com/sonde-dev/sonde/internal/model/histogram"
)

// RunDrained runs s until the duration passes or ctx ends, for a tool
// whose maps aggregate in the kernel and are read whole: every interval
// (when one is set and onInterval is not nil) it hands onInterval the
// report drain(true) read and emptied; at the end it reads the program's
// counters into into (the tool's Counts) and returns the last report,
// drain(false), and how long the programs ran.
func RunDrained[R any](ctx context.Context, s *Session, duration, interval time.Duration,
	drain func(reset bool) (R, error), onInterval func(R), counters *Counters, into any) (R, time.Duration, error) {
	var zero R
	run, err := s.Run(ctx, runctl.Options{Duration: duration, Interval: interval, OnInterval: func() error {
		if onInterval == nil {
			return nil
		}
		r, err := drain(true)
		if err != nil {
			return err
		}
		onInterval(r)
		return nil
	}})
	if err != nil {
		return zero, 0, err
	}
	r, err := drain(false)
	if err != nil {
		return zero, 0, err
	}
	if err := counters.Read(into); err != nil {
		return zero, 0, fmt.Errorf("reading the counters: %w", err)
	}
	return r, run.Elapsed, nil
}

// SlotKey is bpf/include/sonde_bits.h's struct sonde_slot, the key of a
// histogram tool's counts map (bpfgen checks its layout against each
// object that has it).
type SlotKey struct {
	_     structs.HostLayout
	Group uint32 // the histogram: a pid, tid or irq; 0 when there is one
	Slot  uint32 // log_linear_slot() of the value
}

// StackKey is bpf/include/sonde_stack.h's struct sonde_stack_key: a task
// and the stacks it was at, as the tools that count per stack key them
// (bpfgen checks its layout against each object that has it).
type StackKey struct {
	_           structs.HostLayout
	Pid         uint32
	Tid         uint32 // 0 unless keyed per thread
	UserStack   uint64 // key in unwind_stacks, 0: none
	KernelStack int32  // id in the stack map, or a negative errno
	Unused      uint32
}

// ReadSlots reads a map of counts keyed by SlotKey into one histogram per
// group, emptying it in the same step when reset is set (bpfmaps.Read: a
// drained tool's interval).
func ReadSlots(m *ebpf.Map, reset bool) (map[uint32]*histogram.Hist, error) {
	out := map[uint32]*histogram.Hist{}
	err := bpfmaps.Read(m, reset, func(k SlotKey, n uint64) {
		h := out[k.Group]
		if h == nil {
			h = &histogram.Hist{}
			out[k.Group] = h
		}
		h.AddN(histogram.LogLinearValue(k.Slot), n)
	})
	if err != nil {
		return nil, fmt.Errorf("reading the histogram slots: %w", err)
	}
	return out, nil
}

// Split says how a histogram tool keeps its distributions apart (bcc's -P
// and -L): bpf/include/sonde_bits.h's enum sonde_split, whose values
// bpfgen checks against each object that keeps the enum.
type Split uint32

// The values are the C side's.
const (
	SplitNone Split = iota // one distribution
	SplitPid               // one per process
	SplitTid               // one per thread
)

// ArraySlots reads the one distribution a program keeps in an array of
// log-linear slots (slot → count) when it is not split: an array's lookup
// costs the program an address computation where a hash costs a lookup.
// The kernel's counts only grow: an interval is what was added since the
// last reset, so nothing counted between a read and a reset is lost.
type ArraySlots struct {
	m    *ebpf.Map
	prev []uint64
}

// NewArraySlots reads m (key: slot, u32; value: count, u64).
func NewArraySlots(m *ebpf.Map) *ArraySlots { return &ArraySlots{m: m} }

// Read returns the distribution (group 0; none when empty) since the last
// reset, and starts a new interval when reset is set.
func (a *ArraySlots) Read(reset bool) (map[uint32]*histogram.Hist, error) {
	cur, err := bpfmaps.ArrayCounts(a.m)
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
