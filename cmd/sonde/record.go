package main

import (
	"context"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cli"
	"github.com/sonde-dev/sonde/internal/datafile"
	"github.com/sonde-dev/sonde/internal/record"
)

func newRecordCmd() *cobra.Command {
	var (
		tf       targetFlags
		ev       cli.Events
		smp      cli.Sampling
		cg       cli.CallGraph
		duration time.Duration
		output   string
		pages    int
		quiet    bool
	)
	cmd := acceptsCommand(&cobra.Command{
		Use:   "record [flags] [--] [COMMAND [ARGS…]]",
		Short: "sample on-CPU stacks of a command, processes or the whole system into a data file",
		Long: "Sample a command, existing processes (-p), threads (-t) or the whole system (-a) into a\n" +
			"data file for report, flamegraph, annotate, script and diff. A command after the options\n" +
			"is recorded; with -p or -t it only sets how long (as perf: record -p PID sleep 5).\n" +
			"Options end at the command, so its own options stay its own.",
		Example: "  sonde record -g ./myprog arg\n  sonde record -ag -F99 -d 10\n  sonde record -p 1234 -g sleep 5\n" +
			"  sonde record -e sched:sched_switch -a -- sleep 1",
	})
	f := cmd.Flags()
	ev.Add(f, "events to sample (default cpu-clock)")
	smp.Add(f)
	cg.Add(f)
	tf.Add(f, "record")
	addDurationFlag(f, &duration, "recording")
	f.StringVarP(&output, "output", "o", "sonde.data", "data file to write")
	f.IntVarP(&pages, "mmap-pages", "m", 128, "ring buffer pages per CPU (a power of two)")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress or summary on stderr")
	cli.AtLeast(f, 1, "count", "mmap-pages")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		t, err := tf.Resolve(args)
		if err != nil {
			return err
		}
		if t.Empty() {
			return usagef("nothing to record: give a command, -p PID, -t TID or -a")
		}
		// record.Options.Output "" means a recording kept in memory (for
		// callers inside sonde); from the command line it is a mistake,
		// found now rather than after the recording.
		if err := datafile.CheckPath(output); err != nil {
			return err
		}
		o := record.Options{All: t.All, Pids: t.Pids, Tids: t.Tids, CPUs: t.CPUs, Command: t.Command,
			Duration: duration, RingPages: pages, Version: version, Output: output}
		if o.Events, o.Filters, err = ev.Resolve([]string{"cpu-clock"}); err != nil {
			return err
		}
		if o.Freq, o.Period, err = smp.Resolve(); err != nil {
			return err
		}
		if o.CallGraph, err = cg.Mode(); err != nil {
			return err
		}
		o.Callchain = o.CallGraph != ""
		if pages <= 0 || pages&(pages-1) != 0 {
			return usagef("-m/--mmap-pages %d: want a power of two", pages)
		}
		clearLine := func() {}
		if !quiet && isTerminal(2) {
			o.Progress, clearLine = record.Progress(os.Stderr)
		}
		var res *record.Result
		// Ctrl-C, SIGTERM and SIGHUP end it (Measure), and it is then written.
		exit, err := t.MeasureReady(context.Background(), func(ctx context.Context, ready func() error) (code int, err error) {
			o.Ready = ready // -p PID sleep N: sleep starts once the events are open
			if res, err = record.Record(ctx, o); err != nil {
				return 0, err
			}
			return res.ExitCode, nil
		})
		clearLine()
		if err != nil {
			return err
		}
		if !quiet {
			record.Summarize(os.Stderr, res, output, cli.FileSize(output))
		}
		return exitWith(exit)
	}
	return cmd
}
