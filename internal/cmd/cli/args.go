package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/collect/runctl"
)

// ExactArgs accepts n arguments; otherwise msg is the usage line.
func ExactArgs(n int, msg string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return Usagef("%s", msg)
		}
		return nil
	}
}

// SomeArgs accepts one argument or more; otherwise msg is the usage line.
func SomeArgs(msg string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) == 0 {
			return Usagef("%s", msg)
		}
		return nil
	}
}

// MaxArgs accepts up to n arguments; the first one too many is format's
// one verb.
func MaxArgs(n int, format string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) > n {
			return Usagef(format, args[n])
		}
		return nil
	}
}

// UntilSignal runs run with a context that ends on Ctrl-C or SIGTERM.
func UntilSignal(run func(ctx context.Context) error) error {
	ctx, stop := runctl.WithSignals(context.Background())
	defer stop()
	return run(ctx)
}
