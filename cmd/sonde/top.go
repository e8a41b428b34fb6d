package main

import (
	"context"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/runctl"
	"github.com/sonde-dev/sonde/internal/view/top"
)

func newTopCmd() *cobra.Command {
	var o top.Options
	cmd := &cobra.Command{
		Use:   "top [flags]",
		Short: "live view: hot symbols system-wide and exact per-task CPU time",
		Long: "A full-screen view of the hottest symbols and each task's exact CPU time, refreshed every interval.\n" +
			"Keys: q quit, s sort, f filter, p pause. Piped, or with -b N, it prints N plain-text frames.",
		Example: "  sonde top\n  sonde top -b 3 -i 0.5 --rows 5 | less",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("top takes no arguments: for N frames, -b N; for the refresh, -i %s", args[0])
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.Uint64VarP(&o.Hz, "freq", "F", 997, "sampling rate for hot symbols")
	f.BoolVar(&o.TasksOnly, "tasks", false, "tasks only (no symbol sampling)")
	f.IntVarP(&o.Frames, "batch", "b", 0, "print N plain-text frames and exit (for pipes)")
	durationVarP(f, &o.Interval, "interval", "i", time.Second, "refresh interval: seconds (1) or a duration (500ms)")
	f.IntVar(&o.Rows, "rows", 15, "rows per table")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if o.Interval < 100*time.Millisecond {
			return usagef("-i/--interval %s: at least 100ms", o.Interval)
		}
		if o.Frames < 0 || o.Rows <= 0 || o.Hz == 0 {
			return usagef("-b/--batch, --rows and -F/--freq want positive numbers")
		}
		if o.Frames == 0 && !isTerminal(1) {
			o.Frames = 1 // a pipe gets one frame, not a screen
		}
		ctx, stop := runctl.WithSignals(context.Background())
		defer stop()
		return top.Run(ctx, o, os.Stdout)
	}
	return cmd
}
