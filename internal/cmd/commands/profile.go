package commands

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/collect/perf"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/model/jsonout"
	"github.com/sonde-dev/sonde/internal/model/stackstat"
	"github.com/sonde-dev/sonde/internal/symbolize"
	"github.com/sonde-dev/sonde/internal/tools/profile"
	"github.com/sonde-dev/sonde/internal/view/emit"
	"github.com/sonde-dev/sonde/internal/view/stackprof"
)

func newProfileCmd() *cobra.Command {
	l := &cli.Live{Intervals: true, DurationArg: true, TakesCommand: true, Cgroups: true}
	o := profile.Options{Version: version}
	var all bool
	var cpus string
	var sf cli.Stacks
	cmd := l.Command(cli.Doc("profile", &cobra.Command{}), "profile only this process")
	f := cmd.Flags()
	f.Uint64VarP(&o.Freq, "freq", "F", 97, "samples per second per CPU")
	f.BoolVarP(&all, "all-cpus", "a", false, "the whole system (the default without -p)")
	f.StringVarP(&cpus, "cpu", "C", "", "only these CPUs (e.g. 0-1,3)")
	f.BoolVar(&o.Idle, "idle", false, "include the idle task")
	cli.AddNoInterpFlag(f, &o.NoInterp)
	cli.AtLeast(f, 1, "freq")
	cli.Conflicting(f, "all-cpus", "pid", "choose one target")
	f.BoolP("callchain", "g", true, "accepted for perf's habit: profile always counts whole stacks")
	sf.Add(f, "samples")
	l.Check = func(*cobra.Command, []string) (err error) {
		if cpus != "" {
			if o.CPUs, err = perf.ParseCPUList(cpus); err != nil {
				return cli.Usagef("-C/--cpu: %v", err)
			}
		}
		return nil
	}
	cmd.RunE = l.RunE("profiling", func(ctx context.Context, tgt string, _ []string) error {
		if sf.Output == "" && l.Interval == 0 {
			o.Symbolizer = symbolize.DefaultWith(false) // only a data file keeps source lines
		}
		o.Pid, o.Command, o.PerThread, o.User, o.Kernel, o.Duration, o.Interval = l.Pid, l.Argv, sf.PerThread, !sf.Kernel, !sf.User, l.Duration, l.Interval
		o.Only = sf.Tasks()
		o.Cgroup = l.Cgroup
		return cli.RunStacks(l, &sf, cli.Stacked[*profile.Result]{Title: "sonde profile",
			Run: func(each func(*profile.Result)) (*profile.Result, error) {
				o.OnInterval = each
				return profile.Run(ctx, o)
			},
			Report: func(r *profile.Result) emit.Report {
				e := stackprof.Errors{UserStack: r.Errors.UserStack, KernelStack: r.Errors.KernelStack, LostMapFull: r.Errors.MapFull}
				rep := stackprof.New(r.Profile, e, tgt)
				rep.UserStacks = sf.UserOf(&r.Stacks)
				return rep
			},
			Exit: func(r *profile.Result) (int, bool) { return r.ExitCode, r.Exited },
			Profile: func(r *profile.Result) (*model.Profile, string) {
				return r.Profile, fmt.Sprintf("%d samples", len(r.Profile.Samples))
			},
		})
	})
	return cmd
}

var _ = Register(Spec{Name: "profile", Group: BPF, New: newProfileCmd, JSON: []any{stackprof.Errors{}, stackstat.Completeness{}, jsonout.Run{}}, Remote: true, RunsCommand: true})
