package bpfskel

import (
	"fmt"
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
}

// NewIntervals starts the first interval now. snap reads the maps, reset
// empties them, emit (nil: none) receives each interval's report.
func NewIntervals[R any](snap func(start time.Time, elapsed time.Duration) (R, error), reset func() error, emit func(R)) *Intervals[R] {
	return &Intervals[R]{snap: snap, reset: reset, emit: emit, start: time.Now()}
}

// Tick ends an interval (runctl.Options.OnInterval).
func (iv *Intervals[R]) Tick() error {
	now := time.Now()
	r, err := iv.snap(iv.start, now.Sub(iv.start))
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

// Final reads what the maps hold since the last cut.
func (iv *Intervals[R]) Final() (R, error) {
	return iv.snap(iv.start, time.Since(iv.start))
}

// ClearMap returns a reset that empties a hash map keyed by K.
func ClearMap[K any](m *ebpf.Map) func() error {
	return func() error { return bpfmaps.Clear[K](m) }
}
