package commands

import (
	"context"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/model/histogram"
	"github.com/sonde-dev/sonde/internal/tools/runqlat"
	"github.com/sonde-dev/sonde/internal/view/dist"
)

func newRunqlatCmd() *cobra.Command {
	l := &cli.Live{Intervals: true, DurationArg: true, Dist: true, Cgroups: true}
	var sf splitFlags
	cmd := l.Command(cli.Doc("runqlat", &cobra.Command{}), "measure only this process")
	sf.add(cmd.Flags())
	l.Check = func(_ *cobra.Command, args []string) error {
		if len(args) == 2 { // bcc's runqlat INTERVAL COUNT
			iv, err1 := cli.ParseDuration(args[0])
			n, err2 := strconv.Atoi(args[1])
			if err1 == nil && err2 == nil && n > 0 {
				return cli.Usagef("the argument is how long to trace; for a report every %s, %d times: -i %s -d %s", iv, n, iv, iv*time.Duration(n))
			}
		}
		return nil
	}
	cmd.RunE = l.RunE("tracing run-queue latency", func(ctx context.Context, tgt string, _ []string) error {
		do := l.DistOptions
		o := runqlat.Options{Pid: l.Pid, Cgroup: l.Cgroup, Duration: l.Duration, Interval: l.Interval}
		var split dist.Split
		o.Split, split = splitOf(sf)
		o.OnInterval = func(g map[uint32]*histogram.Hist) {
			l.W.Interval(dist.NewRunQueue(do, tgt, split, g, splitComm, 0, 0, l.Lap()))
		}
		res, err := runqlat.Run(ctx, o)
		if err != nil {
			return err
		}
		return l.W.Final(dist.NewRunQueue(do, tgt, split, res.Groups, splitComm, res.Switches, res.Unknown, l.Span(res.Elapsed)))
	})
	return cmd
}

var _ = Register(Spec{Name: "runqlat", Group: BPF, New: newRunqlatCmd, JSON: []any{dist.RunQueue{}}, Remote: true})
