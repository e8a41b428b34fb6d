package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sonde-dev/sonde/internal/datafile"
	"github.com/sonde-dev/sonde/internal/flamegraph"
	"github.com/sonde-dev/sonde/internal/profile"
	"github.com/sonde-dev/sonde/internal/report"
	"github.com/sonde-dev/sonde/internal/unwind"
)

func runProfile(args []string) (int, error) {
	fs := newFlags("profile", "[-F HZ] [-a | -p PID] [--user | --kernel] [-d DURATION] [--folded] [--flamegraph FILE] [-o FILE] [--json]")
	freq := fs.Uint64("F", 97, "samples per second per CPU")
	all := fs.Bool("a", false, "system-wide (the default without -p)")
	pid := fs.Int("p", 0, "only this process")
	perThread := fs.Bool("tid", false, "keep threads apart")
	comm := fs.String("comm", "", "only these commands in the output (comma-separated)")
	userOnly := fs.Bool("user", false, "user stacks only")
	kernelOnly := fs.Bool("kernel", false, "kernel stacks only")
	idle := fs.Bool("idle", false, "include the idle task")
	duration := fs.Duration("d", 0, "stop after this long (default: until Ctrl-C)")
	fs.DurationVar(duration, "duration", 0, "same as -d")
	folded := fs.Bool("folded", false, "print collapsed stacks instead of a report")
	flame := fs.String("flamegraph", "", "also write a flame graph (.html or .svg)")
	output := fs.String("o", "", "also write a data file for report/flamegraph")
	asJSON := fs.Bool("json", false, "JSON report")
	interval := fs.Duration("i", 0, "print a report every interval (-o, --folded and --flamegraph then cover the last one)")
	if err := parseFlags(fs, args); err != nil {
		return 2, err
	}
	if *interval != 0 && *interval < 100*time.Millisecond {
		return 2, usageError{"-i: at least 100ms"}
	}
	if fs.NArg() > 0 {
		return 2, usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	if *userOnly && *kernelOnly {
		return 2, usageError{"--user and --kernel exclude each other"}
	}
	if *all && *pid != 0 {
		return 2, usageError{"choose -a or -p"}
	}
	if *pid != 0 {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", *pid)); err != nil {
			return 1, fmt.Errorf("no such process: %d", *pid)
		}
	}
	o := profile.Options{Freq: *freq, Pid: *pid, PerThread: *perThread, User: !*kernelOnly, Kernel: !*userOnly, Idle: *idle, Duration: *duration, Version: version, Interval: *interval}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	if *interval > 0 && !*folded {
		o.OnInterval = func(r *profile.Result) {
			writeProfileReport(w, r, splitList(*comm), *asJSON)
			w.Flush()
		}
	}
	if isTerminal(2) && *duration == 0 {
		fmt.Fprintln(os.Stderr, "sonde: profiling, Ctrl-C to stop")
	} else if isTerminal(2) {
		fmt.Fprintf(os.Stderr, "sonde: profiling for %s\n", *duration)
	}
	res, err := profile.Run(context.Background(), o)
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
		if err := writeFlame(*flame, flamegraph.FromProfile(p), fmt.Sprintf("sonde profile: %d samples, %s", len(p.Samples), time.Duration(p.Meta.DurationNS).Round(time.Millisecond))); err != nil {
			return 1, err
		}
	}
	if *folded {
		return 0, flamegraph.WriteFolded(w, flamegraph.FromProfile(p))
	}
	return 0, writeProfileReport(w, res, splitList(*comm), *asJSON)
}

func writeProfileReport(w io.Writer, res *profile.Result, comms []string, asJSON bool) error {
	rep := report.Build(res.Profile, report.Options{Sort: []string{"comm", "dso", "sym"}, Graph: "none", Comms: comms})
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			*report.Report
			BPFErrors profile.Errors      `json:"bpf_errors"`
			Stacks    unwind.Completeness `json:"user_stacks"`
			Unwind    profile.Unwind      `json:"unwind"`
		}{rep, res.Errors, res.Stacks, res.Unwind})
	}
	rep.WriteText(w)
	_, err := fmt.Fprintf(w, "# BPF: %d kernel stack walks failed, %d samples lost (map full)\n# user %s\n\n", res.Errors.KernelStack, res.Errors.MapFull, res.Stacks.String())
	return err
}

func writeFlame(path string, root *flamegraph.Node, subtitle string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating flame graph: %w", err)
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	o := flamegraph.Options{Title: "sonde profile", Subtitle: subtitle}
	if len(path) > 4 && path[len(path)-4:] == ".svg" {
		err = flamegraph.WriteSVG(w, root, o)
	} else {
		err = flamegraph.WriteHTML(w, root, o)
	}
	if err == nil {
		err = w.Flush()
	}
	return err
}
