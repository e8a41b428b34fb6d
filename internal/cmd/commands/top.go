package commands

import (
	"context"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/view/top"
)

func newTopCmd() *cobra.Command {
	var o top.Options
	cmd := cli.Doc("top", &cobra.Command{
		Args: cli.MaxArgs(0, "top takes no arguments: for N frames, -b N; for the refresh, -i %s"),
	})
	f := cmd.Flags()
	f.Uint64VarP(&o.Hz, "freq", "F", 997, "sampling rate for hot symbols")
	f.BoolVar(&o.TasksOnly, "tasks", false, "tasks only (no symbol sampling)")
	f.IntVarP(&o.Frames, "batch", "b", 0, "print N plain-text frames and exit (for pipes)")
	cli.DurationVarP(f, &o.Interval, "interval", "i", time.Second, "refresh interval: seconds (1) or a duration (500ms)")
	f.IntVar(&o.Rows, "rows", 15, "rows per table")
	cli.AtLeast(f, 0, "batch")
	cli.AtLeast(f, 1, "freq", "rows")
	cli.AtLeast(f, 100*time.Millisecond, "interval")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := bpfskel.CheckPrivileges(); err != nil {
			return err
		}
		if o.Frames == 0 && !cli.IsTerminal(1) {
			o.Frames = 1 // a pipe gets one frame, not a screen
		}
		return cli.UntilSignal(func(ctx context.Context) error { return top.Run(ctx, o, os.Stdout) })
	}
	return cmd
}

var _ = Register(Spec{Name: "top", Group: BPF, New: newTopCmd})
