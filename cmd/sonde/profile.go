package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sonde-dev/sonde/internal/perf"
	"github.com/sonde-dev/sonde/internal/profile"
	"github.com/sonde-dev/sonde/internal/view/emit"
	"github.com/sonde-dev/sonde/internal/view/stackprof"
)

func newProfileCmd() *cobra.Command {
	l := &live{minInterval: 100 * time.Millisecond, durationArg: true}
	o := profile.Options{Version: version}
	var all bool
	var cpus string
	var sf stackFlags
	cmd := newLive(l, &cobra.Command{
		Use:     "profile [flags] [DURATION]",
		Short:   "count on-CPU stacks in the kernel with BPF (low overhead, system-wide or one process)",
		Long:    "Sample on-CPU stacks on every CPU and count them in the kernel, as bcc's profile does.",
		Example: "  sonde profile 10\n  sonde profile -F 99 -p 1234 -d 5 --flamegraph cpu.html\n  sonde profile -af 5 > out.folded",
	}, "profile only this process")
	f := cmd.Flags()
	f.Uint64VarP(&o.Freq, "freq", "F", 97, "samples per second per CPU")
	f.BoolVarP(&all, "all-cpus", "a", false, "the whole system (the default without -p)")
	f.StringVarP(&cpus, "cpu", "C", "", "only these CPUs (e.g. 0-1,3)")
	f.BoolVar(&o.Idle, "idle", false, "include the idle task")
	sf.add(f, "samples")
	cmd.RunE = func(cmd *cobra.Command, args []string) (err error) {
		if all && l.pid != 0 {
			return usagef("-a/--all-cpus and -p/--pid conflict: choose one target")
		}
		if o.Freq == 0 {
			return usagef("-F/--freq: want a positive number of Hz")
		}
		if cpus != "" {
			if o.CPUs, err = perf.ParseCPUList(cpus); err != nil {
				return usagef("-C/--cpu: %v", err)
			}
		}
		if err := sf.check(); err != nil {
			return err
		}
		ctx, tgt, stop, err := l.start(cmd, args, "profiling")
		if err != nil {
			return err
		}
		defer stop()
		o.Pid, o.PerThread, o.User, o.Kernel, o.Duration, o.Interval = l.pid, sf.perThread, !sf.kernel, !sf.user, l.duration, l.interval
		report := func(r *profile.Result) emit.Report {
			e := stackprof.Errors{UserStack: r.Errors.UserStack, KernelStack: r.Errors.KernelStack, LostMapFull: r.Errors.MapFull}
			rep := stackprof.New(r.Profile, e, tgt, sf.comms)
			if o.User {
				rep.UserStacks = &r.Stacks
			}
			return rep
		}
		if l.interval > 0 && !sf.folded {
			o.OnInterval = func(r *profile.Result) { l.w.Interval(report(r)) }
		}
		res, err := profile.Run(ctx, o)
		if err != nil {
			return err
		}
		return sf.files("sonde profile", fmt.Sprintf("%d samples", len(res.Profile.Samples))).Finish(l.w, res.Profile, report(res))
	}
	return cmd
}

// stackFlags are the options profile, offcpu and wakeup share: the side of
// the stack (bcc's -U, -K), the threads and commands shown, the files.
type stackFlags struct {
	user, kernel, folded, perThread bool
	flame, output                   string
	comms                           []string
}

func (s *stackFlags) add(f *pflag.FlagSet, unit string) {
	f.BoolVarP(&s.user, "user", "U", false, "user stacks only")
	f.BoolVarP(&s.kernel, "kernel", "K", false, "kernel stacks only")
	f.BoolVar(&s.perThread, "per-thread", false, "keep threads apart")
	f.StringSliceVar(&s.comms, "comm", nil, "only these commands in the output (comma-separated)")
	f.BoolVarP(&s.folded, "folded", "f", false, "print collapsed stacks instead of a report (values in "+unit+")")
	f.StringVar(&s.flame, "flamegraph", "", "also write a flame graph (.html, or .svg)")
	f.StringVarP(&s.output, "output", "o", "", "also write a data file for report and flamegraph")
}

func (s *stackFlags) check() error {
	if s.user && s.kernel {
		return usagef("-U/--user and -K/--kernel conflict: leave both out for both stacks")
	}
	return nil
}

// files are the outputs asked for beside the report.
func (s *stackFlags) files(title, what string) stackprof.Files {
	return stackprof.Files{Data: s.output, Flame: s.flame, Folded: s.folded, Title: title, What: what}
}
