package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cli"
	"github.com/sonde-dev/sonde/internal/perf"
	"github.com/sonde-dev/sonde/internal/profile"
	"github.com/sonde-dev/sonde/internal/view/emit"
	"github.com/sonde-dev/sonde/internal/view/stackprof"
)

func newProfileCmd() *cobra.Command {
	l := &cli.Live{MinInterval: 100 * time.Millisecond, DurationArg: true}
	o := profile.Options{Version: version}
	var all bool
	var cpus string
	var sf cli.Stacks
	cmd := l.Command(&cobra.Command{
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
	cli.AtLeast(f, 1, "freq")
	cli.Conflicting(f, "all-cpus", "pid", "choose one target")
	f.BoolP("callchain", "g", true, "accepted for perf's habit: profile always counts whole stacks")
	sf.Add(f, "samples")
	l.Check = func([]string) (err error) {
		if cpus != "" {
			if o.CPUs, err = perf.ParseCPUList(cpus); err != nil {
				return cli.Usagef("-C/--cpu: %v", err)
			}
		}
		return nil
	}
	cmd.RunE = l.RunE("profiling", func(ctx context.Context, tgt string, _ []string) error {
		o.Pid, o.PerThread, o.User, o.Kernel, o.Duration, o.Interval = l.Pid, sf.PerThread, !sf.Kernel, !sf.User, l.Duration, l.Interval
		report := func(r *profile.Result) emit.Report {
			e := stackprof.Errors{UserStack: r.Errors.UserStack, KernelStack: r.Errors.KernelStack, LostMapFull: r.Errors.MapFull}
			rep := stackprof.New(r.Profile, e, tgt, sf.Comms)
			if o.User {
				rep.UserStacks = &r.Stacks
			}
			return rep
		}
		if l.Interval > 0 && !sf.Folded {
			o.OnInterval = func(r *profile.Result) { l.W.Interval(report(r)) }
		}
		res, err := profile.Run(ctx, o)
		if err != nil {
			return err
		}
		return sf.Files("sonde profile", fmt.Sprintf("%d samples", len(res.Profile.Samples))).Finish(l.W, res.Profile, report(res))
	})
	return cmd
}
