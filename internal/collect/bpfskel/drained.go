package bpfskel

import (
	"context"
	"time"

	"github.com/sonde-dev/sonde/internal/collect/runctl"
)

// RunDrained runs s until the duration passes or ctx ends, for a tool
// whose maps aggregate in the kernel and are read whole: every interval
// (when one is set and onInterval is not nil) it hands onInterval the
// report drain(true) read and emptied; at the end it returns the last
// report, drain(false), and the run.
func RunDrained[R any](ctx context.Context, s *Session, duration, interval time.Duration,
	drain func(reset bool) (R, error), onInterval func(R)) (R, runctl.Result, error) {
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
		return zero, run, err
	}
	r, err := drain(false)
	if err != nil {
		return zero, run, err
	}
	return r, run, nil
}
