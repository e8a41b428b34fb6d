package main

import (
	"context"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cli"
	"github.com/sonde-dev/sonde/internal/stat"
	"github.com/sonde-dev/sonde/internal/view/statview"
)

func newStatCmd() *cobra.Command {
	var (
		tf       targetFlags
		ev       cli.Events
		repeat   int
		interval time.Duration
		sep      string
		asJSON   bool
		duration time.Duration
	)
	cmd := acceptsCommand(&cobra.Command{
		Use:   "stat [flags] [--] [COMMAND [ARGS…]]",
		Short: "count events (software, hardware, tracepoints, probes) for a command, processes or the system",
		Long: "Count events as perf stat does, for a command, existing processes (-p), threads (-t)\n" +
			"or the whole system (-a). A command after the options is counted; with -p or -t it only\n" +
			"sets how long (stat -p PID sleep 5).",
		Example: "  sonde stat ./myprog\n  sonde stat -e 'sched:*' -a -d 2\n  sonde stat -r 5 -x, -- ./bench\n  sonde stat -p 1234 -I 1000 sleep 10",
	})
	f := cmd.Flags()
	ev.Add(f, "events to count (default task-clock, context-switches, … as perf stat)")
	tf.Add(f, "count")
	f.IntVarP(&repeat, "repeat", "r", 1, "run the command N times and show mean ± standard error")
	cli.MillisVarP(f, &interval, "interval-print", "I", "print counts every interval: milliseconds (1000) or a duration (1s)")
	f.StringVarP(&sep, "field-separator", "x", "", "CSV output with this separator")
	addJSONFlag(f, &asJSON)
	addDurationFlag(f, &duration, "counting")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		t, err := tf.Resolve(args)
		if err != nil {
			return err
		}
		if t.Empty() {
			return usagef("nothing to count: give a command, -p PID, -t TID or -a")
		}
		if repeat < 1 || (repeat > 1 && len(t.Command) == 0) {
			return usagef("-r/--repeat needs a command and N ≥ 1")
		}
		if interval > 0 && interval < 10*time.Millisecond {
			return usagef("-I/--interval-print: at least 10 ms")
		}
		o := stat.Options{All: t.All, Pids: t.Pids, Tids: t.Tids, CPUs: t.CPUs, Command: t.Command, Duration: duration, Interval: interval}
		if o.Specs, o.Filters, err = ev.Resolve(stat.DefaultEvents(o.All)); err != nil {
			return err
		}
		if interval > 0 {
			iw := &statview.IntervalWriter{W: os.Stdout, Sep: sep, JSON: asJSON}
			o.OnInterval = iw.Write
		}
		var runs []*stat.Result
		exit, err := t.Measure(context.Background(), func(ctx context.Context) (int, error) {
			for range repeat {
				res, err := stat.Run(ctx, o)
				if err != nil {
					return 0, err
				}
				runs = append(runs, res)
			}
			return runs[len(runs)-1].ExitCode, nil
		})
		if err != nil {
			return err
		}
		switch {
		case asJSON && interval == 0:
			err = statview.WriteJSON(os.Stdout, runs, t.String())
		case sep != "":
			statview.WriteCSV(os.Stdout, runs, sep)
		case interval == 0:
			statview.WriteText(os.Stdout, runs, t.String())
		}
		if err != nil {
			return err
		}
		return exitWith(exit)
	}
	return cmd
}
