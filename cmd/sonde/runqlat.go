package main

import (
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/histogram"
	"github.com/sonde-dev/sonde/internal/procfs"
	"github.com/sonde-dev/sonde/internal/runqlat"
	"github.com/sonde-dev/sonde/internal/view/dist"
)

func newRunqlatCmd() *cobra.Command {
	var (
		pids, tids, asJSON bool
		pid                int
		unitName           string
		linear             uint64
		duration, interval time.Duration
	)
	cmd := &cobra.Command{
		Use:   "runqlat [flags] [DURATION]",
		Short: "run-queue latency: how long runnable tasks wait for a CPU (BPF)",
		Long: "Measure how long tasks wait on a run queue between being woken (or preempted) and\n" +
			"running, as bcc's runqlat does; the kernel keeps the distribution.",
		Example: "  sonde runqlat 5\n  sonde runqlat -P -p 1234 -d 10\n  sonde runqlat -i 1 -d 10 --json",
	}
	f := cmd.Flags()
	f.BoolVarP(&pids, "pids", "P", false, "one distribution per process")
	f.BoolVarP(&tids, "tids", "L", false, "one distribution per thread")
	addPidFlag(f, &pid, "measure")
	f.StringVarP(&unitName, "unit", "u", "us", "histogram unit: ns, us, ms or s")
	f.Uint64Var(&linear, "linear", 0, "linear buckets of this width (in --unit) instead of powers of two")
	addDurationFlag(f, &duration, "tracing")
	addIntervalFlag(f, &interval, 0, "print a report every interval")
	addJSONFlag(f, &asJSON)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 2 {
			// bcc's runqlat INTERVAL COUNT.
			iv, err1 := parseDuration(args[0])
			n, err2 := strconv.Atoi(args[1])
			if err1 == nil && err2 == nil && n > 0 {
				return usagef("the argument is how long to trace; for a report every %s, %d times: -i %s -d %s", iv, n, iv, iv*time.Duration(n))
			}
		}
		if err := durationArg(cmd, args, &duration); err != nil {
			return err
		}
		if pids && tids {
			return usagef("-P/--pids and -L/--tids conflict: choose one split")
		}
		unit, err := histogram.ParseUnit(unitName)
		if err != nil {
			return usagef("-u/--unit: %v", err)
		}
		tgt, err := pidTarget(pid)
		if err != nil {
			return err
		}
		o := runqlat.Options{Pid: pid, Duration: duration, Interval: interval}
		split := dist.All
		if pids {
			o.Split, split = runqlat.SplitPid, dist.ByProcess
		}
		if tids {
			o.Split, split = runqlat.SplitTid, dist.ByThread
		}
		do := dist.Options{Unit: unit, Linear: linear}
		comm := func(id uint32) string { return procfs.Comm(int(id), int(id)) }
		w := stdout()
		start := time.Now()
		o.OnInterval = func(g map[uint32]*histogram.Hist) {
			writeInterval(w, dist.NewRunQueue(do, tgt, split, g, comm, 0, 0, time.Since(start)), asJSON)
		}
		progress("tracing run-queue latency, %s", forHow(duration))
		ctx, stop := interruptible()
		defer stop()
		res, err := runqlat.Run(ctx, o)
		if err != nil {
			return err
		}
		return writeView(w, dist.NewRunQueue(do, tgt, split, res.Groups, comm, res.Switches, res.Unknown, res.Elapsed), asJSON)
	}
	return cmd
}
