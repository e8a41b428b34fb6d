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
