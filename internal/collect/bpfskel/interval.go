package bpfskel

import (
	"fmt"
	"sync"
	"time"

	"github.com/cilium/ebpf"

	"github.com/sonde-dev/sonde/internal/collect/bpfmaps"
)

// Intervals cuts a run into reports for tools whose maps aggregate in the
// kernel: each Tick reads the maps over the time since the last cut,
// resets them and hands the report on; Final reads the last stretch (the
// whole run without intervals).
type Intervals[R any] struct {
	snap  func(start time.Time, elapsed time.Duration) (R, error)
	reset func() error
	emit  func(R)
	start time.Time

	// With NewDrainedIntervals: drain, and the reports being built.
	drain   func(start time.Time, elapsed time.Duration) (func() (R, error), error)
	builds  chan func() (R, error)
	built   chan struct{}
	buildMu sync.Mutex
	err     error // the first report that failed to build

	clock Clock // Follow's: when counting began and ended (nil: ticks and Final)
	ticks int
}

// Clock says when a session's programs began and stopped counting
// (*Session).
type Clock interface {
	Started() time.Time
	Stopped() time.Time
}

// Follow makes the intervals cover what c counted: the first begins when
// it began (not when the intervals were made), the last ends when it
// stopped (not when Final is called, after the programs were detached).
func (iv *Intervals[R]) Follow(c Clock) *Intervals[R] {
	iv.clock = c
	return iv
}

// span is the interval now ending at now: its start, and its length to
// end (now, or the clock's stop for the last).
func (iv *Intervals[R]) span(now time.Time, last bool) (time.Time, time.Duration) {
	start, end := iv.start, now
	if iv.clock != nil {
		if t := iv.clock.Started(); iv.ticks == 0 && !t.IsZero() {
			start = t
		}
		if t := iv.clock.Stopped(); last && !t.IsZero() {
			end = t
		}
	}
	iv.ticks++
	return start, end.Sub(start)
}

// NewIntervals starts the first interval now. snap reads the maps, reset
// empties them, emit (nil: none) receives each interval's report.
func NewIntervals[R any](snap func(start time.Time, elapsed time.Duration) (R, error), reset func() error, emit func(R)) *Intervals[R] {
	return &Intervals[R]{snap: snap, reset: reset, emit: emit, start: time.Now()}
}

// NewDrainedIntervals is NewIntervals for a tool whose maps are read and
// emptied in one fast step (drain, with bpfmaps.Drain) that returns the
// slow one: naming the stacks and building the report. Tick returns once
// the maps are drained, so every interval is cut on time however long a
// report takes to build; one goroutine builds and emits the reports in
// order, and Final waits for them.
func NewDrainedIntervals[R any](drain func(start time.Time, elapsed time.Duration) (build func() (R, error), err error), emit func(R)) *Intervals[R] {
	iv := &Intervals[R]{drain: drain, emit: emit, start: time.Now(),
		builds: make(chan func() (R, error), 64), built: make(chan struct{})}
	go func() {
		defer close(iv.built)
		for b := range iv.builds {
			r, err := b()
			if err != nil {
				iv.fail(err)
				continue
			}
			if iv.emit != nil {
				iv.emit(r)
			}
		}
	}()
	return iv
}

func (iv *Intervals[R]) fail(err error) {
	iv.buildMu.Lock()
	if iv.err == nil {
		iv.err = err
	}
	iv.buildMu.Unlock()
}

func (iv *Intervals[R]) failed() error {
	iv.buildMu.Lock()
	defer iv.buildMu.Unlock()
	return iv.err
}

// Tick ends an interval (runctl.Options.OnInterval).
func (iv *Intervals[R]) Tick() error {
	if iv.drain != nil {
		return iv.tickDrained()
	}
	now := time.Now()
	r, err := iv.snap(iv.span(now, false))
	if err != nil {
		return err
	}
	if err := iv.reset(); err != nil {
		return fmt.Errorf("starting a new interval: %w", err)
	}
	iv.start = now
	if iv.emit != nil {
		iv.emit(r)
	}
	return nil
}

func (iv *Intervals[R]) tickDrained() error {
	if err := iv.failed(); err != nil {
		return err
	}
	now := time.Now()
	b, err := iv.drain(iv.span(now, false))
	if err != nil {
		return err
	}
	iv.start = now
	iv.builds <- b
	return nil
}

// Final reads what the maps hold since the last cut (after the reports
// of earlier intervals are out).
func (iv *Intervals[R]) Final() (R, error) {
	if iv.drain == nil {
		return iv.snap(iv.span(time.Now(), true))
	}
	close(iv.builds)
	<-iv.built
	var zero R
	if err := iv.failed(); err != nil {
		return zero, err
	}
	b, err := iv.drain(iv.span(time.Now(), true))
	if err != nil {
		return zero, err
	}
	return b()
}

// ClearMap returns a reset that empties a hash map keyed by K.
func ClearMap[K any](m *ebpf.Map) func() error {
	return func() error { return bpfmaps.Clear[K](m) }
}
