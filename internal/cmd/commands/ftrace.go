package commands

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/tools/ftrace"
	"github.com/sonde-dev/sonde/internal/view/flamegraph"
)

func newFtraceCmd() *cobra.Command {
	root := cli.Doc("ftrace", &cobra.Command{})
	var o ftrace.Options
	rec := cli.Doc("ftrace record", &cobra.Command{})
	addFtraceRecordFlags(rec.Flags(), &o)
	rec.RunE = func(cmd *cobra.Command, args []string) error {
		if (o.Pid > 0) == (len(args) > 0) {
			return cli.Usagef("give a command (-- CMD ARGS) or a process (-p PID), one of them")
		}
		o.Command, o.Version, o.Log = args, version, os.Stderr
		s, err := ftrace.Record(cmd.Context(), o)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "sonde: %d calls of %d functions in %d threads written to %s (%s; %d lost)\n", s.Calls, s.Funcs, s.Threads, cli.FileName(o.Output), s.Mechanism, s.Lost)
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
		addFtraceViewFlags(sub.Flags(), &v)
		sub.RunE = func(cmd *cobra.Command, args []string) error {
			if cmd.Name() == "dump" && !chrome && !flame {
				return cli.Usagef("needs a format: --chrome (Chrome trace JSON, for chrome://tracing or Perfetto) or --flamegraph (flame graph of wall time)")
			}
			view := map[bool]string{true: "chrome", false: "folded"}[chrome]
			if cmd.Name() != "dump" {
				view = cmd.Name()
			}
			out, err := cli.Create(output)
			if err != nil {
				return err
			}
			if view == "folded" && v.Format != "folded" {
				return out.Finish(ftraceFlameGraph(out, v))
			}
			return out.Finish(ftrace.View(out, view, append(args, "")[0], v))
		}
		root.AddCommand(sub)
		switch f := sub.Flags(); sub.Name() {
		case "replay":
			f.BoolVar(&v.PerThread, "per-thread", false, "each thread's calls together (default: merged by time)")
		case "report":
			f.StringVarP(&v.Sort, "sort", "s", "total", "sort by total, self, call, avg, max, min or func")
			cli.Choices(f, "sort", false, "total", "self", "call", "avg", "max", "min", "func")
			cli.AddJSONFlag(f, &v.JSON)
		case "dump":
			f.BoolVar(&chrome, "chrome", false, "Chrome trace event JSON")
			f.BoolVar(&flame, "flamegraph", false, "flame graph of wall time (HTML; --format svg or folded)")
			f.StringVar(&v.Format, "format", "html", "flame graph format: html, svg or folded")
			f.StringVarP(&output, "output", "o", "", "write here instead of stdout")
			cli.Conflicting(f, "chrome", "flamegraph", "dump one format at a time")
		}
	}
	return root
}

// addFtraceRecordFlags adds ftrace record's flags (uftrace's letters where it has them).
func addFtraceRecordFlags(f *pflag.FlagSet, o *ftrace.Options) {
	f.StringArrayVarP(&o.Include, "filter", "F", nil, "trace functions matching this glob (lib:glob for a library; default every function)")
	f.StringArrayVarP(&o.Exclude, "notrace", "N", nil, "do not trace functions matching this glob")
	f.IntVarP(&o.Depth, "depth", "D", 0, "record calls nested at most this deep (0: all)")
	cli.DurationVarP(f, &o.MinDuration, "time-filter", "t", 0, "record only calls lasting at least this (100us, 2ms)")
	f.StringArrayVarP(&o.Args, "argument", "A", nil, "FUNC@arg1,arg2 or FUNC@name: record integer arguments (uprobes)")
	f.StringArrayVarP(&o.Rets, "retval", "R", nil, "FUNC@retval: record the return value (uprobes)")
	f.IntVarP(&o.Pid, "pid", "p", 0, "attach to this running process (uprobes)")
	f.StringVarP(&o.Output, "output", "o", "ftrace.data", "data file to write (- for standard output)")
	cli.FileOutputs(f, "output")
	f.StringVar(&o.Mechanism, "mechanism", "auto", "auto, uprobe, or preload (in-process, for -finstrument-functions builds)")
	cli.AddDurationFlag(f, &o.Duration, "recording")
	cli.AtLeast(f, 0, "depth")
}

// addFtraceViewFlags adds the views' shared flags.
func addFtraceViewFlags(f *pflag.FlagSet, v *ftrace.ViewOptions) {
	f.StringVarP(&v.Input, "input", "i", "ftrace.data", "data file to read")
	cli.DurationVarP(f, &v.MinDuration, "time-filter", "t", 0, "hide calls shorter than this")
	f.IntVarP(&v.Depth, "depth", "D", 0, "hide calls nested deeper than this (0: none)")
	f.IntVar(&v.Tid, "tid", 0, "this thread only")
}

// ftraceFlameGraph renders the recording's folded call stacks (wall time)
// as a flame graph (html or svg).
func ftraceFlameGraph(w io.Writer, v ftrace.ViewOptions) error {
	t, err := ftrace.Load(v.Input)
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(ftrace.Folded(pw, t, v.Calls(t))) }()
	root, err := flamegraph.ParseFolded(pr, func(string) {})
	if err != nil {
		return fmt.Errorf("reading the folded stacks: %w", err)
	}
	return flamegraph.Write(w, root, v.Format, flamegraph.Options{Title: "ftrace: " + t.Root(), Unit: "ns"})
}

var _ = Register(Spec{Name: "ftrace", Group: Recording, New: newFtraceCmd, JSON: []any{ftrace.ReportDoc{}},
	BadInput: []BadInput{
		{Name: "ftrace_dump_no_format", Args: []string{"dump"}, Code: 2, Want: `^sonde ftrace dump: needs a format: --chrome .* or --flamegraph`},
		{Name: "ftrace_dump_two_formats", Args: []string{"dump", "--chrome", "--flamegraph"}, Code: 2, Want: `--chrome and --flamegraph conflict: dump one format at a time`},
	}})
