package commands

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/model/histogram"
	"github.com/sonde-dev/sonde/internal/tools/funclat"
	"github.com/sonde-dev/sonde/internal/view/dist"
)

func newFunclatCmd() *cobra.Command {
	l := &cli.Live{Intervals: true, Dist: true}
	var binary string
	cmd := l.Command(cli.Doc("funclat", &cobra.Command{
		Args: cli.SomeArgs("give functions: /path/bin:glob, lib:func (e.g. libc:getaddrinfo), -x BINARY glob, or a kernel function"),
	}), "time calls of this process only")
	cmd.Flags().StringVarP(&binary, "binary", "x", "", "binary or library for functions given without one")
	cmd.RunE = l.RunE("timing functions", func(ctx context.Context, tgt string, args []string) error {
		do := l.DistOptions
		funcs, err := funclat.Resolve(args, binary, l.Pid)
		if err != nil {
			return cli.Usagef("%v", err)
		}
		names := funclat.Names(funcs, os.Stderr)
		o := funclat.Options{Funcs: funcs, Pid: l.Pid, Duration: l.Duration, Interval: l.Interval}
		o.OnInterval = func(hs []*histogram.Hist) {
			l.W.Interval(dist.NewFunctions(do, tgt, dist.Calls{Names: names, Hists: hs}, l.Lap()))
		}
		res, err := funclat.Run(ctx, o)
		if err != nil {
			return err
		}
		calls := dist.Calls{Names: names, Hists: res.Hists, Untimed: res.Untimed, Lost: res.Drops, Attach: res.Attach}
		return l.W.Final(dist.NewFunctions(do, tgt, calls, l.Span(res.Elapsed)))
	})
	return cmd
}

var _ = Register(Spec{Name: "funclat", Group: BPF, New: newFunclatCmd, JSON: []any{dist.Functions{}}, Remote: true, Probes: true})
