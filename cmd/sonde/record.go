package main

import (
	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cli"
)

func newRecordCmd() *cobra.Command {
	r := cli.Record{Version: version}
	cmd := cli.AcceptsCommand(&cobra.Command{
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
	r.Events.Add(f, "events to sample (default cpu-clock)")
	r.Sampling.Add(f)
	r.CallGraph.Add(f)
	r.Target.Add(f, "record")
	cli.AddDurationFlag(f, &r.Duration, "recording")
	f.StringVarP(&r.Output, "output", "o", "sonde.data", "data file to write")
	f.IntVarP(&r.Pages, "mmap-pages", "m", 128, "ring buffer pages per CPU (a power of two)")
	f.BoolVarP(&r.Quiet, "quiet", "q", false, "no progress or summary on stderr")
	cli.AtLeast(f, 1, "count", "mmap-pages")
	cmd.RunE = func(_ *cobra.Command, args []string) error { return r.Run(args) }
	return cmd
}
