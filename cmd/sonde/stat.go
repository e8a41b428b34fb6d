package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/sonde-dev/sonde/internal/events"
	"github.com/sonde-dev/sonde/internal/perf"
	"github.com/sonde-dev/sonde/internal/stat"
)

// stringList collects repeated flags (-e a -e b).
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

var defaultStatEvents = []string{"task-clock", "context-switches", "cpu-migrations", "page-faults", "cycles", "instructions", "branches", "branch-misses"}

func runStat(args []string) (int, error) {
	fs := newFlags("stat", "[-e EV,…] [--filter EXPR] [-a | -p PID | -t TID | -C CPUS] [-r N] [-I MS] [-x SEP | --json] [--duration D] [-- CMD]")
	var evs stringList
	fs.Var(&evs, "e", "events to count (comma list; tracepoint globs like 'block:*'; repeatable)")
	filter := fs.String("filter", "", "tracepoint filter for the tracepoints of the last -e")
	all := fs.Bool("a", false, "system-wide")
	pids := fs.String("p", "", "count existing processes")
	tids := fs.String("t", "", "count existing threads")
	cpus := fs.String("C", "", "only these CPUs (with -a)")
	repeat := fs.Int("r", 1, "run the command N times and show mean ± stddev")
	interval := fs.Int("I", 0, "print counts every MS milliseconds")
	sep := fs.String("x", "", "CSV output with this separator")
	asJSON := fs.Bool("json", false, "JSON output")
	duration := fs.Duration("duration", 0, "stop after this long")
	if err := parseFlags(fs, args); err != nil {
		return 2, err
	}
	o := stat.Options{Command: fs.Args(), All: *all, Duration: *duration, Filters: map[int]string{}}
	var err error
	if o.Pids, err = parseIntList(*pids, "-p"); err != nil {
		return 2, err
	}
	if o.Tids, err = parseIntList(*tids, "-t"); err != nil {
		return 2, err
	}
	if *cpus != "" {
		if o.CPUs, err = perf.ParseCPUList(*cpus); err != nil {
			return 2, usageError{err.Error()}
		}
		if len(o.Pids)+len(o.Tids) == 0 {
			o.All = true
		}
	}
	for _, p := range o.Pids {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", p)); err != nil {
			return 1, fmt.Errorf("no such process: %d", p)
		}
	}
	if len(o.Command) == 0 && !o.All && len(o.Pids)+len(o.Tids) == 0 {
		return 2, usageError{"nothing to count: give a command after --, -p PID, -t TID or -a"}
	}
	if *repeat < 1 || (*repeat > 1 && len(o.Command) == 0) {
		return 2, usageError{"-r needs a command and N ≥ 1"}
	}
	if *interval < 0 || (*interval > 0 && *interval < 10) {
		return 2, usageError{"-I: at least 10 ms"}
	}
	names := []string(evs)
	if len(names) == 0 {
		names = defaultStatEvents
		if o.All {
			names = append([]string{"cpu-clock"}, defaultStatEvents[1:]...)
		}
	}
	var specs []events.Spec
	for i, n := range names {
		ss, err := events.Resolve([]string{n})
		if err != nil {
			return 2, usageError{err.Error()}
		}
		if *filter != "" && i == len(names)-1 {
			for j, s := range ss {
				if !s.Tracepoint() {
					return 2, usageError{fmt.Sprintf("--filter applies to tracepoints, not %s", s)}
				}
				o.Filters[len(specs)+j] = *filter
			}
		}
		specs = append(specs, ss...)
	}
	o.Specs = specs
	out := os.Stdout
	if *interval > 0 {
		o.Interval = time.Duration(*interval) * time.Millisecond
		if *sep == "" && !*asJSON {
			fmt.Fprintf(out, "#%15s %20s %-8s %s\n", "time", "counts", "unit", "events")
		}
		o.OnInterval = func(el time.Duration, counts []stat.Count) {
			for _, c := range counts {
				switch {
				case *asJSON:
					json.NewEncoder(out).Encode(map[string]any{"interval": el.Seconds(), "event": c.Event, "value": c.Value, "supported": c.Supported})
				case *sep != "":
					fmt.Fprintf(out, "%.9f%s%s%s%s\n", el.Seconds(), *sep, valueString(c), *sep, c.Event)
				default:
					fmt.Fprintf(out, "%16.9f %20s %-8s %s\n", el.Seconds(), valueString(c), unitOf(c), c.Event)
				}
			}
		}
	}
	var runs []*stat.Result
	exit := 0
	for r := 0; r < *repeat; r++ {
		res, err := stat.Run(context.Background(), o)
		if err != nil {
			return 1, err
		}
		runs = append(runs, res)
		exit = res.ExitCode
	}
	target := "system wide"
	switch {
	case len(o.Command) > 0 && !o.All:
		target = "'" + strings.Join(o.Command, " ") + "'"
	case len(o.Pids) > 0:
		target = "process id '" + *pids + "'"
	case len(o.Tids) > 0:
		target = "thread id '" + *tids + "'"
	}
	switch {
	case *asJSON:
		printStatJSON(out, runs, target)
	case *sep != "":
		printStatCSV(out, runs, *sep)
	case *interval == 0:
		printStat(out, runs, target)
	}
	return exit, nil
}

func unitOf(c stat.Count) string {
	if c.Event == "task-clock" || c.Event == "cpu-clock" {
		return "msec"
	}
	return ""
}

func valueString(c stat.Count) string {
	switch {
	case !c.Supported:
		return "<not supported>"
	case !c.Counted():
		return "<not counted>"
	case unitOf(c) == "msec":
		return fmt.Sprintf("%.2f", c.Value/1e6)
	}
	return commas(uint64(math.Round(c.Value)))
}

func commas(v uint64) string {
	s := fmt.Sprint(v)
	var b strings.Builder
	for i, ch := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(ch)
	}
	return b.String()
}

// meanStd of one event's values over the runs.
func meanStd(runs []*stat.Result, i int) (float64, float64) {
	var sum, sq float64
	for _, r := range runs {
		sum += r.Counts[i].Value
	}
	n := float64(len(runs))
	mean := sum / n
	for _, r := range runs {
		d := r.Counts[i].Value - mean
		sq += d * d
	}
	if len(runs) < 2 {
		return mean, 0
	}
	// Standard error of the mean, as perf stat -r prints it.
	return mean, math.Sqrt(sq/(n-1)) / math.Sqrt(n)
}

func find(counts []stat.Count, name string) (stat.Count, bool) {
	for _, c := range counts {
		if c.Event == name && c.Counted() {
			return c, true
		}
	}
	return stat.Count{}, false
}

// derived is the perf-style comment after '#'.
func derived(c stat.Count, mean float64, counts []stat.Count, elapsed time.Duration, runs int) string {
	secs := elapsed.Seconds()
	if tc, ok := find(counts, "task-clock"); ok {
		secs = tc.Value / 1e9
	} else if cc, ok := find(counts, "cpu-clock"); ok {
		secs = cc.Value / 1e9
	}
	switch c.Event {
	case "task-clock", "cpu-clock":
		return fmt.Sprintf("%8.3f CPUs utilized", mean/1e9/elapsed.Seconds())
	case "instructions":
		if cy, ok := find(counts, "cycles"); ok && cy.Value > 0 {
			return fmt.Sprintf("%8.2f  insn per cycle", mean/cy.Value)
		}
	case "branch-misses":
		if br, ok := find(counts, "branches"); ok && br.Value > 0 {
			return fmt.Sprintf("%8.2f%% of all branches", 100*mean/br.Value)
		}
	case "cache-misses":
		if cr, ok := find(counts, "cache-references"); ok && cr.Value > 0 {
			return fmt.Sprintf("%8.2f%% of all cache refs", 100*mean/cr.Value)
		}
	}
	if secs <= 0 {
		return ""
	}
	rate := mean / secs
	switch {
	case rate >= 1e9:
		return fmt.Sprintf("%8.3f G/sec", rate/1e9)
	case rate >= 1e6:
		return fmt.Sprintf("%8.3f M/sec", rate/1e6)
	case rate >= 1e3:
		return fmt.Sprintf("%8.3f K/sec", rate/1e3)
	}
	return fmt.Sprintf("%8.3f /sec", rate)
}

func printStat(w io.Writer, runs []*stat.Result, target string) {
	last := runs[len(runs)-1]
	var elapsed, user, sys time.Duration
	for _, r := range runs {
		elapsed += r.Elapsed
		user += r.User
		sys += r.Sys
	}
	n := time.Duration(len(runs))
	elapsed, user, sys = elapsed/n, user/n, sys/n
	fmt.Fprintf(w, "\n Performance counter stats for %s", target)
	if len(runs) > 1 {
		fmt.Fprintf(w, " (%d runs)", len(runs))
	}
	fmt.Fprint(w, ":\n\n")
	for i, c := range last.Counts {
		mean, se := meanStd(runs, i)
		c.Value = mean
		val := valueString(c)
		line := fmt.Sprintf("%19s %-6s %-28s", val, unitOf(c), c.Event)
		if c.Counted() {
			if d := derived(c, mean, last.Counts, elapsed, len(runs)); d != "" {
				line += " # " + d
			}
			if len(runs) > 1 && mean != 0 {
				line += fmt.Sprintf("  ( +-%6.2f%% )", 100*se/mean)
			}
			if pct := c.RunningPct(); pct < 99.99 {
				line += fmt.Sprintf("  (%.2f%%)", pct)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	fmt.Fprintf(w, "\n%19.9f seconds time elapsed", elapsed.Seconds())
	if len(runs) > 1 {
		var sq float64
		for _, r := range runs {
			d := r.Elapsed.Seconds() - elapsed.Seconds()
			sq += d * d
		}
		se := math.Sqrt(sq/float64(len(runs)-1)) / math.Sqrt(float64(len(runs)))
		fmt.Fprintf(w, "  ( +-%6.2f%% )", 100*se/elapsed.Seconds())
	}
	fmt.Fprintln(w)
	if user+sys > 0 {
		fmt.Fprintf(w, "\n%19.9f seconds user\n%19.9f seconds sys\n", user.Seconds(), sys.Seconds())
	}
	fmt.Fprintln(w)
}

func printStatCSV(w io.Writer, runs []*stat.Result, sep string) {
	last := runs[len(runs)-1]
	for i, c := range last.Counts {
		mean, se := meanStd(runs, i)
		c.Value = mean
		v := valueString(c)
		v = strings.ReplaceAll(v, ",", "")
		pctSE := 0.0
		if mean != 0 {
			pctSE = 100 * se / mean
		}
		fmt.Fprintf(w, "%s%s%s%s%s%s%.2f%s%d%s%.2f\n", v, sep, unitOf(c), sep, c.Event, sep, pctSE, sep, c.Running, sep, c.RunningPct())
	}
}

func printStatJSON(w io.Writer, runs []*stat.Result, target string) {
	last := runs[len(runs)-1]
	type row struct {
		Event      string  `json:"event"`
		Value      float64 `json:"value"`
		Unit       string  `json:"unit,omitempty"`
		StdErrPct  float64 `json:"stderr_percent"`
		Supported  bool    `json:"supported"`
		Counted    bool    `json:"counted"`
		RunningPct float64 `json:"running_percent"`
		Metric     string  `json:"metric,omitempty"`
	}
	var rows []row
	for i, c := range last.Counts {
		mean, se := meanStd(runs, i)
		r := row{Event: c.Event, Value: mean, Unit: unitOf(c), Supported: c.Supported, Counted: c.Counted(), RunningPct: c.RunningPct()}
		if mean != 0 {
			r.StdErrPct = 100 * se / mean
		}
		if c.Counted() {
			r.Metric = strings.TrimSpace(derived(c, mean, last.Counts, last.Elapsed, len(runs)))
		}
		rows = append(rows, r)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(map[string]any{"target": target, "runs": len(runs), "elapsed_s": last.Elapsed.Seconds(), "exit_code": last.ExitCode, "counts": rows})
}
