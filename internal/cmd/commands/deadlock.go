package commands

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/tools/deadlock"
)

func newDeadlockCmd() *cobra.Command {
	l := &cli.Live{TakesCommand: true}
	var o deadlock.Options
	cmd := l.Command(cli.Doc("deadlock", &cobra.Command{}), "trace only this process")
	cmd.Flags().StringVar(&o.Lib, "lib", "", "library or binary with the pthread functions (default: libc.so.6)")
	l.Check = func(_ *cobra.Command, args []string) error {
		if l.Pid != 0 && len(args) > 0 {
			return cli.Usagef("give -p PID or a command, not both")
		}
		return nil
	}
	cmd.RunE = l.RunE("tracing lock order", func(ctx context.Context, tgt string, args []string) error {
		o.Pid, o.Command, o.Duration = l.Pid, args, l.Duration
		res, err := deadlock.Run(ctx, o)
		if err != nil {
			return err
		}
		if err := l.W.Final(deadlock.NewReport(res, tgt)); err != nil || res.Command == nil {
			return err
		}
		return cli.ExitWith(res.ExitCode)
	})
	return cmd
}

var _ = Register(Spec{Name: "deadlock", Group: BPF, New: newDeadlockCmd, JSON: []any{deadlock.Report{}}})
