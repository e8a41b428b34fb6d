package commands

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/tools/syscount"
	"github.com/sonde-dev/sonde/internal/view/syscounts"
)

func newSyscountCmd() *cobra.Command {
	l := &cli.Live{TakesCommand: true, Cgroups: true}
	var so syscounts.Options
	cmd := l.Command(cli.Doc("syscount", &cobra.Command{}), "count only this process")
	f := cmd.Flags()
	f.BoolVarP(&so.Latency, "latency", "L", false, "also time each syscall (total, average, max)")
	f.BoolVarP(&so.PerProcess, "per-process", "P", false, "count per process and syscall")
	f.StringVar(&so.Comm, "comm", "", "only processes with this name")
	f.IntVarP(&so.Top, "top", "T", 20, "rows to print (0: all)")
	cli.AtLeast(f, 0, "top")
	cmd.RunE = l.RunE("counting syscalls", func(ctx context.Context, tgt string, args []string) error {
		t := cli.Target{Command: args}
		if l.Pid != 0 {
			t = cli.Target{Alongside: args}
		} else if len(args) > 0 {
			tgt = t.String()
		}
		ctx, wait, err := t.StartAlongside(ctx)
		if err != nil {
			return err
		}
		// --comm needs per-process counts to filter on; they are merged
		// back per syscall unless --per-process was asked for.
		res, err := syscount.Run(ctx, syscount.Options{Pid: l.Pid, Cgroup: l.Cgroup, Command: t.Command, PerProcess: so.PerProcess || so.Comm != "",
			Latency: so.Latency, Duration: l.Duration})
		exit := wait()
		if err != nil {
			return err
		}
		if len(t.Command) > 0 {
			exit = res.ExitCode
		}
		so.Target, so.Command = tgt, len(args) > 0
		if err := l.W.Final(syscounts.New(res, so)); err != nil {
			return err
		}
		return cli.ExitWith(exit)
	})
	return cmd
}

var _ = Register(Spec{Name: "syscount", Group: BPF, New: newSyscountCmd, JSON: []any{syscounts.Report{}}, Remote: true})
