package bpfskel

import (
	"context"
	"fmt"
	"time"

	"github.com/sonde-dev/sonde/internal/collect/runctl"
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
