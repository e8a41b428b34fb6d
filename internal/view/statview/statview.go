// Package statview writes counting results as perf stat does: the counts
// with their derived metrics (CPUs utilized, insn per cycle, rates), the
// spread over repeated runs, as text, CSV (-x) or JSON.
package statview

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/sonde-dev/sonde/internal/model/jsonout"
	"github.com/sonde-dev/sonde/internal/tools/stat"
)

// Unit is the unit perf stat prints after a count.
func Unit(c stat.Count) string {
	if c.Event == "task-clock" || c.Event == "cpu-clock" {
		return "msec"
	}
	return ""
}

// Value formats a count as perf stat does.
func Value(c stat.Count) string {
	switch {
	case !c.Supported:
		return "<not supported>"
	case !c.Counted():
		return "<not counted>"
	case Unit(c) == "msec":
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

// meanStd is one event's mean over the runs and its standard error, as
// perf stat -r prints it.
func meanStd(runs []*stat.Result, i int) (float64, float64) {
	var sum, sq float64
	for _, r := range runs {
		sum += r.Counts[i].Value
	}
	n := float64(len(runs))
	mean := sum / n
	if len(runs) < 2 {
		return mean, 0
	}
	for _, r := range runs {
		d := r.Counts[i].Value - mean
		sq += d * d
	}
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

// Derived is the metric perf prints after '#': CPUs utilized for clocks,
// insn per cycle, miss ratios, otherwise a rate per second of CPU time.
func Derived(c stat.Count, mean float64, counts []stat.Count, elapsed time.Duration) string {
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

// WriteText writes the perf stat summary of one or more runs.
func WriteText(w io.Writer, runs []*stat.Result, target string) {
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
		line := fmt.Sprintf("%19s %-6s %-28s", Value(c), Unit(c), c.Event)
		if c.Counted() {
			if d := Derived(c, mean, last.Counts, elapsed); d != "" {
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

// WriteCSV writes perf stat -x: value, unit, event, stderr %, running time, running %.
func WriteCSV(w io.Writer, runs []*stat.Result, sep string) {
	last := runs[len(runs)-1]
	for i, c := range last.Counts {
		mean, se := meanStd(runs, i)
		c.Value = mean
		pctSE := 0.0
		if mean != 0 {
			pctSE = 100 * se / mean
		}
		fmt.Fprintf(w, "%s%s%s%s%s%s%.2f%s%d%s%.2f\n", strings.ReplaceAll(Value(c), ",", ""), sep, Unit(c), sep, c.Event, sep, pctSE, sep, c.Running, sep, c.RunningPct())
	}
}

// Row is one counted event in JSON.
type Row struct {
	Event      string  `json:"event"`
	Value      float64 `json:"value"` // mean over the runs; ns for the clocks
	Unit       string  `json:"unit,omitempty"`
	StdErrPct  float64 `json:"stderr_percent"`
	Supported  bool    `json:"supported"`
	Counted    bool    `json:"counted"`
	RunningPct float64 `json:"running_percent"`
	Metric     string  `json:"metric,omitempty"`
}

// Doc is the JSON document of a stat run.
type Doc struct {
	jsonout.Run
	Runs   int   `json:"runs"`
	Counts []Row `json:"counts"`
}

// WriteJSON writes one document for the runs.
func WriteJSON(w io.Writer, runs []*stat.Result, target string) error {
	last := runs[len(runs)-1]
	code := last.ExitCode
	d := Doc{Run: jsonout.Run{Command: "stat", Target: target, DurationNS: jsonout.NS(last.Elapsed), ExitCode: &code}, Runs: len(runs), Counts: []Row{}}
	for i, c := range last.Counts {
		mean, se := meanStd(runs, i)
		r := Row{Event: c.Event, Value: mean, Unit: Unit(c), Supported: c.Supported, Counted: c.Counted(), RunningPct: c.RunningPct()}
		if mean != 0 {
			r.StdErrPct = 100 * se / mean
		}
		if c.Counted() {
			r.Metric = strings.TrimSpace(Derived(c, mean, last.Counts, last.Elapsed))
		}
		d.Counts = append(d.Counts, r)
	}
	return jsonout.Write(w, d)
}

// Interval is one event's count over one -I interval, in JSON Lines.
type Interval struct {
	DurationNS jsonout.Nanos `json:"duration_ns"` // since the measurement began
	Event      string        `json:"event"`
	Value      float64       `json:"value"`
	Supported  bool          `json:"supported"`
}

// IntervalWriter prints -I lines: as text (header first), CSV or JSON.
type IntervalWriter struct {
	W      io.Writer
	Sep    string
	JSON   bool
	header bool
}

// Write prints the counts of one interval.
func (iw *IntervalWriter) Write(el time.Duration, counts []stat.Count) {
	if !iw.JSON && iw.Sep == "" && !iw.header {
		fmt.Fprintf(iw.W, "#%15s %20s %-8s %s\n", "time", "counts", "unit", "events")
		iw.header = true
	}
	for _, c := range counts {
		switch {
		case iw.JSON:
			jsonout.Line(iw.W, Interval{DurationNS: jsonout.NS(el), Event: c.Event, Value: c.Value, Supported: c.Supported})
		case iw.Sep != "":
			fmt.Fprintf(iw.W, "%.9f%s%s%s%s\n", el.Seconds(), iw.Sep, Value(c), iw.Sep, c.Event)
		default:
			fmt.Fprintf(iw.W, "%16.9f %20s %-8s %s\n", el.Seconds(), Value(c), Unit(c), c.Event)
		}
	}
}
