package commands

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/tools/ftrace"
)

func init() {
	Register(Spec{Name: "ftrace", Group: Recording, New: newFtraceCmd, JSON: []any{ftrace.ReportDoc{}}})
}

func newFtraceCmd() *cobra.Command {
	root := cli.Doc("ftrace", &cobra.Command{})
	var o ftrace.Options
	rec := cli.Doc("ftrace record", &cobra.Command{})
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
		name string
		args int
	}{{"replay", 0}, {"report", 0}, {"graph", 1}, {"dump", 0}} {
		sub := cli.Doc("ftrace "+c.name, &cobra.Command{Args: cobra.MaximumNArgs(c.args)})
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
