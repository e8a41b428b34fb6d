package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cli"
)

func newStatCmd() *cobra.Command {
	var s cli.Stat
	cmd := cli.AcceptsCommand(&cobra.Command{
		Use:   "stat [flags] [--] [COMMAND [ARGS…]]",
		Short: "count events (software, hardware, tracepoints, probes) for a command, processes or the system",
		Long: "Count events as perf stat does, for a command, existing processes (-p), threads (-t)\n" +
			"or the whole system (-a). A command after the options is counted; with -p or -t it only\n" +
			"sets how long (stat -p PID sleep 5). The counts go to stderr, as perf's do, so they never\n" +
			"mix with the command's output; -o FILE writes them to a file instead.",
		Example: "  sonde stat ./myprog\n  sonde stat -e 'sched:*' -a -d 2\n  sonde stat -r 5 -x, -- ./bench\n  sonde stat -p 1234 -I 1000 sleep 10",
	})
	f := cmd.Flags()
	s.Events.Add(f, "events to count (default task-clock, context-switches, … as perf stat)")
	s.Target.Add(f, "count")
	f.IntVarP(&s.Repeat, "repeat", "r", 1, "run the command N times and show mean ± standard error")
	cli.MillisVarP(f, &s.Interval, "interval-print", "I", "print counts every interval: milliseconds (1000) or a duration (1s)")
	f.StringVarP(&s.Sep, "field-separator", "x", "", "CSV output with this separator")
	cli.AddJSONFlag(f, &s.JSON)
	cli.AddDurationFlag(f, &s.Duration, "counting")
	f.StringVarP(&s.Output, "output", "o", "", "write the counts to this file instead of stderr")
	cli.AtLeast(f, 1, "repeat")
	cli.AtLeast(f, 10*time.Millisecond, "interval-print")
	cmd.RunE = func(_ *cobra.Command, args []string) error { return s.Run(args) }
	return cmd
}
