package commands

import (
	"context"
	"os"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/format/datafile"
	"github.com/sonde-dev/sonde/internal/tools/record"
)

// Record is `sonde record`'s command line: its flags fill the fields, Run
// records.
type Record struct {
	Measured
	Sampling  cli.Sampling
	CallGraph cli.CallGraph
	Pages     int
	Quiet     bool
	NoInterp  bool   // no interpreter frames (--no-interp)
	Version   string // written into the data file
}

// Run records the target args name into r.Output, with progress and a
// summary on a terminal's stderr; the error is the recorded command's
// exit status when it failed.
func (r *Record) Run(args []string) error {
	t, err := r.resolve(args, "record")
	if err != nil {
		return err
	}
	// record.Options.Output "" means a recording kept in memory (for
	// callers inside sonde); from the command line it is a mistake,
	// found now rather than after the recording.
	if err := datafile.CheckPath(r.Output); err != nil {
		return err
	}
	o := record.Options{All: t.All, Pids: t.Pids, Tids: t.Tids, CPUs: t.CPUs, Cgroup: t.Cgroup, Command: t.Command,
		Duration: r.Duration, RingPages: r.Pages, Version: r.Version, Output: r.Output, NoInterp: r.NoInterp}
	if o.Events, o.Filters, err = r.Events.Resolve([]string{"cpu-clock"}); err != nil {
		return err
	}
	if o.Freq, o.Period, err = r.Sampling.Resolve(); err != nil {
		return err
	}
	if o.CallGraph, err = r.CallGraph.Mode(); err != nil {
		return err
	}
	o.Callchain = o.CallGraph != ""
	if r.Pages <= 0 || r.Pages&(r.Pages-1) != 0 {
		return cli.Usagef("-m/--mmap-pages %d: want a power of two", r.Pages)
	}
	clearLine := func() {}
	if !r.Quiet && cli.IsTerminal(2) {
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
	if !r.Quiet {
		record.Summarize(os.Stderr, res, cli.FileName(r.Output), cli.FileSize(r.Output))
	}
	return cli.ExitWith(exit)
}
