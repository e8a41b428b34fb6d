package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cli"
	"github.com/sonde-dev/sonde/internal/funclat"
	"github.com/sonde-dev/sonde/internal/histogram"
	"github.com/sonde-dev/sonde/internal/view/dist"
)

func newFunclatCmd() *cobra.Command {
	l := &cli.Live{MinInterval: 100 * time.Millisecond}
	var binary string
	var df cli.Dist
	cmd := l.Command(&cobra.Command{
		Use:   "funclat [flags] FUNCTION…",
		Short: "latency distribution of user functions (uprobes) or kernel functions (fentry/kprobes)",
		Long: "Time every call of the functions, as bcc's funclatency does. A function is /path/bin:glob,\n" +
			"lib:func (libc:getaddrinfo), a glob with -x BINARY, or a kernel function.",
		Example: "  sonde funclat ./srv:handle -p 1234\n  sonde funclat -u ms -d 10 libc:getaddrinfo",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("give functions: /path/bin:glob, lib:func (e.g. libc:getaddrinfo), -x BINARY glob, or a kernel function")
			}
			return nil
		},
	}, "time calls of this process only")
	cmd.Flags().StringVarP(&binary, "binary", "x", "", "binary or library for functions given without one")
	df.Add(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		do, err := df.Options()
		if err != nil {
			return err
		}
		ctx, tgt, stop, err := l.Start(cmd, nil, "timing functions")
		if err != nil {
			return err
		}
		defer stop()
		funcs, err := funclat.Resolve(args, binary, l.Pid)
		if err != nil {
			return usagef("%v", err)
		}
		for _, fn := range funcs {
			if fn.Note != "" { // which clone or call site stands for the name
				fmt.Fprintln(os.Stderr, "sonde: "+fn.Note)
			}
		}
		names := make([]string, len(funcs))
		for i, fn := range funcs {
			names[i] = fn.String()
			if fn.Note != "" {
				fmt.Fprintln(os.Stderr, "sonde: "+fn.Note)
			}
		}
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
	}
	return cmd
}
