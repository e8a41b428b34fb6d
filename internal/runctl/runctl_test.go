package runctl

import (
	"context"
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	n := 0
	if r := Until(context.Background(), 120*time.Millisecond, 30*time.Millisecond, nil, func() { n++ }); r != Deadline || n < 2 {
		t.Errorf("reason %v after %d ticks", r, n)
	}
	done := make(chan struct{})
	close(done)
	if r := Until(context.Background(), time.Hour, 0, done, nil); r != Done {
		t.Errorf("reason %v, want Done", r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r := Until(ctx, 0, 0, nil, nil); r != Cancelled {
		t.Errorf("reason %v, want Cancelled", r)
	}
}
