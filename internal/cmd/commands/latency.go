package commands

import (
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/model/histogram"
	"github.com/sonde-dev/sonde/internal/service/load"
	"github.com/sonde-dev/sonde/internal/tools/latency"
	"github.com/sonde-dev/sonde/internal/view/emit"
	"github.com/sonde-dev/sonde/internal/view/latencyview"
)

func newLatencyCmd() *cobra.Command {
	var (
		tf                                    cli.TargetFlags
		start, end, key, input, per, unitName string
		filter                                string
		showEvents, asJSON                    bool
		linear                                uint64
		duration                              time.Duration
	)
	cmd := cli.AcceptsCommand(cli.Doc("latency", &cobra.Command{}))
	f := cmd.Flags()
	f.StringVar(&start, "start", "", "start event (e.g. block:block_rq_issue)")
	f.StringVar(&end, "end", "", "end event (e.g. block:block_rq_complete)")
	f.StringVarP(&key, "key", "k", "", "fields that pair a start with its end (e.g. dev,sector); default: the thread")
	f.StringVarP(&input, "input", "i", "", "read a recording instead of tracing live")
	tf.Add(f, "trace")
	f.StringVar(&per, "per", "", "one distribution per comm, pid or a start-event field (e.g. dev)")
	f.BoolVar(&showEvents, "events", false, "print every pair")
	f.StringVarP(&unitName, "unit", "u", "us", "ns, us, ms or s")
	f.Uint64Var(&linear, "linear", 0, "linear buckets of this width (in --unit) instead of log2")
	cli.AddDurationFlag(f, &duration, "tracing")
	f.StringVar(&filter, "filter", "", "kernel-side filter for both events (recordings only: record --filter, then latency -i)")
	cli.AddJSONFlag(f, &asJSON)
	cli.AtLeast(f, 1, "linear")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if start == "" || end == "" {
			return cli.Usagef("--start and --end are required")
		}
		unit, err := histogram.ParseUnit(unitName)
		if err != nil {
			return cli.Usagef("-u/--unit: %v", err)
		}
		lo := latency.Options{Start: start, End: end, Key: cli.SplitList(key), Per: per, Events: showEvents}
		r := latencyview.Report{Start: start, End: end, Key: lo.Key, Unit: unit, Linear: linear, Events: showEvents}
		exit := 0
		if input != "" { // from a recording: pair the recorded samples
			var meta model.Meta
			if r.Result, meta, err = load.ForLatency(input, lo); err != nil {
				return err
			}
			r.Lost, r.Duration = meta.Lost, time.Duration(meta.DurationNS)
		} else if r.Result, exit, err = TraceLatency(&r, lo, tf, args, duration, filter); err != nil {
			return err
		}
		if err := emit.New(os.Stdout, asJSON).Final(&r); err != nil {
			return err
		}
		return cli.ExitWith(exit)
	}
	return cmd
}

var _ = Register(Spec{Name: "latency", Group: Recording, New: newLatencyCmd, JSON: []any{latencyview.Doc{}}, Remote: true, RunsCommand: true, Probes: true})
