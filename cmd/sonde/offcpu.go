package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/sonde-dev/sonde/internal/flamegraph"
	"github.com/sonde-dev/sonde/internal/offcpu"
	"github.com/sonde-dev/sonde/internal/view/blocked"
	"github.com/sonde-dev/sonde/internal/view/stackprof"
)

func runOffcpu(args []string) (int, error) { return offcpuCommand("offcpu", args, false) }
func runWakeup(args []string) (int, error) { return offcpuCommand("wakeup", args, true) }

func offcpuCommand(name string, args []string, wakers bool) (int, error) {
	fs := newFlags(name, "[-p PID] [--tid] [--comm C] [-d DURATION] [--min-block US] [--max-block US] [--state S,D,…] [--user|--kernel] [--top N] [--folded] [--flamegraph FILE] [-o FILE] [--json]")
	pid := fs.Int("p", 0, "only this process")
	perThread := fs.Bool("tid", false, "keep threads apart")
	comm := fs.String("comm", "", "only these commands in the output (comma-separated)")
	duration := fs.Duration("d", 0, "stop after this long (default: until Ctrl-C)")
	fs.DurationVar(duration, "duration", 0, "same as -d")
	minBlock := fs.Uint64("min-block", 1, "ignore blocks shorter than this many microseconds")
	maxBlock := fs.Uint64("max-block", 0, "ignore blocks longer than this many microseconds (0: no limit)")
	state := fs.String("state", "", "only blocks in these task states: S (sleeping), D (uninterruptible), R (preempted), T, I")
	userOnly := fs.Bool("user", false, "user stacks only")
	kernelOnly := fs.Bool("kernel", false, "kernel stacks only")
	top := fs.Int("top", 20, "stacks to print")
	folded := fs.Bool("folded", false, "print collapsed stacks (values in microseconds)")
	flame := fs.String("flamegraph", "", "also write an off-CPU flame graph (.html or .svg)")
	output := fs.String("o", "", "also write a data file for report/flamegraph")
	asJSON := fs.Bool("json", false, "JSON output")
	interval := fs.Duration("i", 0, "print a report every interval (-o, --folded and --flamegraph then cover the last one)")
	if err := parseFlags(fs, args); err != nil {
		return 2, err
	}
	if fs.NArg() > 0 {
		return 2, usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	if *interval != 0 && *interval < 100*time.Millisecond {
		return 2, usageError{"-i: at least 100ms"}
	}
	if *userOnly && *kernelOnly {
		return 2, usageError{"--user and --kernel exclude each other"}
	}
	states, err := offcpu.ParseStates(*state)
	if err != nil {
		return 2, usageError{err.Error()}
	}
	if *pid != 0 {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", *pid)); err != nil {
			return 1, fmt.Errorf("no such process: %d", *pid)
		}
	}
	o := offcpu.Options{Pid: *pid, PerThread: *perThread, User: !*kernelOnly, Kernel: !*userOnly, Wakers: wakers,
		MinBlock: time.Duration(*minBlock) * time.Microsecond, MaxBlock: time.Duration(*maxBlock) * time.Microsecond,
		States: states, Duration: *duration, Version: version, Interval: *interval}
	if isTerminal(2) {
		if *duration == 0 {
			fmt.Fprintf(os.Stderr, "sonde: tracing off-CPU time, Ctrl-C to stop\n")
		} else {
			fmt.Fprintf(os.Stderr, "sonde: tracing off-CPU time for %s\n", *duration)
		}
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	vo := blocked.Options{Command: name, Comms: splitList(*comm), Top: *top}
	view := func(r *offcpu.Result) *blocked.Report {
		return blocked.New(r.Profile, r.Attach, blocked.Errors{StackFailures: r.Errors.StackFailures, LostMapFull: r.Errors.MapFull}, vo)
	}
	if *interval > 0 && !*folded {
		o.OnInterval = func(r *offcpu.Result) {
			writeView(w, view(r), *asJSON)
			w.Flush()
		}
	}
	res, err := offcpu.Run(context.Background(), o)
	if err != nil {
		return 1, err
	}
	files := stackprof.Files{Data: *output, Flame: *flame, Title: "sonde " + name, What: "blocked time in µs"}
	if err := files.Write(res.Profile); err != nil {
		return 1, err
	}
	if *folded {
		return 0, flamegraph.WriteFolded(w, flamegraph.FromProfile(res.Profile))
	}
	return 0, writeView(w, view(res), *asJSON)
}
