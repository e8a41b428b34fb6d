package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cli"
	"github.com/sonde-dev/sonde/internal/histogram"
	"github.com/sonde-dev/sonde/internal/latency"
	"github.com/sonde-dev/sonde/internal/load"
	"github.com/sonde-dev/sonde/internal/pairbpf"
	"github.com/sonde-dev/sonde/internal/view/emit"
	"github.com/sonde-dev/sonde/internal/view/latencyview"
)

func newLatencyCmd() *cobra.Command {
	var (
		tf                                    targetFlags
		start, end, key, input, per, unitName string
		filter                                string
		showEvents, asJSON                    bool
		linear                                uint64
		duration                              time.Duration
	)
	cmd := acceptsCommand(&cobra.Command{
		Use:   "latency --start EV --end EV [flags] [--] [COMMAND [ARGS…]]",
		Short: "latency distribution between two events paired by key fields (e.g. block issue → complete)",
		Long: "Pair a start event with its end event by key fields and show the time between them.\n" +
			"Live, pairing happens in the kernel (BPF); with -i it pairs a recording's samples.\n" +
			"Live tracing is system-wide unless -p is given; a command after the options sets how long.",
		Example: "  sonde latency --start block:block_rq_issue --end block:block_rq_complete --key dev,sector -d 10\n" +
			"  sonde latency --start u:./srv:handle --end u:./srv:handle%return -p 1234 sleep 5\n" +
			"  sonde latency -i blk.data --start block:block_rq_issue --end block:block_rq_complete --key dev,sector --per dev",
	})
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
	addDurationFlag(f, &duration, "tracing")
	f.StringVar(&filter, "filter", "", "kernel-side filter for both events (recordings only: record --filter, then latency -i)")
	addJSONFlag(f, &asJSON)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if start == "" || end == "" {
			return usagef("--start and --end are required")
		}
		unit, err := histogram.ParseUnit(unitName)
		if err != nil {
			return usagef("-u/--unit: %v", err)
		}
		lo := latency.Options{Start: start, End: end, Key: splitList(key), Per: per, Events: showEvents}
		r := latencyview.Report{Start: start, End: end, Key: lo.Key, Unit: unit, Linear: linear, Events: showEvents}
		exit := 0
		if input != "" {
			// From a recording: pair the recorded samples.
			p, err := load.Profile(input, load.Options{})
			if err != nil {
				return err
			}
			if r.Result, err = latency.Compute(p, lo); err != nil {
				return usagef("%v", err)
			}
			r.Lost, r.Duration = p.Meta.Lost, time.Duration(p.Meta.DurationNS)
		} else {
			if r.Result, exit, err = traceLatency(&r, lo, tf, args, duration, filter); err != nil {
				return err
			}
		}
		if err := emit.New(os.Stdout, asJSON).Final(&r); err != nil {
			return err
		}
		return exitWith(exit)
	}
	return cmd
}

// traceLatency pairs live in the kernel with BPF, which also sees events
// that perf sampling misses in interrupt context.
func traceLatency(r *latencyview.Report, lo latency.Options, tf targetFlags, args []string, d time.Duration, filter string) (*latency.Result, int, error) {
	t, err := tf.Resolve(args)
	if err != nil {
		return nil, 0, err
	}
	if len(t.Pids) > 1 || len(t.Tids) > 0 || len(t.CPUs) > 0 {
		return nil, 0, usagef("live latency takes one -p PID (or -a, or a command)")
	}
	if filter != "" {
		return nil, 0, usagef("--filter works on recordings (sonde record --filter, then latency -i)")
	}
	o := pairbpf.Options{Key: lo.Key, Per: lo.Per, Events: lo.Events, Command: t.Command, Duration: d}
	if len(t.Pids) == 1 {
		o.Pid = t.Pids[0]
	}
	if o.Start, err = cli.Tracepoint(lo.Start); err != nil {
		return nil, 0, err
	}
	if o.End, err = cli.Tracepoint(lo.End); err != nil {
		return nil, 0, err
	}
	if isTerminal(2) && len(args) == 0 && d == 0 {
		fmt.Fprintf(os.Stderr, "sonde: tracing %s → %s, Ctrl-C to stop\n", lo.Start, lo.End)
	}
	var res *pairbpf.Result
	exit, err := t.Measure(context.Background(), func(ctx context.Context) (code int, err error) {
		if res, err = pairbpf.Run(ctx, o); err != nil {
			return 0, err
		}
		return res.ExitCode, nil
	})
	if err != nil {
		return nil, 0, err
	}
	r.Duration, r.Lost = res.Elapsed, res.Counters.Drops+res.Counters.Full
	r.Extra = fmt.Sprintf(", %d ends of other requests", res.Counters.Unmatched)
	res.Result.Unmatched = 0
	return res.Result, exit, nil
}
