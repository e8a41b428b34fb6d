package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sonde-dev/sonde/internal/events"
	"github.com/sonde-dev/sonde/internal/perf"
	"github.com/sonde-dev/sonde/internal/procfs"
)

// usageError marks a bad command line: one line saying what is wrong and
// how to fix it, exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// usagef makes a usageError.
func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// exitStatus ends sonde with a status and no message: the traced
// command's own status, passed through as perf does.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// exitWith is nil for status 0.
func exitWith(code int) error {
	if code == 0 {
		return nil
	}
	return exitStatus(code)
}

var unknownFlag = regexp.MustCompile(`^unknown flag: --(\S+)`)

// flagError turns pflag's parse errors into one line with the fix: the
// nearest flag for a misspelt one, and where to read the options.
func flagError(cmd *cobra.Command, err error) error {
	msg := err.Error()
	if m := unknownFlag.FindStringSubmatch(msg); m != nil {
		var names []string
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Name != "help" {
				names = append(names, f.Name)
			}
		})
		if near := perf.NearestOf(m[1], names, 1); len(near) > 0 {
			msg += "; did you mean --" + near[0] + "?"
		}
	}
	return usagef("%s (see %s -h)", msg, cmd.CommandPath())
}

// parseDuration accepts a Go duration (1m30s, 500ms) or bare seconds as
// bcc and perf take them (5, 0.5).
func parseDuration(s string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f < 0 {
			return 0, fmt.Errorf("%q is negative", s)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q: want seconds (5) or a duration (500ms, 1m30s)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative", s)
	}
	return d, nil
}

// durationValue is a pflag.Value for parseDuration.
type durationValue time.Duration

func (d *durationValue) Set(s string) error {
	v, err := parseDuration(s)
	*d = durationValue(v)
	return err
}

func (d *durationValue) Type() string { return "duration" }

func (d *durationValue) String() string {
	if *d == 0 {
		return ""
	}
	return time.Duration(*d).String()
}

// durationVarP defines a duration flag that also takes bare seconds.
func durationVarP(fs *pflag.FlagSet, p *time.Duration, name, short string, def time.Duration, usage string) {
	*p = def
	fs.VarP((*durationValue)(p), name, short, usage)
}

// addDurationFlag is the common -d/--duration: how long to measure.
func addDurationFlag(fs *pflag.FlagSet, p *time.Duration, what string) {
	durationVarP(fs, p, "duration", "d", 0, "stop "+what+" after this long: seconds (5) or a duration (500ms, 1m)")
}

// addJSONFlag is the common --json (keys in docs/json.md).
func addJSONFlag(fs *pflag.FlagSet, p *bool) {
	fs.BoolVar(p, "json", false, "write JSON (keys described in docs/json.md)")
}

// acceptsCommand makes cmd take a command to run after its options, as
// perf record and perf stat do: option parsing stops at the first word
// that is not an option, so the command's own options stay its own
// (`sonde record -g ls -l`); `--` may also separate them.
func acceptsCommand(cmd *cobra.Command) *cobra.Command {
	cmd.Flags().SetInterspersed(false)
	cmd.Args = cobra.ArbitraryArgs
	return cmd
}

// targetFlags are perf's target options, bound by addTargetFlags and
// turned into a target by resolve.
type targetFlags struct {
	all              bool
	pids, tids, cpus string
}

// addTargetFlags defines -a/--all-cpus, -p/--pid, -t/--tid and -C/--cpu;
// verb says what the command does to them ("record", "count").
func addTargetFlags(fs *pflag.FlagSet, t *targetFlags, verb string) {
	fs.BoolVarP(&t.all, "all-cpus", "a", false, verb+" the whole system, on all CPUs")
	fs.StringVarP(&t.pids, "pid", "p", "", verb+" existing processes (comma-separated pids), with the threads they start")
	fs.StringVarP(&t.tids, "tid", "t", "", verb+" existing threads (comma-separated tids)")
	fs.StringVarP(&t.cpus, "cpu", "C", "", "only these CPUs (e.g. 0-1,3); without -p or -t it means -a on them")
}

// target is what a command measures.
type target struct {
	All              bool
	Pids, Tids, CPUs []int
	// Command is run and measured (with All: run while the whole system
	// is measured).
	Command []string
	// Alongside is run but not measured: the measurement of Pids or Tids
	// ends when it exits (`record -p PID sleep 5`, as perf does).
	Alongside []string
}

// Empty reports whether nothing was chosen.
func (t target) Empty() bool {
	return !t.All && len(t.Pids) == 0 && len(t.Tids) == 0 && len(t.Command) == 0
}

// String names the target as perf stat does.
func (t target) String() string {
	switch {
	case len(t.Command) > 0 && !t.All:
		return "'" + strings.Join(t.Command, " ") + "'"
	case len(t.Pids) > 0:
		return "process id '" + joinInts(t.Pids) + "'"
	case len(t.Tids) > 0:
		return "thread id '" + joinInts(t.Tids) + "'"
	}
	return "system wide"
}

// resolve checks the target options against each other and takes args
// (the words after the options) as the command to run.
func (f *targetFlags) resolve(args []string) (target, error) {
	var t target
	var err error
	if t.Pids, err = parseIntList(f.pids, "-p/--pid"); err != nil {
		return t, err
	}
	if t.Tids, err = parseIntList(f.tids, "-t/--tid"); err != nil {
		return t, err
	}
	chosen := []string{}
	if f.all {
		chosen = append(chosen, "-a/--all-cpus")
	}
	if len(t.Pids) > 0 {
		chosen = append(chosen, "-p/--pid")
	}
	if len(t.Tids) > 0 {
		chosen = append(chosen, "-t/--tid")
	}
	if len(chosen) > 1 {
		return t, usagef("%s and %s conflict: choose one target", chosen[0], chosen[1])
	}
	if err := procfs.CheckPids(t.Pids); err != nil {
		return t, err
	}
	for _, id := range t.Tids {
		if err := procfs.CheckTid(id); err != nil {
			return t, err
		}
	}
	t.All = f.all
	if f.cpus != "" {
		if t.CPUs, err = perf.ParseCPUList(f.cpus); err != nil {
			return t, usagef("-C/--cpu: %v", err)
		}
		online, _ := perf.OnlineCPUs()
		for _, c := range t.CPUs {
			if !containsInt(online, c) {
				return t, usagef("-C/--cpu: cpu %d is not online (online: %s)", c, joinInts(online))
			}
		}
		if len(t.Pids)+len(t.Tids) == 0 {
			t.All = true
		}
	}
	if len(args) > 0 {
		if _, err := exec.LookPath(args[0]); err != nil {
			return t, fmt.Errorf("command not found: %s", args[0])
		}
		if len(t.Pids)+len(t.Tids) > 0 {
			t.Alongside = args
		} else {
			t.Command = args
		}
	}
	return t, nil
}

// startAlongside runs t.Alongside, if any, with sonde's standard streams.
// The returned context ends when it exits; wait returns its exit status.
// Without one, ctx is returned as is and wait returns 0.
func (t target) startAlongside(ctx context.Context) (_ context.Context, wait func() int, _ error) {
	if len(t.Alongside) == 0 {
		return ctx, func() int { return 0 }, nil
	}
	c := exec.Command(t.Alongside[0], t.Alongside[1:]...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := c.Start(); err != nil {
		return nil, nil, fmt.Errorf("starting %s: %w", t.Alongside[0], err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		c.Wait()
		cancel()
		close(done)
	}()
	return ctx, func() int {
		// The measurement may end first (a duration, Ctrl-C): stop the
		// command then, as perf does.
		select {
		case <-done:
		default:
			c.Process.Signal(os.Interrupt)
			<-done
		}
		return c.ProcessState.ExitCode()
	}, nil
}

// parseIntList parses comma-separated positive ids.
func parseIntList(s, flagName string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v <= 0 {
			return nil, usagef("%s %q: want comma-separated positive ids", flagName, s)
		}
		out = append(out, v)
	}
	return out, nil
}

func containsInt(v []int, x int) bool {
	for _, y := range v {
		if y == x {
			return true
		}
	}
	return false
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// callGraph holds -g and --call-graph for commands that take stacks.
type callGraph struct {
	g    bool
	mode string
}

// addCallGraphFlags defines -g and --call-graph MODE (perf's spelling).
func addCallGraphFlags(fs *pflag.FlagSet, c *callGraph) {
	fs.BoolVarP(&c.g, "callchain", "g", false, "record call chains (same as --call-graph fp)")
	fs.StringVar(&c.mode, "call-graph", "", "record call chains walked this way: fp (frame pointers); dwarf comes with the unwinder (issue 11)")
}

// enabled says whether stacks are wanted, refusing modes not built yet.
func (c callGraph) enabled() (bool, error) {
	switch c.mode {
	case "":
		return c.g, nil
	case "fp":
		return true, nil
	case "no", "none":
		return false, nil
	case "dwarf", "lbr", "auto":
		return false, usagef("--call-graph %s: not available yet, sonde walks frame pointers; use --call-graph fp (dwarf comes with the unwinder, issue 11)", c.mode)
	}
	return false, usagef("--call-graph %q: want fp", c.mode)
}

// sampling holds -F/--freq and -c/--count.
type sampling struct {
	freq   string
	period uint64
}

// defaultFreq is a prime near 1 kHz: a prime rate does not fall into
// lockstep with periodic work (timers, frames, ticks) the way 1000 Hz would.
const defaultFreq = 997

func addSamplingFlags(fs *pflag.FlagSet, s *sampling) {
	fs.StringVarP(&s.freq, "freq", "F", "", fmt.Sprintf("samples per second per CPU, or 'max' (default %d)", defaultFreq))
	fs.Uint64VarP(&s.period, "count", "c", 0, "sample every COUNT events instead of by frequency")
}

// resolve returns a frequency in Hz or a period in events (the other 0).
func (s sampling) resolve() (freq, period uint64, err error) {
	switch {
	case s.period > 0 && s.freq != "":
		return 0, 0, usagef("-F/--freq and -c/--count conflict: sample by frequency or by count")
	case s.period > 0:
		return 0, s.period, nil
	case s.freq == "max":
		m, err := perf.MaxSampleRate()
		return m, 0, err
	case s.freq == "":
		return defaultFreq, 0, nil
	}
	f, err := strconv.ParseUint(s.freq, 10, 64)
	if err != nil || f == 0 {
		return 0, 0, usagef("-F/--freq %q: want a positive number of Hz or 'max'", s.freq)
	}
	if m, err := perf.MaxSampleRate(); err == nil && f > m {
		return 0, 0, usagef("-F/--freq %d is above kernel.perf_event_max_sample_rate (%d); use -F max or raise the sysctl", f, m)
	}
	return f, 0, nil
}

// eventFlags holds -e/--event (repeatable, each a comma list) and
// --filter (for the tracepoints of the last -e).
type eventFlags struct {
	names  []string
	filter string
}

func addEventFlags(fs *pflag.FlagSet, e *eventFlags, what string) {
	fs.StringArrayVarP(&e.names, "event", "e", nil, what+": comma list, repeatable; sonde list shows them (cpu-clock, page-faults, sched:*, u:BIN:FUNC, …)")
	fs.StringVar(&e.filter, "filter", "", "kernel-side tracepoint filter for the tracepoints of the last -e (e.g. 'nr_sector > 8')")
}

// resolve turns the names into event specs (def when none were given)
// and the filter into a map from spec index to filter.
func (e eventFlags) resolve(def []string) ([]events.Spec, map[int]string, error) {
	names := e.names
	if len(names) == 0 {
		names = def
	}
	var specs []events.Spec
	filters := map[int]string{}
	for i, n := range names {
		ss, err := events.Resolve([]string{n})
		if err != nil {
			return nil, nil, usagef("%v", err)
		}
		if e.filter != "" && i == len(names)-1 {
			for j, s := range ss {
				if !s.Tracepoint() {
					return nil, nil, usagef("--filter applies to tracepoints, not %s", s)
				}
				filters[len(specs)+j] = e.filter
			}
		}
		specs = append(specs, ss...)
	}
	return specs, filters, nil
}
