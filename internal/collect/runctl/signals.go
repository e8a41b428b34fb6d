package runctl

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// WithSignals returns a copy of ctx that is cancelled when SIGINT, SIGTERM
// or SIGHUP arrives, for loops that cannot block in Run (a recording that
// polls its rings) but must end the same way. Call stop when the run is
// over, so a later Ctrl-C ends sonde as usual.
func WithSignals(ctx context.Context) (_ context.Context, stop context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
}
