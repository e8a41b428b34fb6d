package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/collect/cgroup"
	"github.com/sonde-dev/sonde/internal/collect/runctl"
	"github.com/sonde-dev/sonde/internal/format/outfile"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/model/histogram"
	"github.com/sonde-dev/sonde/internal/model/stackstat"
	"github.com/sonde-dev/sonde/internal/view/dist"
	"github.com/sonde-dev/sonde/internal/view/emit"
	"github.com/sonde-dev/sonde/internal/view/stackprof"
)

// Live is what the live BPF tools share, with bcc's habits: -p PID (one
// process, filtered in the kernel), -d/--duration or a bare DURATION
// (`offcpu 5`), -i/--interval, --json; the run ends on Ctrl-C or SIGTERM.
type Live struct {
	Pid                int
	Duration, Interval time.Duration
	JSON               bool
	Intervals          bool // the tool reports every -i/--interval (at least MinInterval)
	DurationArg        bool // a bare argument is the duration
	// TakesCommand: the arguments are a command to run (AcceptsCommand);
	// without -p, its run is the measurement, and Start says nothing.
	TakesCommand bool
	// Argv is the command to run, set by Start (with TakesCommand).
	Argv  []string
	Dist  bool                                          // the tool shows distributions: -u/--unit, --linear
	Check func(cmd *cobra.Command, args []string) error // the tool's own checks, first in Start
	// Cgroups: the tool filters by cgroup in the kernel (-G/--cgroup);
	// Cgroup is the one named, set by Start.
	Cgroups    bool
	Cgroup     *cgroup.Target
	cgroupName string
	// ReportFile: -o/--output FILE writes the final report (text, or JSON
	// with --json) to FILE instead of standard output ("-": standard
	// output), whole or not at all; the tool writes it with Final. For
	// tools without intervals.
	ReportFile  bool
	output      string
	W           *emit.Writer // set by Start
	DistOptions dist.Options // with Dist, set by Start
	dist        Dist
	lap         time.Time // when the current interval began
}

// MinInterval is the shortest -i/--interval of a live tool: a report
// costs a map walk, and shorter ones would measure sonde.
const MinInterval = 100 * time.Millisecond

// Command adds the shared flags to c; pidUsage says what -p does ("" for
// no -p).
func (l *Live) Command(c *cobra.Command, pidUsage string) *cobra.Command {
	if l.TakesCommand && !l.DurationArg {
		AcceptsCommand(c)
	}
	f := c.Flags()
	if pidUsage != "" {
		f.IntVarP(&l.Pid, "pid", "p", 0, pidUsage)
		AtLeast(f, 1, "pid")
	}
	if l.Cgroups {
		f.StringVarP(&l.cgroupName, "cgroup", "G", "", "trace only the tasks of this cgroup and its children (a path in the cgroup hierarchy, as perf -G takes it)")
	}
	AddDurationFlag(f, &l.Duration, "tracing")
	if l.ReportFile {
		f.StringVarP(&l.output, "output", "o", "", "write the report to this file instead of standard output (- for standard output)")
	}
	if l.Intervals {
		DurationVarP(f, &l.Interval, "interval", "i", 0, "print a report every interval: seconds (1) or a duration (500ms)")
		AtLeast(f, MinInterval, "interval")
	}
	AddJSONFlag(f, &l.JSON)
	if l.Dist {
		l.dist.Add(f)
	}
	return c
}

// RunE is a live tool's RunE: Start (what as there), then run with the
// context that ends on Ctrl-C or SIGTERM and the target's name.
func (l *Live) RunE(what string, run func(ctx context.Context, target string, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		ctx, target, stop, err := l.Start(cmd, args, what)
		if err != nil {
			return err
		}
		defer stop()
		return run(ctx, target, args)
	}
}

// Start checks the tool's options (Check, then the shared ones) and says on a terminal what runs (what,
// unless empty or a traced command sets the run's length itself). The
// context ends on Ctrl-C or SIGTERM (call stop); target names what is
// traced as the text views do.
func (l *Live) Start(cmd *cobra.Command, args []string, what string) (ctx context.Context, target string, stop func(), err error) {
	if l.Check != nil {
		if err := l.Check(cmd, args); err != nil {
			return nil, "", nil, err
		}
	}
	if l.Dist {
		if l.DistOptions, err = l.dist.Options(); err != nil {
			return nil, "", nil, err
		}
	}
	if l.output != "" {
		if err := outfile.Check(l.output); err != nil {
			return nil, "", nil, err // before the run, not after it
		}
	}
	if l.TakesCommand && isCommand(cmd, args, l.DurationArg) {
		if l.Pid != 0 {
			return nil, "", nil, Usagef("-p/--pid and a command conflict: trace a process or run one")
		}
		l.Argv = args
	} else if l.DurationArg && len(args) > 0 {
		if err := l.BareDuration(cmd, args); err != nil {
			return nil, "", nil, err
		}
	}
	if target, err = CheckLive(l.Pid); err != nil {
		return nil, "", nil, err
	}
	if l.cgroupName != "" {
		if l.Cgroup, err = ResolveCgroup(l.cgroupName); err != nil {
			return nil, "", nil, err
		}
		target = "cgroup " + l.Cgroup.Path
	}
	if len(l.Argv) > 0 {
		what = "" // the command's run is the measurement
		target = Target{Command: l.Argv}.String()
	}
	if what != "" && IsTerminal(2) {
		how := "Ctrl-C to stop"
		if l.Duration > 0 {
			how = "for " + l.Duration.String()
		}
		fmt.Fprintf(os.Stderr, "sonde: %s, %s\n", what, how)
	}
	l.W = emit.New(os.Stdout, l.JSON)
	// With intervals the output is JSON Lines to the end.
	l.W.Lines = l.Interval > 0
	l.lap = time.Now()
	ctx, stop = runctl.WithSignals(context.Background())
	return ctx, target, stop, nil
}

// Final writes the run's last report: to the -o/--output file when one
// was given (ReportFile), else where W writes.
func (l *Live) Final(r emit.Report) error {
	if l.output == "" || l.output == outfile.Stdout {
		return l.W.Final(r)
	}
	out, err := Create(l.output)
	if err != nil {
		return err
	}
	return out.Finish(emit.New(out, l.JSON).Final(r))
}

// Lap returns how long the interval now ending lasted, and starts the next.
func (l *Live) Lap() time.Duration {
	now := time.Now()
	d := now.Sub(l.lap)
	l.lap = now
	return d
}

// Span is how long the final report covers: the whole run, or with -i
// the last, partial interval.
func (l *Live) Span(elapsed time.Duration) time.Duration {
	if l.Interval > 0 {
		return l.Lap()
	}
	return elapsed
}

// isCommand says whether a tool that takes both a bare duration and a
// command was given a command: one that takes a bare duration takes a
// command only after -- (`profile -- ./app`), so options still come in
// any order (`offcpu 5 -p 42`) and a mistyped duration is one.
func isCommand(cmd *cobra.Command, args []string, durationArg bool) bool {
	if len(args) == 0 {
		return false
	}
	return !durationArg || cmd.ArgsLenAtDash() == 0
}

// BareDuration takes bcc's positional duration: `offcpu 5` is `offcpu -d 5`.
func (l *Live) BareDuration(cmd *cobra.Command, args []string) error {
	if len(args) > 1 {
		return Usagef("unexpected argument %q: the only argument is how long to trace (%s 5)", args[1], cmd.Name())
	}
	if cmd.Flags().Changed("duration") {
		return Usagef("two durations: -d/--duration and %q; give one", args[0])
	}
	d, err := ParseDuration(args[0])
	if err != nil {
		return Usagef("unexpected argument %q: the only argument is how long to trace, in seconds (%s 5) or as a duration (500ms)", args[0], cmd.Name())
	}
	l.Duration = d
	return nil
}

// CheckLive checks a live BPF tool's -p process (0: none) and that sonde
// may use BPF, and names the target.
func CheckLive(pid int) (target string, err error) {
	if target, err = PidTarget(pid); err != nil {
		return "", err
	}
	return target, bpfskel.CheckPrivileges()
}

// PidTarget checks a tool's one -p process and names the target.
func PidTarget(pid int) (string, error) {
	if pid == 0 {
		return Target{All: true}.String(), nil
	}
	// These tools filter on the process in the kernel: no -t.
	if err := CheckPid(pid); err != nil {
		return "", err
	}
	return Target{Pids: []int{pid}}.String(), nil
}

// Stacks are the options profile, offcpu and wakeup share: the side of the
// stack (bcc's -U, -K), the threads and commands shown, the files written.
type Stacks struct {
	User, Kernel, Folded, PerThread bool
	Flame, Output                   string
	Comms                           []string
}

// Add defines the flags; unit is what folded values count.
func (s *Stacks) Add(f *pflag.FlagSet, unit string) {
	f.BoolVarP(&s.User, "user", "U", false, "user stacks only")
	f.BoolVarP(&s.Kernel, "kernel", "K", false, "kernel stacks only")
	f.BoolVar(&s.PerThread, "per-thread", false, "keep threads apart")
	f.StringSliceVar(&s.Comms, "comm", nil, "only these commands in the output (comma-separated)")
	f.BoolVarP(&s.Folded, "folded", "f", false, "print collapsed stacks instead of a report (values in "+unit+")")
	f.StringVar(&s.Flame, "flamegraph", "", "also write a flame graph (.html, or .svg)")
	f.StringVarP(&s.Output, "output", "o", "", "also write a data file for report and flamegraph (- for standard output)")
	FileOutputs(f, "output", "flamegraph")
	Conflicting(f, "user", "kernel", "leave both out for both stacks")
}

// Tasks is the --comm filter, for the tool to apply as it reads its
// stacks, before any output is formed.
func (s *Stacks) Tasks() model.Tasks { return model.Tasks{Comms: s.Comms} }

// Check refuses options that exclude each other.
func (s *Stacks) Check() error {
	if s.User && s.Kernel {
		return Usagef("-U/--user and -K/--kernel conflict: leave both out for both stacks")
	}
	return nil
}

// UserOf is c, how complete the user stacks are, when user stacks were
// taken (not with -K), for the reports to say.
func (s *Stacks) UserOf(c *stackstat.Completeness) *stackstat.Completeness {
	if s.Kernel {
		return nil
	}
	return c
}

// Stacked is a run of a tool that counts stacks (profile, offcpu, wakeup).
type Stacked[R any] struct {
	Title string // of the flame graph and data file
	// Run runs the tool; onInterval prints a report every -i (nil without
	// -i, and with -f: folded stacks come once, at the end).
	Run func(onInterval func(R)) (R, error)
	// Report is a result's report, every interval and at the end.
	Report func(R) emit.Report
	// Profile is the final profile, and what its values count (for the files).
	Profile func(R) (p *model.Profile, what string)
	// Exit is the traced command's exit status, when it ran one and it
	// ended (nil: the tool runs no command); sonde then exits with it.
	Exit func(R) (code int, exited bool)
}

// RunStacks runs t, then writes the final report and the files asked for.
func RunStacks[R any](l *Live, s *Stacks, t Stacked[R]) error {
	var each func(R)
	if l.Interval > 0 && !s.Folded {
		each = func(r R) { l.W.Interval(t.Report(r)) }
	}
	r, err := t.Run(each)
	if err != nil {
		return err
	}
	p, what := t.Profile(r)
	files := stackprof.Files{Data: s.Output, Flame: s.Flame, Folded: s.Folded, Title: t.Title, What: what, Notes: os.Stderr}
	if err := files.Finish(l.W, p, t.Report(r)); err != nil {
		return err
	}
	if t.Exit != nil {
		if code, exited := t.Exit(r); exited {
			return ExitWith(code)
		}
	}
	return nil
}

// Dist is how funclat, runqlat and biolat show distributions.
type Dist struct {
	Unit   string
	Linear uint64
}

// Add defines -u/--unit and --linear.
func (d *Dist) Add(f *pflag.FlagSet) {
	f.StringVarP(&d.Unit, "unit", "u", "us", "histogram unit: ns, us, ms or s")
	f.Uint64Var(&d.Linear, "linear", 0, "linear buckets of this width (in --unit) instead of powers of two")
	AtLeast(f, 1, "linear")
}

// Options checks the unit.
func (d *Dist) Options() (dist.Options, error) {
	u, err := histogram.ParseUnit(d.Unit)
	if err != nil {
		return dist.Options{}, Usagef("-u/--unit: %v", err)
	}
	return dist.Options{Unit: u, Linear: d.Linear}, nil
}
