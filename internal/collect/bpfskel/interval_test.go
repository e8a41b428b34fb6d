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
