// Package runctl is how a measurement decides it is over: a duration, a
// signal (Ctrl-C, SIGTERM), the traced command exiting, or a cancelled
// context — with an optional tick for interval output in between. It owns
// the one signal handler of a run (signal.NotifyContext), so no tool
// installs its own.
package runctl

import (
	"context"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// Reason says why a run ended.
type Reason int

const (
	Cancelled Reason = iota // the caller's context ended
	Signalled               // SIGINT or SIGTERM
	Deadline                // the duration passed
	Done                    // the target exited (Options.Done or Options.Target)
	Failed                  // OnInterval returned an error
)

func (r Reason) String() string {
	switch r {
	case Cancelled:
		return "cancelled"
	case Signalled:
		return "signalled"
	case Deadline:
		return "deadline"
	case Done:
		return "target exited"
	case Failed:
		return "failed"
	}
	return "unknown"
}

// Options say when a run ends and what happens in between.
type Options struct {
	Duration time.Duration // 0: no limit
	// Interval, when positive with OnInterval set, calls OnInterval every
	// Interval; an error from it ends the run (Failed) and is returned.
	Interval   time.Duration
	OnInterval func() error
	// Done, when not nil, ends the run once closed (the target exited).
	Done <-chan struct{}
	// Target, when set, is a started command the run follows: its exit
	// ends the run, and a run that ends first sends it SIGTERM and waits.
	Target *exec.Cmd
}

// Result says how a run ended.
type Result struct {
	Reason Reason
	// Elapsed is how long the run lasted: from Start to End, the span the
	// events were collected over when a tool's session says so (bpfskel:
	// from the first program enabled to the last disabled).
	Elapsed    time.Duration
	Start, End time.Time
	// ExitCode is the target's, shell style (128+signal when killed).
	ExitCode int
}

// Clock is a run's time: the deadline (a channel that never fires without
// a duration) and the interval ticks (never, without an interval).
type Clock struct {
	Deadline, Tick <-chan time.Time
	timer          *time.Timer
	ticker         *time.Ticker
}

// NewClock starts the clock of a run of duration (0: none) reporting every
// interval (0: never); call Stop. Every tool starts its clock once its
// events count, so the run has begun: NewClock says so (Ready).
func NewClock(duration, interval time.Duration) *Clock {
	Ready()
	c := &Clock{}
	if duration > 0 {
		c.timer = time.NewTimer(duration)
		c.Deadline = c.timer.C
	}
	if interval > 0 {
		c.ticker = time.NewTicker(interval)
		c.Tick = c.ticker.C
	}
	return c
}

// Stop frees the timers.
func (c *Clock) Stop() {
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.ticker != nil {
		c.ticker.Stop()
	}
}

// Run blocks until ctx ends, SIGINT or SIGTERM arrives, the duration
// passes, Done is closed or the target exits.
func Run(ctx context.Context, o Options) (Result, error) {
	start := time.Now()
	sctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	interval := o.Interval
	if o.OnInterval == nil {
		interval = 0
	}
	clock := NewClock(o.Duration, interval)
	defer clock.Stop()
	var exited chan struct{}
	var waitErr error
	if o.Target != nil {
		exited = make(chan struct{})
		go func() { waitErr = o.Target.Wait(); close(exited) }()
	}
	res := Result{}
	var err error
loop:
	for {
		select {
		case <-sctx.Done():
			res.Reason = Signalled
			if ctx.Err() != nil {
				res.Reason = Cancelled
			}
			break loop
		case <-clock.Deadline:
			res.Reason = Deadline
			break loop
		case <-o.Done:
			res.Reason = Done
			break loop
		case <-exited:
			res.Reason = Done
			break loop
		case <-clock.Tick:
			if err = o.OnInterval(); err != nil {
				res.Reason = Failed
				break loop
			}
		}
	}
	if o.Target != nil {
		if res.Reason != Done {
			o.Target.Process.Signal(syscall.SIGTERM)
		}
		<-exited
		res.ExitCode = ExitCode(waitErr, o.Target.ProcessState)
	}
	res.Start, res.End = start, time.Now()
	res.Elapsed = res.End.Sub(start)
	return res, err
}

// ExitCode turns a Wait result into a shell-style exit code: the
// command's status, 128+signal when a signal ended it, 127 when it could
// not be waited for.
func ExitCode(err error, state *os.ProcessState) int {
	if state == nil {
		if err != nil {
			return 127
		}
		return 0
	}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return state.ExitCode()
}
