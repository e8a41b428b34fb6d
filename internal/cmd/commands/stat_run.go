package commands

import (
	"context"
	"time"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/tools/stat"
	"github.com/sonde-dev/sonde/internal/view/statview"
)

// Stat is `sonde stat`'s command line: its flags fill the fields, Run
// counts.
type Stat struct {
	Measured
	Repeat   int
	Interval time.Duration
	Sep      string
	JSON     bool
}

// Measured is what record and stat share: perf's target options, the
// events, how long, and the file written.
type Measured struct {
	Target   cli.TargetFlags
	Events   cli.Events
	Duration time.Duration
	Output   string
}

// resolve names the target of args; verb says what needs one ("record").
func (m *Measured) resolve(args []string, verb string) (cli.Target, error) {
	t, err := m.Target.Resolve(args)
	if err == nil && t.Empty() {
		err = cli.Usagef("nothing to %s: give a command, -p PID, -t TID or -a", verb)
	}
	return t, err
}

// Run counts for the target args name and writes the counts; the error
// is the counted command's exit status when it failed.
func (s *Stat) Run(args []string) error {
	t, err := s.resolve(args, "count")
	if err != nil {
		return err
	}
	if s.Repeat < 1 || (s.Repeat > 1 && len(t.Command) == 0) {
		return cli.Usagef("-r/--repeat needs a command and N ≥ 1")
	}
	o := stat.Options{All: t.All, Cgroup: t.Cgroup, Pids: t.Pids, Tids: t.Tids, CPUs: t.CPUs, Command: t.Command, Duration: s.Duration, Interval: s.Interval}
	if o.Specs, o.Filters, err = s.Events.Resolve(stat.DefaultEvents(o.All)); err != nil {
		return err
	}
	// The file is checked (and opened) before counting starts, not
	// discovered unwritable after it.
	out, err := cli.CreateOr(s.Output, cli.Stderr())
	if err != nil {
		return err
	}
	if s.Interval > 0 {
		iw := &statview.IntervalWriter{W: out, Sep: s.Sep, JSON: s.JSON}
		o.OnInterval = func(el time.Duration, c []stat.Count) {
			iw.Write(el, c)
			out.Flush() // each interval as it ends; an error is kept for Close
		}
	}
	var runs []*stat.Result
	exit, err := t.Measure(context.Background(), func(ctx context.Context) (int, error) {
		for range s.Repeat {
			res, err := stat.Run(ctx, o)
			if err != nil {
				return 0, err
			}
			runs = append(runs, res)
		}
		return runs[len(runs)-1].ExitCode, nil
	})
	if err != nil {
		return out.Finish(err)
	}
	switch {
	case s.JSON && s.Interval == 0:
		err = statview.WriteJSON(out, runs, t.String())
	case s.Sep != "":
		statview.WriteCSV(out, runs, s.Sep)
	case s.Interval == 0:
		statview.WriteText(out, runs, t.String())
	}
	if err := out.Finish(err); err != nil {
		return err
	}
	return cli.ExitWith(exit)
}
