package main

import (
	"bufio"
	"context"
	"fmt"
	"os"

	"github.com/sonde-dev/sonde/internal/bio"
	"github.com/sonde-dev/sonde/internal/histogram"
	"github.com/sonde-dev/sonde/internal/view/dist"
)

func runBiolat(args []string) (int, error) {
	fs := newFlags("biolat", "[-Q] [-D] [--stages] [-d DURATION] [--unit us] [--linear STEP] [--json]")
	queued := fs.Bool("Q", false, "include the time queued in the kernel (insert → complete)")
	perDisk := fs.Bool("D", false, "one distribution per disk")
	stages := fs.Bool("stages", false, "split queued (insert → issue) from device (issue → complete) time")
	duration := fs.Duration("d", 0, "stop after this long (default: until Ctrl-C)")
	fs.DurationVar(duration, "duration", 0, "same as -d")
	unitFlag := fs.String("unit", "us", "ns, us, ms or s")
	linear := fs.Uint64("linear", 0, "linear buckets of this width (in --unit)")
	asJSON := fs.Bool("json", false, "JSON output")
	if err := parseFlags(fs, args); err != nil {
		return 2, err
	}
	unit, err := histogram.ParseUnit(*unitFlag)
	if err != nil {
		return 2, usageError{err.Error()}
	}
	list := []bio.Stage{bio.Device}
	switch {
	case *stages:
		list = []bio.Stage{bio.Queued, bio.Device}
	case *queued:
		list = []bio.Stage{bio.Total}
	}
	o := bio.Options{Duration: *duration}
	if *perDisk {
		o.Per = "dev"
	}
	if isTerminal(2) && *duration == 0 {
		fmt.Fprintln(os.Stderr, "sonde: tracing block I/O latency, Ctrl-C to stop")
	}
	res, err := bio.Run(context.Background(), list, o)
	if err != nil {
		return 1, err
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	return 0, writeView(w, bio.NewLatency(dist.Options{Unit: unit, Linear: *linear}, list, res), *asJSON)
}

func runBiosnoop(args []string) (int, error) {
	fs := newFlags("biosnoop", "[-p PID] [--comm NAME] [-d DURATION] [--json]")
	pid := fs.Int("p", 0, "only I/O submitted by this process")
	comm := fs.String("comm", "", "only I/O submitted by processes with this name")
	duration := fs.Duration("d", 0, "stop after this long (default: until Ctrl-C)")
	fs.DurationVar(duration, "duration", 0, "same as -d")
	asJSON := fs.Bool("json", false, "JSON lines")
	if err := parseFlags(fs, args); err != nil {
		return 2, err
	}
	if isTerminal(2) && *duration == 0 {
		fmt.Fprintln(os.Stderr, "sonde: tracing block I/O, Ctrl-C to stop")
	}
	o := bio.SnoopOptions
	o.Duration = *duration
	res, err := bio.Run(context.Background(), bio.SnoopStages, o)
	if err != nil {
		return 1, err
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	return 0, writeView(w, bio.NewSnoop(res, bio.Filter{Pid: *pid, Comm: *comm}), *asJSON)
}
