package main

import (
	"fmt"
	"net"
	"os"
	"time"

	"github.com/sonde-dev/sonde/internal/stream"
	"github.com/sonde-dev/sonde/internal/view/cpuusage"
)

func runCputime(args []string) (int, error) {
	fs := newFlags("cputime", "[-i 1s] [--top N] [--per-cpu] [-p PID | --comm NAME] [--json] [--stream udp://HOST:PORT | tcp://HOST:PORT] [--compare-sampled [-F HZ]] [-d DURATION] [-n COUNT]")
	interval := fs.Duration("i", time.Second, "report interval")
	top := fs.Int("top", 10, "tasks per report (and per CPU with --per-cpu)")
	perCPU := fs.Bool("per-cpu", false, "top tasks per CPU as well")
	pid := fs.Int("p", 0, "only this process's threads")
	comm := fs.String("comm", "", "only tasks with this name")
	asJSON := fs.Bool("json", false, "JSON lines")
	dest := fs.String("stream", "", "also send each report to udp://HOST:PORT or tcp://HOST:PORT")
	compare := fs.Bool("compare-sampled", false, "sample with cpu-clock beside the exact figure and show the estimate's error")
	freq := fs.Uint64("F", 100, "sampling rate for --compare-sampled")
	duration := fs.Duration("d", 0, "stop after this long")
	fs.DurationVar(duration, "duration", 0, "same as -d")
	count := fs.Int("n", 0, "stop after this many reports")
	if err := parseFlags(fs, args); err != nil {
		return 2, err
	}
	if *interval < 10*time.Millisecond {
		return 2, usageError{"-i: at least 10ms"}
	}
	if *compare && (*freq == 0 || *freq > 100000) {
		return 2, usageError{"-F: between 1 and 100000 Hz"}
	}
	o := cpuusage.WatchOptions{Options: cpuusage.Options{Top: *top, PerCPU: *perCPU, Pid: *pid, Comm: *comm},
		Interval: *interval, Duration: *duration, Count: *count, JSON: *asJSON, Stream: *dest}
	if *compare {
		o.SampleHz = *freq
	}
	ctx, stop := interruptible()
	defer stop()
	if err := cpuusage.Watch(ctx, o, os.Stdout, os.Stderr); err != nil {
		return 1, err
	}
	return 0, nil
}

func runListen(args []string) (int, error) {
	fs := newFlags("listen", "udp://:PORT | tcp://:PORT")
	if err := parseFlags(fs, args); err != nil {
		return 2, err
	}
	if fs.NArg() != 1 {
		return 2, usageError{"give one address: udp://:PORT or tcp://:PORT"}
	}
	ctx, stop := interruptible()
	defer stop()
	err := stream.Listen(fs.Arg(0), os.Stdout, ctx.Done(), func(a net.Addr) {
		if isTerminal(2) {
			fmt.Fprintf(os.Stderr, "sonde: listening on %s\n", a.String())
		}
	})
	if err != nil {
		return 1, err
	}
	return 0, nil
}
