package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cli"
	"github.com/sonde-dev/sonde/internal/ftrace"
)

func newFtraceCmd() *cobra.Command {
	root := &cobra.Command{Use: "ftrace", Short: "function-graph tracing of user programs: every call nested and timed (uftrace-style)"}
	var o ftrace.Options
	rec := &cobra.Command{Use: "record [flags] (-p PID | -- CMD ARGS…)", Short: "trace the calls of a command or process into a data file",
		Example: "  sonde ftrace record -- ./knapsack\n  sonde ftrace record -F 'solve*' -t 1ms -p 1234 -d 10"}
	o.AddFlags(rec.Flags())
	rec.RunE = func(cmd *cobra.Command, args []string) error {
		if (o.Pid > 0) == (len(args) > 0) {
			return cli.Usagef("give a command (-- CMD ARGS) or a process (-p PID), one of them")
		}
		o.Command, o.Version, o.Log = args, version, os.Stderr
		s, err := ftrace.Record(cmd.Context(), o)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "sonde: %d calls of %d functions in %d threads written to %s (%s; %d lost)\n", s.Calls, s.Funcs, s.Threads, o.Output, s.Mechanism, s.Lost)
		return cli.ExitWith(s.ExitCode)
	}
	root.AddCommand(cli.AcceptsCommand(rec))
	var v ftrace.ViewOptions
	var chrome, flame bool
	var output string
	for _, c := range []struct {
		use, short string
		args       int
	}{{"replay", "the calls nested, with durations (DURATION TID FUNCTION)", 0},
		{"report", "total, self, calls, average and maximum time per function", 0},
		{"graph [FUNC]", "the aggregated call graph under a function, with counts and times", 1},
		{"dump (--chrome | --flamegraph)", "Chrome trace event JSON (Perfetto) or a time-weighted flame graph", 0}} {
		sub := &cobra.Command{Use: c.use, Short: c.short, Args: cobra.MaximumNArgs(c.args)}
		v.AddFlags(sub.Flags())
		sub.RunE = func(cmd *cobra.Command, args []string) error {
			view := map[bool]string{true: "chrome", false: "flamegraph"}[chrome]
			if cmd.Name() != "dump" {
				view = cmd.Name()
			}
			out, err := cli.Create(output)
			if err != nil {
				return err
			}
			return out.Finish(ftrace.View(out, view, append(args, "")[0], v))
		}
		root.AddCommand(sub)
		switch f := sub.Flags(); sub.Name() {
		case "replay":
			f.BoolVar(&v.PerThread, "per-thread", false, "each thread's calls together (default: merged by time)")
		case "report":
			f.StringVarP(&v.Sort, "sort", "s", "total", "sort by total, self, call, avg, max, min or func")
			cli.AddJSONFlag(f, &v.JSON)
		case "dump":
			f.BoolVar(&chrome, "chrome", false, "Chrome trace event JSON")
			f.BoolVar(&flame, "flamegraph", false, "flame graph of wall time (HTML; --format svg or folded)")
			f.StringVar(&v.Format, "format", "html", "flame graph format: html, svg or folded")
			f.StringVarP(&output, "output", "o", "", "write here instead of stdout")
			sub.MarkFlagsMutuallyExclusive("chrome", "flamegraph")
			sub.MarkFlagsOneRequired("chrome", "flamegraph")
		}
	}
	return root
}
