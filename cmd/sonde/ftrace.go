package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cli"
	"github.com/sonde-dev/sonde/internal/ftrace"
)

func newFtraceCmd() *cobra.Command {
	root := &cobra.Command{Use: "ftrace", Short: "function-graph tracing of user programs: every call nested and timed (uftrace-style)",
		Long: "record the entry and return of functions (uprobes: any binary, any running process), then\n" +
			"replay them nested, report time per function, draw the call graph, or dump Chrome trace JSON\n" +
			"or a flame graph."}
	var o ftrace.Options
	rec := &cobra.Command{Use: "record [flags] [-- CMD ARGS…]", Short: "trace the calls of a command or process into a data file",
		Example: "  sonde ftrace record -- ./knapsack\n  sonde ftrace record -F 'solve*' -t 1ms -p 1234 -d 10"}
	f := rec.Flags()
	f.StringArrayVarP(&o.Include, "filter", "F", nil, "trace functions matching this glob (lib:glob for a library; default every function)")
	f.StringArrayVarP(&o.Exclude, "notrace", "N", nil, "do not trace functions matching this glob")
	f.IntVarP(&o.Depth, "depth", "D", 0, "record calls nested at most this deep (0: all)")
	durationVarP(f, &o.MinDuration, "time-filter", "t", 0, "record only calls lasting at least this (100us, 2ms)")
	f.StringArrayVarP(&o.Args, "argument", "A", nil, "FUNC@arg1,arg2 or FUNC@name: record integer arguments")
	f.StringArrayVarP(&o.Rets, "retval", "R", nil, "FUNC@retval: record the return value")
	f.IntVarP(&o.Pid, "pid", "p", 0, "attach to this running process")
	f.StringVarP(&o.Output, "output", "o", "ftrace.data", "data file to write")
	f.StringVar(&o.Mechanism, "mechanism", "auto", "how calls are recorded: auto or uprobe")
	addDurationFlag(f, &o.Duration, "recording")
	rec.RunE = func(cmd *cobra.Command, args []string) error {
		if (o.Pid > 0) == (len(args) > 0) {
			return usagef("give a command (-- CMD ARGS) or a process (-p PID), one of them")
		}
		o.Command, o.Version, o.Log = args, version, os.Stderr
		s, err := ftrace.Record(cmd.Context(), o)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "sonde: %d calls of %d functions in %d threads written to %s (%s; %d lost)\n",
			s.Calls, s.Funcs, s.Threads, o.Output, s.Mechanism, s.Lost)
		return exitWith(s.ExitCode)
	}
	root.AddCommand(acceptsCommand(rec))
	var v ftrace.ViewOptions
	var chrome, flame bool
	var output string
	view := func(use, short string, args cobra.PositionalArgs, name string) *cobra.Command {
		c := &cobra.Command{Use: use, Short: short, Args: args}
		c.Flags().StringVarP(&v.Input, "input", "i", "ftrace.data", "data file to read")
		durationVarP(c.Flags(), &v.MinDuration, "time-filter", "t", 0, "hide calls shorter than this")
		c.Flags().IntVarP(&v.Depth, "depth", "D", 0, "hide calls nested deeper than this (0: none)")
		c.Flags().IntVar(&v.Tid, "tid", 0, "this thread only")
		c.RunE = func(cmd *cobra.Command, args []string) error {
			arg := ""
			if len(args) > 0 {
				arg = args[0]
			}
			if name == "dump" {
				name = map[bool]string{true: "chrome", false: "flamegraph"}[chrome]
			}
			out, err := cli.Create(output)
			if err != nil {
				return err
			}
			return out.Finish(ftrace.View(out, name, arg, v))
		}
		root.AddCommand(c)
		return c
	}
	rp := view("replay", "the calls nested, with durations (DURATION TID FUNCTION)", cobra.NoArgs, "replay")
	rp.Flags().BoolVar(&v.PerThread, "per-thread", false, "each thread's calls together (default: merged by time)")
	rep := view("report", "total, self, calls, average and maximum time per function", cobra.NoArgs, "report")
	rep.Flags().StringVarP(&v.Sort, "sort", "s", "total", "sort by total, self, call, avg, max, min or func")
	addJSONFlag(rep.Flags(), &v.JSON)
	view("graph [FUNC]", "the aggregated call graph under a function, with counts and times", cobra.MaximumNArgs(1), "graph")
	dump := view("dump (--chrome | --flamegraph)", "Chrome trace event JSON (Perfetto) or a time-weighted flame graph", cobra.NoArgs, "dump")
	dump.Flags().BoolVar(&chrome, "chrome", false, "Chrome trace event JSON")
	dump.Flags().BoolVar(&flame, "flamegraph", false, "flame graph of wall time (HTML; --format svg or folded)")
	dump.Flags().StringVar(&v.Format, "format", "html", "flame graph format: html, svg or folded")
	dump.Flags().StringVarP(&output, "output", "o", "", "write here instead of stdout")
	dump.MarkFlagsMutuallyExclusive("chrome", "flamegraph")
	dump.MarkFlagsOneRequired("chrome", "flamegraph")
	return root
}
