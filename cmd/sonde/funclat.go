package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/sonde-dev/sonde/internal/funclat"
	"github.com/sonde-dev/sonde/internal/histogram"
	"github.com/sonde-dev/sonde/internal/view/dist"
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
	names := make([]string, len(funcs))
	for i, f := range funcs {
		names[i] = f.String()
	}
	do := dist.Options{Unit: unit, Linear: *linear}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	o := funclat.Options{Funcs: funcs, Pid: *pid, Duration: *duration, Interval: *interval}
	start := time.Now()
	o.OnInterval = func(hs []*histogram.Hist) {
		writeView(w, dist.NewFunctions(do, names, hs, 0, time.Since(start)), *asJSON)
		w.Flush()
	}
	if isTerminal(2) {
		fmt.Fprintf(os.Stderr, "sonde: measuring %d functions, Ctrl-C to stop\n", len(funcs))
	}
	res, err := funclat.Run(context.Background(), o)
	if err != nil {
		return 1, err
	}
	return 0, writeView(w, dist.NewFunctions(do, names, res.Hists, res.Drops, res.Elapsed), *asJSON)
}
