package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/sonde-dev/sonde/internal/histogram"
	"github.com/sonde-dev/sonde/internal/procfs"
	"github.com/sonde-dev/sonde/internal/runqlat"
)

func runRunqlat(args []string) (int, error) {
	fs := newFlags("runqlat", "[--pids | --tids] [-p PID] [-d DURATION] [-i INTERVAL] [--unit us] [--linear STEP] [--json]")
	pids := fs.Bool("pids", false, "one distribution per process")
	tids := fs.Bool("tids", false, "one distribution per thread")
	pid := fs.Int("p", 0, "only this process")
	duration := fs.Duration("d", 0, "stop after this long (default: until Ctrl-C)")
	fs.DurationVar(duration, "duration", 0, "same as -d")
	interval := fs.Duration("i", 0, "print every interval")
	unitFlag := fs.String("unit", "us", "ns, us, ms or s")
	linear := fs.Uint64("linear", 0, "linear buckets of this width (in --unit)")
	asJSON := fs.Bool("json", false, "JSON output")
	if err := parseFlags(fs, args); err != nil {
		return 2, err
	}
	if *pids && *tids {
		return 2, usageError{"--pids and --tids exclude each other"}
	}
	unit, err := histogram.ParseUnit(*unitFlag)
	if err != nil {
		return 2, usageError{err.Error()}
	}
	o := runqlat.Options{Pid: *pid, Duration: *duration, Interval: *interval}
	if *pids {
		o.Split = runqlat.SplitPid
	}
	if *tids {
		o.Split = runqlat.SplitTid
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	start := time.Now()
	var switches, unknown uint64
	print := func(groups map[uint32]*histogram.Hist, elapsed time.Duration) {
		var ids []uint32
		for id := range groups {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		if *asJSON {
			type g struct {
				ID      uint32             `json:"id,omitempty"`
				Comm    string             `json:"comm,omitempty"`
				Stats   histogram.Stats    `json:"stats"`
				Buckets []histogram.Bucket `json:"buckets"`
			}
			var out []g
			for _, id := range ids {
				b := groups[id].Log2(unit)
				if *linear > 0 {
					b = groups[id].Linear(unit, *linear)
				}
				out = append(out, g{ID: id, Comm: procfs.Comm(int(id), int(id)), Stats: groups[id].Stats(), Buckets: b})
			}
			json.NewEncoder(w).Encode(map[string]any{"unit": unit.Name, "groups": out, "elapsed_ns": elapsed.Nanoseconds(), "switches": switches, "unknown_start": unknown})
			w.Flush()
			return
		}
		for _, id := range ids {
			if o.Split != runqlat.SplitNone {
				kind := "pid"
				if o.Split == runqlat.SplitTid {
					kind = "tid"
				}
				fmt.Fprintf(w, "%s = %d %s\n", kind, id, procfs.Comm(int(id), int(id)))
			}
			b := groups[id].Log2(unit)
			if *linear > 0 {
				b = groups[id].Linear(unit, *linear)
			}
			histogram.WriteBars(w, b, unit.Name)
			histogram.WriteSummary(w, groups[id].Stats(), unit)
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "# run-queue latency over %s", elapsed.Round(time.Millisecond))
		if switches > 0 {
			fmt.Fprintf(w, "; %d switch-ins, %d of tasks runnable before tracing began", switches, unknown)
		}
		fmt.Fprint(w, "\n\n")
		w.Flush()
	}
	o.OnInterval = func(g map[uint32]*histogram.Hist) { print(g, time.Since(start)) }
	if isTerminal(2) && *duration == 0 {
		fmt.Fprintln(os.Stderr, "sonde: tracing run-queue latency, Ctrl-C to stop")
	}
	res, err := runqlat.Run(context.Background(), o)
	if err != nil {
		return 1, err
	}
	switches, unknown = res.Switches, res.Unknown
	print(res.Groups, res.Elapsed)
	return 0, nil
}
