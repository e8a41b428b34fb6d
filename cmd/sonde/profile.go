package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/flamegraph"
	"github.com/sonde-dev/sonde/internal/perf"
	"github.com/sonde-dev/sonde/internal/profile"
	"github.com/sonde-dev/sonde/internal/view/stackprof"
)

func newProfileCmd() *cobra.Command {
	var (
		freq               uint64
		all, idle, asJSON  bool
		pid                int
		cpus               string
		duration, interval time.Duration
		sf                 stackFlags
	)
	cmd := &cobra.Command{
		Use:   "profile [flags] [DURATION]",
		Short: "count on-CPU stacks in the kernel with BPF (low overhead, system-wide or one process)",
		Long: "Sample on-CPU stacks on every CPU (or -C CPUs) and count them in the kernel, as bcc's\n" +
			"profile does; the report, flame graph and data file are those of record.",
		Example: "  sonde profile 10\n  sonde profile -F 99 -p 1234 -d 5 --flamegraph cpu.html\n  sonde profile -af 5 > out.folded",
	}
	f := cmd.Flags()
	f.Uint64VarP(&freq, "freq", "F", 97, "samples per second per CPU")
	f.BoolVarP(&all, "all-cpus", "a", false, "the whole system (the default without -p)")
	addPidFlag(f, &pid, "profile")
	f.StringVarP(&cpus, "cpu", "C", "", "only these CPUs (e.g. 0-1,3)")
	f.BoolVar(&idle, "idle", false, "include the idle task")
	addStackFlags(f, &sf, "samples")
	addDurationFlag(f, &duration, "profiling")
	addIntervalFlag(f, &interval, 0, "print a report every interval (-o, --folded and --flamegraph then cover the last one)")
	addJSONFlag(f, &asJSON)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := durationArg(cmd, args, &duration); err != nil {
			return err
		}
		if err := checkInterval(interval, 100*time.Millisecond); err != nil {
			return err
		}
		if err := sf.check(); err != nil {
			return err
		}
		if all && pid != 0 {
			return usagef("-a/--all-cpus and -p/--pid conflict: choose one target")
		}
		if freq == 0 {
			return usagef("-F/--freq: want a positive number of Hz")
		}
		tgt, err := pidTarget(pid)
		if err != nil {
			return err
		}
		o := profile.Options{Freq: freq, Pid: pid, PerThread: sf.perThread, User: !sf.kernel, Kernel: !sf.user, Idle: idle,
			Duration: duration, Version: version, Interval: interval}
		if cpus != "" {
			if o.CPUs, err = perf.ParseCPUList(cpus); err != nil {
				return usagef("-C/--cpu: %v", err)
			}
		}
		w := stdout()
		view := func(r *profile.Result) *stackprof.Report {
			e := stackprof.Errors{UserStack: r.Errors.UserStack, KernelStack: r.Errors.KernelStack, LostMapFull: r.Errors.MapFull}
			return stackprof.New(r.Profile, e, tgt, splitList(sf.comm))
		}
		if interval > 0 && !sf.folded {
			o.OnInterval = func(r *profile.Result) { writeInterval(w, view(r), asJSON) }
		}
		progress("profiling, %s", forHow(duration))
		ctx, stop := interruptible()
		defer stop()
		res, err := profile.Run(ctx, o)
		if err != nil {
			return err
		}
		p := res.Profile
		files := stackprof.Files{Data: sf.output, Flame: sf.flame, Title: "sonde profile", What: fmt.Sprintf("%d samples", len(p.Samples))}
		if err := files.Write(p); err != nil {
			return err
		}
		if sf.folded {
			if err := flamegraph.WriteFolded(w, flamegraph.FromProfile(p)); err != nil {
				return err
			}
			return w.Flush()
		}
		return writeView(w, view(res), asJSON)
	}
	return cmd
}
