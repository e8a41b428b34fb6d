package memleak

import (
	"context"
	"strings"

	"github.com/sonde-dev/sonde/internal/cli"
	"github.com/sonde-dev/sonde/internal/view/stackprof"
)

// View is what sonde memleak writes besides the report.
type View struct {
	Top           int
	Flame, Output string // flame graph and data file ("" for none)
}

// Main runs sonde memleak once the shared live options are started: it
// traces args (a command) or l.Pid, prints a report every interval and
// the final one, writes the files asked for and ends with the command's
// exit status.
func Main(ctx context.Context, l *cli.Live, o Options, v View, target string, args []string) error {
	if l.Pid != 0 && len(args) > 0 {
		return cli.Usagef("-p/--pid and a command conflict: trace a process or run one")
	}
	o.Pid, o.Command, o.Duration, o.Interval = l.Pid, args, l.Duration, l.Interval
	if err := o.check(); err != nil {
		return cli.Usagef("%v", err)
	}
	if len(args) > 0 {
		target = cli.Target{Command: args}.String()
	}
	ro := ReportOptions{Target: target, Top: v.Top, Older: o.Older}
	if l.Interval > 0 {
		o.OnInterval = func(r *Result) { l.W.Interval(NewReport(r, ro)) }
	}
	res, err := Run(ctx, o)
	if err != nil {
		return err
	}
	files := stackprof.Files{Data: v.Output, Flame: v.Flame, Title: "sonde memleak " + strings.Join(args, " "), What: "outstanding bytes"}
	if err := files.Finish(l.W, res.Profile, NewReport(res, ro)); err != nil {
		return err
	}
	if res.Exited {
		return cli.ExitWith(res.ExitCode)
	}
	return nil
}
