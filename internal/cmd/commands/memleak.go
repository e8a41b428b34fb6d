package commands

import (
	"context"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/tools/memleak"
	"github.com/sonde-dev/sonde/internal/view/stackprof"
)

// newMemleakCmd is sonde memleak: the live tools' options (cli.Live), its
// own (memleakView.AddFlags), and a run of runMemleak.
func newMemleakCmd() *cobra.Command {
	l := &cli.Live{Intervals: true, TakesCommand: true, Cgroups: true}
	o, v := memleak.Options{Version: version}, memleakView{}
	cmd := l.Command(cli.Doc("memleak", &cobra.Command{}), "trace this process")
	v.AddFlags(cmd.Flags(), &o)
	cmd.RunE = l.RunE("tracing allocations", func(ctx context.Context, tgt string, args []string) error {
		return runMemleak(ctx, l, o, v, tgt, args)
	})
	return cmd
}

// AddFlags defines memleak's own flags. bcc's -o AGE is --older: -o is
// the data file in every sonde command.
func (v *memleakView) AddFlags(f *pflag.FlagSet, o *memleak.Options) {
	cli.DurationVarP(f, &o.Older, "older", "", 0, "only allocations at least this old: seconds or a duration (bcc's -o; -o is the data file here)")
	f.Uint32VarP(&o.Every, "sample-rate", "s", 1, "track every Nth allocation call (estimates scaled)")
	f.Uint64Var(&o.SampleBytes, "sample-bytes", 0, "track allocations of B bytes or more, smaller ones with probability size/B (estimates scaled)")
	f.IntVar(&v.Top, "top", 10, "stacks to print")
	cli.AtLeast(f, 1, "top")
	cli.AddNoInterpFlag(f, &o.NoInterp)
	f.BoolVar(&o.Kernel, "kernel", false, "the kernel's allocations (kmem tracepoints): system-wide, or made by -p/the command")
	f.StringVar(&o.Lib, "lib", "", "the allocator's library or binary (default: libc; with --symbol-prefix, the program)")
	f.StringVar(&o.Prefix, "symbol-prefix", "", "the allocator's function name prefix (je_, tc_): PREFIXmalloc, PREFIXfree, …")
	f.StringVar(&v.Flame, "flamegraph", "", "also write a flame graph weighted by outstanding bytes (.html or .svg)")
	f.StringVarP(&v.Output, "output", "o", "", "also write a data file for report and flamegraph (- for standard output)")
	cli.FileOutputs(f, "output", "flamegraph")
}

// memleakView is what sonde memleak writes besides the report.
type memleakView struct {
	Top           int
	Flame, Output string // flame graph and data file ("" for none)
}

// runMemleak runs sonde memleak once the shared live options are started: it
// traces args (a command) or l.Pid, prints a report every interval and
// the final one, writes the files asked for and ends with the command's
// exit status.
func runMemleak(ctx context.Context, l *cli.Live, o memleak.Options, v memleakView, target string, args []string) error {
	if l.Pid != 0 && len(args) > 0 {
		return cli.Usagef("-p/--pid and a command conflict: trace a process or run one")
	}
	o.Pid, o.Cgroup, o.Command, o.Duration, o.Interval = l.Pid, l.Cgroup, args, l.Duration, l.Interval
	o.NoLines = v.Output == "" // only a data file keeps source lines
	if err := o.Check(); err != nil {
		return cli.Usagef("%v", err)
	}
	if len(args) > 0 {
		target = cli.Target{Command: args}.String()
	}
	ro := memleak.ReportOptions{Target: target, Top: v.Top, Older: o.Older}
	if l.Interval > 0 {
		o.OnInterval = func(r *memleak.Result) { l.W.Interval(memleak.NewReport(r, ro)) }
	}
	res, err := memleak.Run(ctx, o)
	if err != nil {
		return err
	}
	files := stackprof.Files{Data: v.Output, Flame: v.Flame, Title: "sonde memleak " + strings.Join(args, " "), What: "outstanding bytes"}
	if err := files.Finish(l.W, res.Profile, memleak.NewReport(res, ro)); err != nil {
		return err
	}
	if res.Exited {
		return cli.ExitWith(res.ExitCode)
	}
	return nil
}

var _ = Register(Spec{Name: "memleak", Group: BPF, New: newMemleakCmd, JSON: []any{memleak.Report{}}})
