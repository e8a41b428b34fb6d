package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/funclat"
	"github.com/sonde-dev/sonde/internal/histogram"
	"github.com/sonde-dev/sonde/internal/view/dist"
)

func newFunclatCmd() *cobra.Command {
	var (
		pid                int
		binary, unitName   string
		linear             uint64
		asJSON             bool
		duration, interval time.Duration
	)
	cmd := &cobra.Command{
		Use:   "funclat [flags] FUNCTION…",
		Short: "latency distribution of user functions (uprobes) or kernel functions (fentry/kprobes)",
		Long: "Time every call of the functions given, from entry to return, as bcc's funclatency\n" +
			"does. A function is /path/bin:glob, lib:func (libc:getaddrinfo), a glob with -x BINARY,\n" +
			"or a kernel function. Options may come before or after the functions.",
		Example: "  sonde funclat ./srv:handle -p 1234\n  sonde funclat -u ms -d 10 libc:getaddrinfo\n  sonde funclat -x /usr/bin/python3 'PyEval_*' -i 1",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("give functions: /path/bin:glob, lib:func (e.g. libc:getaddrinfo), -x BINARY glob, or a kernel function")
			}
			return nil
		},
	}
	f := cmd.Flags()
	addPidFlag(f, &pid, "time calls of")
	f.StringVarP(&binary, "binary", "x", "", "binary or library for functions given without one")
	f.StringVarP(&unitName, "unit", "u", "us", "histogram unit: ns, us, ms or s")
	f.Uint64Var(&linear, "linear", 0, "linear buckets of this width (in --unit) instead of powers of two")
	addDurationFlag(f, &duration, "timing")
	addIntervalFlag(f, &interval, 0, "print a report every interval")
	addJSONFlag(f, &asJSON)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		unit, err := histogram.ParseUnit(unitName)
		if err != nil {
			return usagef("-u/--unit: %v", err)
		}
		tgt, err := pidTarget(pid)
		if err != nil {
			return err
		}
		funcs, err := funclat.Resolve(args, binary, pid)
		if err != nil {
			return usagef("%v", err)
		}
		names := make([]string, len(funcs))
		for i, fn := range funcs {
			names[i] = fn.String()
		}
		do := dist.Options{Unit: unit, Linear: linear}
		w := stdout()
		o := funclat.Options{Funcs: funcs, Pid: pid, Duration: duration, Interval: interval}
		start := time.Now()
		o.OnInterval = func(hs []*histogram.Hist) {
			writeInterval(w, dist.NewFunctions(do, tgt, names, hs, 0, time.Since(start)), asJSON)
		}
		progress("timing %d functions, %s", len(funcs), forHow(duration))
		ctx, stop := interruptible()
		defer stop()
		res, err := funclat.Run(ctx, o)
		if err != nil {
			return err
		}
		return writeView(w, dist.NewFunctions(do, tgt, names, res.Hists, res.Drops, res.Elapsed), asJSON)
	}
	return cmd
}
