package commands

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/tools/offcpu"
	"github.com/sonde-dev/sonde/internal/view/blocked"
	"github.com/sonde-dev/sonde/internal/view/emit"
)

// newOffcpuCmd is offcpu, or with name "wakeup" the same tool following
// each block to the stack that ended it (bcc's offwaketime).
func newOffcpuCmd(name string) *cobra.Command {
	l := &cli.Live{Intervals: true, DurationArg: true, TakesCommand: true, Cgroups: true}
	o := offcpu.Options{Version: version, Wakers: name == "wakeup"}
	var minBlock, maxBlock uint64
	var state string
	var sf cli.Stacks
	vo := blocked.Options{Command: name}
	cmd := l.Command(cli.Doc(name, &cobra.Command{}), "trace only this process")
	f := cmd.Flags()
	f.Uint64VarP(&minBlock, "min-block", "m", 1, "ignore blocks shorter than this many microseconds")
	f.Uint64VarP(&maxBlock, "max-block", "M", 0, "ignore blocks longer than this many microseconds (0: no limit)")
	f.StringVar(&state, "state", "", "only blocks in these task states: S (sleeping), D (uninterruptible), R (preempted), T, I")
	f.IntVar(&vo.Top, "top", 20, "stacks to print")
	cli.AddNoInterpFlag(f, &o.NoInterp)
	cli.AtLeast(f, 1, "top")
	sf.Add(f, "microseconds")
	l.Check = func(*cobra.Command, []string) (err error) {
		if maxBlock > 0 && minBlock > maxBlock {
			return cli.Usagef("-m/--min-block %d is above -M/--max-block %d: no block could be counted", minBlock, maxBlock)
		}
		if o.States, err = offcpu.ParseStates(state); err != nil {
			return cli.Usagef("--state: %v", err)
		}
		return nil
	}
	cmd.RunE = l.RunE("tracing off-CPU time", func(ctx context.Context, tgt string, _ []string) error {
		o.Cgroup = l.Cgroup
		o.Pid, o.Command, o.PerThread, o.User, o.Kernel, o.Duration, o.Interval = l.Pid, l.Argv, sf.PerThread, !sf.Kernel, !sf.User, l.Duration, l.Interval
		o.MinBlock, o.MaxBlock = time.Duration(minBlock)*time.Microsecond, time.Duration(maxBlock)*time.Microsecond
		o.NoLines = sf.Output == "" // only a data file keeps source lines
		vo.Target, o.Only = tgt, sf.Tasks()
		return cli.RunStacks(l, &sf, cli.Stacked[*offcpu.Result]{Title: "sonde " + name,
			Run: func(each func(*offcpu.Result)) (*offcpu.Result, error) {
				o.OnInterval = each
				return offcpu.Run(ctx, o)
			},
			Report: func(r *offcpu.Result) emit.Report {
				rep := blocked.New(r.Profile, r.Attach, blocked.Errors{StackFailures: r.Errors.StackFailures, LostMapFull: r.Errors.MapFull}, vo)
				rep.UserStacks = sf.UserOf(&r.Stacks)
				if o.Wakers {
					rep.WakerStacks = sf.UserOf(&r.WakerStacks)
				}
				return rep
			},
			Exit:    func(r *offcpu.Result) (int, bool) { return r.ExitCode, r.Exited },
			Profile: func(r *offcpu.Result) (*model.Profile, string) { return r.Profile, "blocked time in µs" },
		})
	})
	return cmd
}

var _ = Register(Spec{Name: "offcpu", Group: BPF, New: func() *cobra.Command { return newOffcpuCmd("offcpu") }, JSON: []any{blocked.Report{}}, Remote: true, RunsCommand: true})
var _ = Register(Spec{Name: "wakeup", Page: "offcpu.md", Group: BPF, New: func() *cobra.Command { return newOffcpuCmd("wakeup") }, JSON: []any{blocked.Report{}}, Remote: true, RunsCommand: true})
