package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/sonde-dev/sonde/internal/datafile"
	"github.com/sonde-dev/sonde/internal/events"
	"github.com/sonde-dev/sonde/internal/histogram"
	"github.com/sonde-dev/sonde/internal/latency"
	"github.com/sonde-dev/sonde/internal/pairbpf"
)

func runLatency(args []string) (int, error) {
	fs := newFlags("latency", "--start EV --end EV [--key FIELD[,FIELD]] [-a | -p PID | -- CMD | -i FILE] [--per comm|pid|FIELD] [--events] [--unit us] [--linear STEP] [--duration D] [--json]")
	start := fs.String("start", "", "start event (e.g. block:block_rq_issue)")
	end := fs.String("end", "", "end event (e.g. block:block_rq_complete)")
	key := fs.String("key", "", "fields that pair a start with its end (e.g. dev,sector); default: the thread")
	input := fs.String("i", "", "read a recording instead of tracing live")
	all := fs.Bool("a", false, "system-wide (the default without -p; a command then sets the duration)")
	pids := fs.String("p", "", "only these processes")
	per := fs.String("per", "", "one distribution per comm, pid or a start-event field (e.g. dev)")
	showEvents := fs.Bool("events", false, "print every pair")
	unitFlag := fs.String("unit", "us", "ns, us, ms or s")
	linear := fs.Uint64("linear", 0, "linear buckets of this width (in --unit) instead of log2")
	duration := fs.Duration("duration", 0, "stop tracing after this long (default: the command, or Ctrl-C)")
	filter := fs.String("filter", "", "kernel-side filter for both events")
	asJSON := fs.Bool("json", false, "JSON output")
	if err := parseFlags(fs, args); err != nil {
		return 2, err
	}
	if *start == "" || *end == "" {
		return 2, usageError{"--start and --end are required"}
	}
	unit, err := histogram.ParseUnit(*unitFlag)
	if err != nil {
		return 2, usageError{err.Error()}
	}
	lo := latency.Options{Start: *start, End: *end, Key: splitList(*key), Per: *per, Events: *showEvents}
	var res *latency.Result
	var lost uint64
	var dur time.Duration
	exit := 0
	extra := ""
	if *input != "" {
		// From a recording: pair the recorded samples.
		p, err := datafile.ReadFile(*input)
		if err != nil {
			return 1, err
		}
		if res, err = latency.Compute(p, lo); err != nil {
			return 2, usageError{err.Error()}
		}
		lost, dur = p.Meta.Lost, time.Duration(p.Meta.DurationNS)
	} else {
		// Live: pair in the kernel with BPF, which also sees events that
		// perf sampling misses in interrupt context.
		if *all && *pids != "" {
			return 2, usageError{"choose -a or -p"}
		}
		pidList, err := parseIntList(*pids, "-p")
		if err != nil {
			return 2, err
		}
		if len(pidList) > 1 {
			return 2, usageError{"live latency takes one -p PID"}
		}
		o := pairbpf.Options{Key: lo.Key, Per: lo.Per, Events: lo.Events, Command: fs.Args(), Duration: *duration}
		if len(pidList) == 1 {
			o.Pid = pidList[0]
		}
		for i, n := range []string{*start, *end} {
			s, err := events.Resolve([]string{n})
			if err != nil {
				return 2, usageError{err.Error()}
			}
			if len(s) != 1 || !s[0].Tracepoint() {
				return 2, usageError{fmt.Sprintf("%s: want one tracepoint or probe event", n)}
			}
			if i == 0 {
				o.Start = s[0]
			} else {
				o.End = s[0]
			}
		}
		if *filter != "" {
			return 2, usageError{"--filter works on recordings (sonde record --filter, then latency -i)"}
		}
		if isTerminal(2) && len(o.Command) == 0 && *duration == 0 {
			fmt.Fprintf(os.Stderr, "sonde: tracing %s → %s, Ctrl-C to stop\n", *start, *end)
		}
		r, err := pairbpf.Run(context.Background(), o)
		if err != nil {
			return 1, err
		}
		res, exit, dur = r.Result, r.ExitCode, r.Elapsed
		lost = r.Counters.Drops + r.Counters.Full
		extra = fmt.Sprintf(", %d ends of other requests", r.Counters.Unmatched)
		res.Unmatched = 0
	}
	w := os.Stdout
	if *asJSON {
		type group struct {
			Group   string             `json:"group,omitempty"`
			Stats   histogram.Stats    `json:"stats"`
			Buckets []histogram.Bucket `json:"buckets"`
		}
		var gs []group
		for _, g := range res.GroupNames() {
			h := res.Groups[g]
			b := h.Log2(unit)
			if *linear > 0 {
				b = h.Linear(unit, *linear)
			}
			gs = append(gs, group{Group: g, Stats: h.Stats(), Buckets: b})
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return exit, enc.Encode(map[string]any{
			"start": *start, "end": *end, "key": lo.Key, "unit": unit.Name, "groups": gs, "pairs": res.Pairs,
			"starts": res.Starts, "ends": res.Ends, "unmatched_ends": res.Unmatched, "open_starts": res.Pending,
			"lost": lost, "duration_ns": dur.Nanoseconds(),
		})
	}
	if *showEvents {
		fmt.Fprintf(w, "%-18s %-16s %7s %-24s %12s\n", "START(s)", "COMM", "PID", "KEY", "LAT("+unit.Name+")")
		for _, pr := range res.Pairs {
			fmt.Fprintf(w, "%-18.6f %-16s %7d %-24s %12.3f\n", float64(pr.StartNS)/1e9, pr.Comm, pr.Pid, pr.Key, float64(pr.Latency)/float64(unit.NS))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%s → %s", *start, *end)
	if len(lo.Key) > 0 {
		fmt.Fprintf(w, " by %s", strings.Join(lo.Key, ","))
	}
	fmt.Fprintf(w, ": %d pairs, %d ends without a start%s, %d starts still open, %d lost, %s\n\n",
		countPairs(res), res.Unmatched, extra, res.Pending, lost, dur.Round(time.Millisecond))
	for _, g := range res.GroupNames() {
		h := res.Groups[g]
		if g != "" {
			fmt.Fprintf(w, "%s\n", g)
		}
		b := h.Log2(unit)
		if *linear > 0 {
			b = h.Linear(unit, *linear)
		}
		histogram.WriteBars(w, b, unit.Name)
		histogram.WriteSummary(w, h.Stats(), unit)
		fmt.Fprintln(w)
	}
	return exit, nil
}

func countPairs(r *latency.Result) int {
	n := 0
	for _, h := range r.Groups {
		n += int(h.Count())
	}
	return n
}
