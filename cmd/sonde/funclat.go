package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sonde-dev/sonde/internal/funclat"
	"github.com/sonde-dev/sonde/internal/histogram"
	"github.com/sonde-dev/sonde/internal/view/dist"
)

func newFunclatCmd() *cobra.Command {
	l := &live{minInterval: 100 * time.Millisecond}
	var binary string
	var df distFlags
	cmd := newLive(l, &cobra.Command{
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
	df.add(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		do, err := df.options()
		if err != nil {
			return err
		}
		ctx, tgt, stop, err := l.start(cmd, nil, "timing functions")
		if err != nil {
			return err
		}
		defer stop()
		funcs, err := funclat.Resolve(args, binary, l.pid)
		if err != nil {
			return usagef("%v", err)
		}
		names := make([]string, len(funcs))
		for i, fn := range funcs {
			names[i] = fn.String()
			if fn.Note != "" {
				fmt.Fprintln(os.Stderr, "sonde: "+fn.Note)
			}
		}
		o := funclat.Options{Funcs: funcs, Pid: l.pid, Duration: l.duration, Interval: l.interval}
		start := time.Now()
		o.OnInterval = func(hs []*histogram.Hist) { l.w.Interval(dist.NewFunctions(do, tgt, names, hs, 0, time.Since(start))) }
		res, err := funclat.Run(ctx, o)
		if err != nil {
			return err
		}
		return l.w.Final(dist.NewFunctions(do, tgt, names, res.Hists, res.Drops, res.Elapsed))
	}
	return cmd
}

// distFlags say how funclat, runqlat and biolat show distributions.
type distFlags struct {
	unit   string
	linear uint64
}

func (d *distFlags) add(f *pflag.FlagSet) {
	f.StringVarP(&d.unit, "unit", "u", "us", "histogram unit: ns, us, ms or s")
	f.Uint64Var(&d.linear, "linear", 0, "linear buckets of this width (in --unit) instead of powers of two")
}

func (d *distFlags) options() (dist.Options, error) {
	u, err := histogram.ParseUnit(d.unit)
	if err != nil {
		return dist.Options{}, usagef("-u/--unit: %v", err)
	}
	return dist.Options{Unit: u, Linear: d.linear}, nil
}
