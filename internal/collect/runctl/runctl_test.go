package runctl

import (
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"
)

func TestRunDeadlineTicks(t *testing.T) {
	n := 0
	r, err := Run(context.Background(), Options{Duration: 120 * time.Millisecond, Interval: 30 * time.Millisecond,
		OnInterval: func() error { n++; return nil }})
	if err != nil || r.Reason != Deadline || n < 2 || r.Elapsed < 120*time.Millisecond {
		t.Errorf("reason %v after %d ticks, %v elapsed, err %v", r.Reason, n, r.Elapsed, err)
	}
}

func TestRunDone(t *testing.T) {
	done := make(chan struct{})
	close(done)
	if r, _ := Run(context.Background(), Options{Duration: time.Hour, Done: done}); r.Reason != Done {
		t.Errorf("reason %v, want Done", r.Reason)
	}
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r, _ := Run(ctx, Options{}); r.Reason != Cancelled {
		t.Errorf("reason %v, want Cancelled", r.Reason)
	}
}

func TestRunIntervalError(t *testing.T) {
	boom := errors.New("boom")
	r, err := Run(context.Background(), Options{Duration: time.Hour, Interval: time.Millisecond,
		OnInterval: func() error { return boom }})
	if r.Reason != Failed || !errors.Is(err, boom) {
		t.Errorf("reason %v, err %v", r.Reason, err)
	}
}

func TestRunTargetExits(t *testing.T) {
	cmd := exec.Command("sh", "-c", "exit 3")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	r, _ := Run(context.Background(), Options{Duration: time.Hour, Target: cmd})
	if r.Reason != Done || r.ExitCode != 3 {
		t.Errorf("reason %v exit %d, want Done 3", r.Reason, r.ExitCode)
	}
}

func TestRunTargetTerminated(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	r, _ := Run(context.Background(), Options{Duration: 50 * time.Millisecond, Target: cmd})
	if r.Reason != Deadline || r.ExitCode != 128+15 {
		t.Errorf("reason %v exit %d, want Deadline 143", r.Reason, r.ExitCode)
	}
}
