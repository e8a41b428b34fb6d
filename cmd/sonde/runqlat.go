package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/sonde-dev/sonde/internal/histogram"
	"github.com/sonde-dev/sonde/internal/procfs"
	"github.com/sonde-dev/sonde/internal/runqlat"
	"github.com/sonde-dev/sonde/internal/view/dist"
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
	split := dist.All
	if *pids {
		o.Split, split = runqlat.SplitPid, dist.ByProcess
	}
	if *tids {
		o.Split, split = runqlat.SplitTid, dist.ByThread
	}
	do := dist.Options{Unit: unit, Linear: *linear}
	comm := func(id uint32) string { return procfs.Comm(int(id), int(id)) }
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	start := time.Now()
	o.OnInterval = func(g map[uint32]*histogram.Hist) {
		writeView(w, dist.NewRunQueue(do, split, g, comm, 0, 0, time.Since(start)), *asJSON)
		w.Flush()
	}
	if isTerminal(2) && *duration == 0 {
		fmt.Fprintln(os.Stderr, "sonde: tracing run-queue latency, Ctrl-C to stop")
	}
	res, err := runqlat.Run(context.Background(), o)
	if err != nil {
		return 1, err
	}
	return 0, writeView(w, dist.NewRunQueue(do, split, res.Groups, comm, res.Switches, res.Unknown, res.Elapsed), *asJSON)
}
