package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/sonde-dev/sonde/internal/datafile"
	"github.com/sonde-dev/sonde/internal/events"
	"github.com/sonde-dev/sonde/internal/perf"
	"github.com/sonde-dev/sonde/internal/record"
	"github.com/sonde-dev/sonde/internal/runctl"
)

// defaultFreq is a prime near 1 kHz: a prime rate does not fall into
// lockstep with periodic work (timers, frames, ticks) the way 1000 Hz would.
const defaultFreq = 997

func runRecord(args []string) (int, error) {
	fs := newFlags("record", "[-e EVENT] [-F HZ | -c PERIOD] [-g] [-a | -p PID,… | -t TID,… | -C CPUS] [--duration D] [-o FILE] [-- COMMAND ARGS…]")
	var evs stringList
	fs.Var(&evs, "e", "event to sample: cpu-clock (default), task-clock, page-faults, context-switches, cycles…, :u/:k modifiers, tracepoints (block:block_rq_insert, sched:*); comma list, repeatable")
	filter := fs.String("filter", "", "kernel-side tracepoint filter for the tracepoints of the last -e (e.g. 'nr_sector > 8')")
	freq := fs.String("F", "", fmt.Sprintf("samples per second per CPU, or 'max' (default %d)", defaultFreq))
	period := fs.Uint64("c", 0, "sample every PERIOD events instead of by frequency")
	graph := fs.Bool("g", false, "record call chains (frame pointers)")
	all := fs.Bool("a", false, "system-wide, all CPUs")
	pids := fs.String("p", "", "record existing processes (comma-separated pids)")
	tids := fs.String("t", "", "record existing threads (comma-separated tids)")
	cpus := fs.String("C", "", "only these CPUs (e.g. 0-1,3)")
	duration := fs.Duration("duration", 0, "stop after this long (e.g. 10s)")
	output := fs.String("o", "sonde.data", "output data file")
	pages := fs.Int("m", 128, "ring buffer pages per CPU (power of two)")
	quiet := fs.Bool("q", false, "no progress or summary on stderr")
	if err := parseFlags(fs, args); err != nil {
		return 2, err
	}
	if len(evs) == 0 {
		evs = stringList{"cpu-clock"}
	}
	o := record.Options{Filters: map[int]string{}, Callchain: *graph, All: *all, Command: fs.Args(), Duration: *duration, RingPages: *pages, Version: version}
	for i, n := range evs {
		ss, err := events.Resolve([]string{n})
		if err != nil {
			return 2, usageError{err.Error()}
		}
		if *filter != "" && i == len(evs)-1 {
			for j, s := range ss {
				if !s.Tracepoint() {
					return 2, usageError{fmt.Sprintf("--filter applies to tracepoints, not %s", s)}
				}
				o.Filters[len(o.Events)+j] = *filter
			}
		}
		o.Events = append(o.Events, ss...)
	}
	var err error
	if *pages <= 0 || *pages&(*pages-1) != 0 {
		return 2, usageError{fmt.Sprintf("-m %d: ring pages must be a power of two", *pages)}
	}
	switch {
	case *period > 0 && *freq != "":
		return 2, usageError{"use either -F or -c, not both"}
	case *period > 0:
		o.Period = *period
	case *freq == "max":
		m, err := perf.MaxSampleRate()
		if err != nil {
			return 1, err
		}
		o.Freq = m
	case *freq != "":
		f, err := strconv.ParseUint(*freq, 10, 64)
		if err != nil || f == 0 {
			return 2, usageError{fmt.Sprintf("-F %q: want a positive number of Hz or 'max'", *freq)}
		}
		if m, err := perf.MaxSampleRate(); err == nil && f > m {
			return 2, usageError{fmt.Sprintf("-F %d is above kernel.perf_event_max_sample_rate (%d); use -F max or raise the sysctl", f, m)}
		}
		o.Freq = f
	default:
		o.Freq = defaultFreq
	}
	if o.Pids, err = parseIntList(*pids, "-p"); err != nil {
		return 2, err
	}
	if o.Tids, err = parseIntList(*tids, "-t"); err != nil {
		return 2, err
	}
	for _, p := range o.Pids {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", p)); err != nil {
			return 1, fmt.Errorf("no such process: %d", p)
		}
	}
	if *cpus != "" {
		if o.CPUs, err = perf.ParseCPUList(*cpus); err != nil {
			return 2, usageError{err.Error()}
		}
		online, _ := perf.OnlineCPUs()
		for _, c := range o.CPUs {
			ok := false
			for _, x := range online {
				ok = ok || x == c
			}
			if !ok {
				return 2, usageError{fmt.Sprintf("-C: cpu %d is not online (online: %s)", c, joinInts(online))}
			}
		}
		if len(o.Command) == 0 && len(o.Pids) == 0 && len(o.Tids) == 0 {
			o.All = true
		}
	}
	targets := 0
	for _, b := range []bool{o.All || len(o.Command) > 0, len(o.Pids) > 0, len(o.Tids) > 0} {
		if b {
			targets++
		}
	}
	if targets == 0 {
		return 2, usageError{"nothing to record: give a command after --, -p PID, -t TID or -a"}
	}
	if targets > 1 {
		return 2, usageError{"choose one target: a command (optionally with -a), -p, -t or -a"}
	}
	progress := !*quiet && isTerminal(2)
	if progress {
		o.Progress = func(n int, lost uint64, el time.Duration) {
			fmt.Fprintf(os.Stderr, "\rsonde: recording %s, %d samples, %d lost ", el.Round(time.Second), n, lost)
		}
	}
	// Ctrl-C, SIGTERM and SIGHUP end the recording, which is then written.
	ctx, stop := runctl.WithSignals(context.Background())
	defer stop()
	res, err := record.Record(ctx, o)
	if progress {
		fmt.Fprint(os.Stderr, "\r\033[K")
	}
	if err != nil {
		return 1, err
	}
	if err := datafile.WriteFile(*output, res.Profile); err != nil {
		return 1, err
	}
	if !*quiet {
		st, _ := os.Stat(*output)
		size := int64(0)
		if st != nil {
			size = st.Size()
		}
		p := res.Profile
		fmt.Fprintf(os.Stderr, "sonde: %d samples (%d lost) in %s written to %s (%s)\n",
			len(p.Samples), p.Meta.Lost, time.Duration(p.Meta.DurationNS).Round(time.Millisecond), *output, humanBytes(size))
		for _, w := range p.Meta.Warnings {
			fmt.Fprintf(os.Stderr, "sonde: warning: %s\n", w)
		}
	}
	return res.ExitCode, nil
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
