package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/sonde-dev/sonde/internal/datafile"
	"github.com/sonde-dev/sonde/internal/flamegraph"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/offcpu"
)

func runOffcpu(args []string) (int, error) { return offcpuCommand("offcpu", args, false) }
func runWakeup(args []string) (int, error) { return offcpuCommand("wakeup", args, true) }

type stackJSON struct {
	Comm      string      `json:"comm"`
	Pid       int32       `json:"pid"`
	Tid       int32       `json:"tid,omitempty"`
	BlockedUS float64     `json:"blocked_us"`
	Frames    []frameJSON `json:"frames"`
}

type frameJSON struct {
	Sym    string `json:"sym"`
	DSO    string `json:"dso"`
	Kernel bool   `json:"kernel"`
}

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
	if *interval > 0 {
		o.OnInterval = func(r *offcpu.Result) {
			if !*folded {
				printBlocked(w, name, r, splitList(*comm), *top, *asJSON)
				w.Flush()
			}
		}
	}
	res, err := offcpu.Run(context.Background(), o)
	if err != nil {
		return 1, err
	}
	p := res.Profile
	if *output != "" {
		if err := datafile.WriteFile(*output, p); err != nil {
			return 1, err
		}
	}
	if *flame != "" {
		if err := writeFlame(*flame, flamegraph.FromProfile(p), fmt.Sprintf("sonde %s: blocked time in µs, %s", name, time.Duration(p.Meta.DurationNS).Round(time.Millisecond))); err != nil {
			return 1, err
		}
	}
	if *folded {
		return 0, flamegraph.WriteFolded(w, flamegraph.FromProfile(p))
	}
	printBlocked(w, name, res, splitList(*comm), *top, *asJSON)
	return 0, nil
}

// printBlocked writes one report of blocked stacks.
func printBlocked(w *bufio.Writer, name string, res *offcpu.Result, comms []string, topN int, asJSON bool) {
	p := res.Profile
	stacks := blockedStacks(p, comms)
	var total float64
	for _, s := range stacks {
		total += s.BlockedUS
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(map[string]any{"stacks": stacks, "total_blocked_us": total, "errors": res.Errors, "attach": res.Attach,
			"duration_ns": p.Meta.DurationNS, "warnings": p.Meta.Warnings})
		return
	}
	for i, s := range stacks {
		if i >= topN {
			break
		}
		for _, f := range s.Frames {
			fmt.Fprintf(w, "    %s\n", f.Sym)
		}
		fmt.Fprintf(w, "    -                %s (%d)\n        %.0f us (%.1f%%)\n\n", s.Comm, s.Pid, s.BlockedUS, 100*s.BlockedUS/total)
	}
	fmt.Fprintf(w, "# %s: %d stacks, %.0f us blocked in %s (%s); %d stack walks failed, %d lost to full maps\n\n",
		name, len(stacks), total, time.Duration(p.Meta.DurationNS).Round(time.Millisecond), res.Attach, res.Errors.StackFailures, res.Errors.MapFull)
}

// blockedStacks lists the profile's stacks by blocked time, largest first.
func blockedStacks(p *model.Profile, comms []string) []stackJSON {
	var out []stackJSON
	for _, s := range p.Samples {
		t := p.Threads[s.Thread]
		if len(comms) > 0 {
			ok := false
			for _, c := range comms {
				ok = ok || c == t.Comm
			}
			if !ok {
				continue
			}
		}
		st := stackJSON{Comm: t.Comm, Pid: t.Pid, BlockedUS: float64(s.Period) / 1000}
		if t.Tid != t.Pid {
			st.Tid = t.Tid
		}
		for _, loc := range p.Stacks[s.Stack] {
			st.Frames = append(st.Frames, frameJSON{Sym: p.FrameName(loc), DSO: p.DSOName(loc), Kernel: p.Kind(loc).IsKernel()})
		}
		out = append(out, st)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].BlockedUS > out[j].BlockedUS })
	return out
}
