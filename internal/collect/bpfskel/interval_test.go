package bpfskel

import (
	"errors"
	"testing"
	"time"
)

// TestIntervals runs the cut sequence on a fake map: a counter that
// snap reads and reset zeroes.
func TestIntervals(t *testing.T) {
	count := 0
	var got []int
	iv := NewIntervals(func(start time.Time, d time.Duration) (int, error) {
		if d < 0 || start.IsZero() {
			t.Errorf("interval from %v lasting %v", start, d)
		}
		return count, nil
	}, func() error { count = 0; return nil }, func(n int) { got = append(got, n) })
	count = 3
	if err := iv.Tick(); err != nil {
		t.Fatal(err)
	}
	count += 5
	if err := iv.Tick(); err != nil {
		t.Fatal(err)
	}
	count += 2
	last, err := iv.Final()
	if err != nil || len(got) != 2 || got[0] != 3 || got[1] != 5 || last != 2 {
		t.Errorf("reports %v then %d (%v), want [3 5] then 2", got, last, err)
	}
	boom := errors.New("boom")
	bad := NewIntervals(func(time.Time, time.Duration) (int, error) { return 0, nil }, func() error { return boom }, nil)
	if err := bad.Tick(); !errors.Is(err, boom) {
		t.Errorf("a failed reset gave %v", err)
	}
}

// TestDrainedIntervals: reports of drained intervals come out in order,
// each built after Tick returned, and Final comes after all of them.
func TestDrainedIntervals(t *testing.T) {
	drained := 0
	var got []int
	release := make(chan struct{})
	iv := NewDrainedIntervals(func(time.Time, time.Duration) (func() (int, error), error) {
		drained++
		n := drained
		return func() (int, error) {
			<-release // building is slow: Tick must not wait for it
			return n, nil
		}, nil
	}, func(n int) { got = append(got, n) })
	for i := 0; i < 3; i++ {
		if err := iv.Tick(); err != nil {
			t.Fatal(err)
		}
	}
	if drained != 3 {
		t.Fatalf("%d intervals drained, want 3 before any report is built", drained)
	}
	close(release)
	last, err := iv.Final()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 3 || last != 4 {
		t.Fatalf("reports %v then final %d, want [1 2 3] then 4", got, last)
	}
}

type fakeClock struct{ start, stop time.Time }

func (c fakeClock) Started() time.Time { return c.start }
func (c fakeClock) Stopped() time.Time { return c.stop }

// TestIntervalsFollow: a run's report covers the span its programs
// counted, from the first enabled to the last disabled, not from when the
// intervals were made to when the maps were read (after a slow detach).
func TestIntervalsFollow(t *testing.T) {
	t0 := time.Now().Add(-3 * time.Second)
	clock := fakeClock{start: t0, stop: t0.Add(1500 * time.Millisecond)}
	type span struct {
		start time.Time
		d     time.Duration
	}
	for _, drained := range []bool{false, true} {
		var got []span
		snap := func(start time.Time, d time.Duration) (span, error) {
			got = append(got, span{start, d})
			return span{start, d}, nil
		}
		var iv *Intervals[span]
		if drained {
			iv = NewDrainedIntervals(func(start time.Time, d time.Duration) (func() (span, error), error) {
				return func() (span, error) { return snap(start, d) }, nil
			}, nil)
		} else {
			iv = NewIntervals(snap, func() error { return nil }, nil)
		}
		iv.Follow(clock)
		last, err := iv.Final()
		if err != nil || !last.start.Equal(t0) || last.d != 1500*time.Millisecond {
			t.Errorf("drained %v: one interval from %v lasting %v, want from %v lasting 1.5s (%v)", drained, last.start, last.d, t0, err)
		}
	}
	// With ticks: the first interval starts at the clock's start, the
	// next where the one before ended.
	var starts []time.Time
	iv := NewIntervals(func(start time.Time, d time.Duration) (int, error) {
		starts = append(starts, start)
		return 0, nil
	}, func() error { return nil }, nil).Follow(clock)
	iv.Tick()
	iv.Tick()
	if !starts[0].Equal(t0) || !starts[1].After(t0) {
		t.Errorf("interval starts %v, want %v then later", starts, t0)
	}
}
