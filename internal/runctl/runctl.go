// Package runctl is how a measurement decides it is over: a duration, a
// signal (Ctrl-C, SIGTERM), the traced command exiting, or a cancelled
// context — with an optional tick for interval output in between.
package runctl

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Reason says why Until returned.
type Reason int

const (
	Cancelled Reason = iota
	Signalled
	Deadline
	Done
)

// Until blocks until ctx ends, SIGINT or SIGTERM arrives, d passes (when
// positive) or done is closed (when not nil); every tick (when positive) it
// calls onTick.
func Until(ctx context.Context, d, tick time.Duration, done <-chan struct{}, onTick func()) Reason {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	var deadline <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		deadline = t.C
	}
	var ticks <-chan time.Time
	if tick > 0 && onTick != nil {
		tk := time.NewTicker(tick)
		defer tk.Stop()
		ticks = tk.C
	}
	for {
		select {
		case <-ctx.Done():
			return Cancelled
		case <-sigs:
			return Signalled
		case <-deadline:
			return Deadline
		case <-done:
			return Done
		case <-ticks:
			onTick()
		}
	}
}
