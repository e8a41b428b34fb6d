package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/sonde-dev/sonde/internal/funclat"
	"github.com/sonde-dev/sonde/internal/histogram"
)

func runFunclat(args []string) (int, error) {
	fs := newFlags("funclat", "[-p PID] [-x BINARY] [--unit ns|us|ms] [--linear STEP] [-d DURATION] [-i INTERVAL] [--json] PATTERN…")
	pid := fs.Int("p", 0, "only this process")
	binary := fs.String("x", "", "binary or library for patterns without one")
	unitFlag := fs.String("unit", "us", "ns, us, ms or s")
	linear := fs.Uint64("linear", 0, "linear buckets of this width (in --unit)")
	duration := fs.Duration("d", 0, "stop after this long (default: until Ctrl-C)")
	fs.DurationVar(duration, "duration", 0, "same as -d")
	interval := fs.Duration("i", 0, "print every interval")
	asJSON := fs.Bool("json", false, "JSON output")
	if err := parseFlags(fs, args); err != nil {
		return 2, err
	}
	if fs.NArg() == 0 {
		return 2, usageError{"give functions: /path/bin:glob, lib:func (e.g. libc:getaddrinfo), -x BINARY glob, or a kernel function"}
	}
	unit, err := histogram.ParseUnit(*unitFlag)
	if err != nil {
		return 2, usageError{err.Error()}
	}
	if *pid != 0 {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", *pid)); err != nil {
			return 1, fmt.Errorf("no such process: %d", *pid)
		}
	}
	funcs, err := funclat.Resolve(fs.Args(), *binary, *pid)
	if err != nil {
		return 2, usageError{err.Error()}
	}
	for _, f := range funcs {
		if f.Note != "" {
			fmt.Fprintln(os.Stderr, "sonde: "+f.Note)
		}
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	print := func(hs []*histogram.Hist, elapsed time.Duration, drops uint64) error {
		if *asJSON {
			type fn struct {
				Function string             `json:"function"`
				Stats    histogram.Stats    `json:"stats"`
				Buckets  []histogram.Bucket `json:"buckets"`
			}
			var out []fn
			for i, h := range hs {
				b := h.Log2(unit)
				if *linear > 0 {
					b = h.Linear(unit, *linear)
				}
				out = append(out, fn{Function: funcs[i].String(), Stats: h.Stats(), Buckets: b})
			}
			enc := json.NewEncoder(w)
			return enc.Encode(map[string]any{"unit": unit.Name, "functions": out, "lost": drops, "elapsed_ns": elapsed.Nanoseconds()})
		}
		for i, h := range hs {
			fmt.Fprintf(w, "%s\n", funcs[i])
			b := h.Log2(unit)
			if *linear > 0 {
				b = h.Linear(unit, *linear)
			}
			histogram.WriteBars(w, b, unit.Name)
			histogram.WriteSummary(w, h.Stats(), unit)
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "# %d functions, %s, %d calls lost (ring buffer full)\n\n", len(hs), elapsed.Round(time.Millisecond), drops)
		return w.Flush()
	}
	o := funclat.Options{Funcs: funcs, Pid: *pid, Duration: *duration, Interval: *interval}
	start := time.Now()
	o.OnInterval = func(hs []*histogram.Hist) { print(hs, time.Since(start), 0) }
	if isTerminal(2) {
		fmt.Fprintf(os.Stderr, "sonde: measuring %d functions, Ctrl-C to stop\n", len(funcs))
	}
	res, err := funclat.Run(context.Background(), o)
	if err != nil {
		return 1, err
	}
	return 0, print(res.Hists, res.Elapsed, res.Drops)
}
