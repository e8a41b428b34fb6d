package commands

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/cmd/remote"
	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/collect/procfs"
	"github.com/sonde-dev/sonde/internal/tools/cpudist"
	"github.com/sonde-dev/sonde/internal/view/dist"
)

// newCpudistCmd is bcc's cpudist: on-CPU time per run (off-CPU time per
// wait with -O) as a histogram, overall or per process or thread.
func newCpudistCmd() *cobra.Command {
	l := &cli.Live{Intervals: true, DurationArg: true, Dist: true}
	var offcpu bool
	var sf splitFlags
	cmd := l.Command(cli.Doc("cpudist", &cobra.Command{}), "measure only this process")
	f := cmd.Flags()
	f.BoolVarP(&offcpu, "offcpu", "O", false, "time off the CPU between runs instead of on it")
	sf.add(f)
	remote.MarkValues(f, "offcpu")
	cmd.RunE = l.RunE("tracing CPU time per run", func(ctx context.Context, tgt string, _ []string) error {
		do := l.DistOptions
		o := cpudist.Options{Pid: l.Pid, OffCPU: offcpu, Duration: l.Duration, Interval: l.Interval}
		var split dist.Split
		o.Split, split = splitOf(sf)
		o.OnInterval = func(g map[uint32]*cpudist.Group) {
			l.W.Interval(dist.NewCPURuns(do, tgt, offcpu, split, runsOf(g), splitComm, 0, 0, l.Lap()))
		}
		res, err := cpudist.Run(ctx, o)
		if err != nil {
			return err
		}
		return l.W.Final(dist.NewCPURuns(do, tgt, offcpu, split, runsOf(res.Groups), splitComm, res.Unknown, res.LostMap, l.Span(res.Elapsed)))
	})
	return cmd
}

// splitFlags are -P/--pids and -L/--tids (bcc's letters): cpudist's and
// runqlat's split of their distributions.
type splitFlags struct{ pids, tids bool }

func (sf *splitFlags) add(f *pflag.FlagSet) {
	f.BoolVarP(&sf.pids, "pids", "P", false, "one distribution per process")
	f.BoolVarP(&sf.tids, "tids", "L", false, "one distribution per thread")
	cli.Conflicting(f, "pids", "tids", "choose one split")
}

// splitOf is the tools' split (cpudist's, runqlat's) and the view's, as
// the flags ask.
func splitOf(sf splitFlags) (bpfskel.Split, dist.Split) {
	switch {
	case sf.tids:
		return bpfskel.SplitTid, dist.ByThread
	case sf.pids:
		return bpfskel.SplitPid, dist.ByProcess
	}
	return bpfskel.SplitNone, dist.All
}

// splitComm names the process or thread id of a split, as the view asks.
func splitComm(id uint32) string { return procfs.Comm(int(id), int(id)) }

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
