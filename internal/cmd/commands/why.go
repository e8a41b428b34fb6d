package commands

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/cmd/remote"
	"github.com/sonde-dev/sonde/internal/model/jsonout"
	"github.com/sonde-dev/sonde/internal/tools/why"
)

func newWhyCmd() *cobra.Command {
	l := &cli.Live{DurationArg: true, TakesCommand: true}
	o := why.Options{User: true}
	var top int
	var kernelOnly bool
	cmd := l.Command(cli.Doc("why", &cobra.Command{}), "explain this process's threads")
	f := cmd.Flags()
	f.IntVar(&top, "top", 10, "findings to print")
	cli.AtLeast(f, 1, "top")
	f.IntVar(&o.Depth, "depth", 4, "follow wakers this many hops from the target's threads")
	cli.Between(f, "depth", 1, 8)
	f.BoolVarP(&kernelOnly, "kernel", "K", false, "kernel stacks only (no user stacks walked)")
	remote.MarkValues(f, "depth")
	cmd.RunE = l.RunE("finding where the time goes", func(ctx context.Context, tgt string, _ []string) error {
		o.Pid, o.Command, o.Duration = l.Pid, l.Argv, l.Duration
		o.User = !kernelOnly
		res, err := why.Run(ctx, o)
		if err != nil {
			return err
		}
		rep := why.Analyze(&res.Data, top)
		rep.Run = jsonout.Run{Command: "why", Target: tgt, DurationNS: jsonout.Nanos(res.StopNS - res.StartNS)}
		rep.Errors, rep.Attach = res.Errors, res.Attach
		if res.Exited {
			code := res.ExitCode
			rep.Run.ExitCode = &code
		}
		if err := l.W.Final(rep); err != nil {
			return err
		}
		if res.Exited {
			return cli.ExitWith(res.ExitCode)
		}
		return nil
	})
	return cmd
}

var _ = Register(Spec{Name: "why", Group: BPF, New: newWhyCmd, JSON: []any{why.Report{}}, Keys: why.Vocabulary, Remote: true, RunsCommand: true,
	Smoke:    []string{"why", "-d", "1"},
	BadInput: []BadInput{{Name: "why_zero_duration", Args: []string{"-d", "0"}, Code: 2, Want: `-d/--duration 0s`}}})
