package commands

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/cmd/remote"
	"github.com/sonde-dev/sonde/internal/collect/procfs"
	"github.com/sonde-dev/sonde/internal/tools/cpudist"
	"github.com/sonde-dev/sonde/internal/view/dist"
)

// newCpudistCmd is bcc's cpudist: on-CPU time per run (off-CPU time per
// wait with -O) as a histogram, overall or per process or thread.
func newCpudistCmd() *cobra.Command {
	l := &cli.Live{Intervals: true, DurationArg: true, Dist: true}
	var pids, tids, offcpu bool
	cmd := l.Command(cli.Doc("cpudist", &cobra.Command{}), "measure only this process")
	f := cmd.Flags()
	f.BoolVarP(&offcpu, "offcpu", "O", false, "time off the CPU between runs instead of on it")
	f.BoolVarP(&pids, "pids", "P", false, "one distribution per process")
	f.BoolVarP(&tids, "tids", "L", false, "one distribution per thread")
	cli.Conflicting(f, "pids", "tids", "choose one split")
	remote.MarkValues(f, "offcpu")
	cmd.RunE = l.RunE("tracing CPU time per run", func(ctx context.Context, tgt string, _ []string) error {
		do := l.DistOptions
		o := cpudist.Options{Pid: l.Pid, OffCPU: offcpu, Duration: l.Duration, Interval: l.Interval}
		split := dist.All
		if pids {
			o.Split, split = cpudist.SplitPid, dist.ByProcess
		}
		if tids {
			o.Split, split = cpudist.SplitTid, dist.ByThread
		}
		comm := func(id uint32) string { return procfs.Comm(int(id), int(id)) }
		o.OnInterval = func(g map[uint32]*cpudist.Group) {
			l.W.Interval(dist.NewCPURuns(do, tgt, offcpu, split, runsOf(g), comm, 0, 0, l.Lap()))
		}
		res, err := cpudist.Run(ctx, o)
		if err != nil {
			return err
		}
		return l.W.Final(dist.NewCPURuns(do, tgt, offcpu, split, runsOf(res.Groups), comm, res.Unknown, res.LostMap, l.Span(res.Elapsed)))
	})
	return cmd
}

// runsOf hands cpudist's groups to the view.
func runsOf(g map[uint32]*cpudist.Group) map[uint32]dist.Runs {
	out := make(map[uint32]dist.Runs, len(g))
	for id, x := range g {
		out[id] = dist.Runs{Hist: &x.Hist, Count: x.Runs, TotalNS: x.SumNS}
	}
	return out
}

var _ = Register(Spec{Name: "cpudist", Group: BPF, New: newCpudistCmd, JSON: []any{dist.CPURuns{}}, Remote: true,
	Keys: map[string]string{
		"offcpu":               "cpudist: the distributions are of time off the CPU between runs, not on it",
		"begun_before_tracing": "runs under way when tracing began, not counted (cpudist: runs or waits; hardirqs, softirqs: handler runs)",
	},
	Smoke: []string{"cpudist", "-d", "1"},
	BadInput: []BadInput{
		{Name: "cpudist_both_splits", Args: []string{"-P", "-L"}, Code: 2, Want: `choose one split|conflict`},
		{Name: "cpudist_zero_duration", Args: []string{"-d", "0"}, Code: 2, Want: `-d/--duration 0s: want a positive duration`},
	}})
