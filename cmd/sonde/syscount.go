package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/sonde-dev/sonde/internal/syscount"
)

func runSyscount(args []string) (int, error) {
	fs := newFlags("syscount", "[-p PID | -- CMD] [-L] [--per-process] [--top N] [-d DURATION] [--json]")
	pid := fs.Int("p", 0, "only this process")
	lat := fs.Bool("L", false, "also time each syscall (total, average, max)")
	perProc := fs.Bool("per-process", false, "count per process and syscall")
	comm := fs.String("comm", "", "only processes with this name")
	top := fs.Int("top", 20, "rows to print (0: all)")
	duration := fs.Duration("d", 0, "stop after this long (default: the command, or Ctrl-C)")
	fs.DurationVar(duration, "duration", 0, "same as -d")
	asJSON := fs.Bool("json", false, "JSON output")
	if err := parseFlags(fs, args); err != nil {
		return 2, err
	}
	if *pid != 0 && fs.NArg() > 0 {
		return 2, usageError{"choose -p or a command"}
	}
	if *pid != 0 {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", *pid)); err != nil {
			return 1, fmt.Errorf("no such process: %d", *pid)
		}
	}
	if isTerminal(2) && fs.NArg() == 0 && *duration == 0 {
		fmt.Fprintln(os.Stderr, "sonde: counting syscalls, Ctrl-C to stop")
	}
	// --comm needs per-process counts to filter on; they are merged back
	// per syscall unless --per-process was asked for.
	res, err := syscount.Run(context.Background(), syscount.Options{Pid: *pid, Command: fs.Args(), PerProcess: *perProc || *comm != "", Latency: *lat, Duration: *duration})
	if err != nil {
		return 1, err
	}
	if *comm != "" {
		res.Rows = filterSyscalls(res.Rows, *comm, *perProc)
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	if *asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return res.ExitCode, enc.Encode(map[string]any{"syscalls": res.Rows, "lost": res.Lost, "elapsed_ns": res.Elapsed.Nanoseconds(), "exit_code": res.ExitCode})
	}
	var total uint64
	for _, r := range res.Rows {
		total += r.Count
	}
	if *perProc {
		fmt.Fprintf(w, "%-8s %-16s ", "PID", "COMM")
	}
	fmt.Fprintf(w, "%-22s %10s %8s", "SYSCALL", "COUNT", "ERRORS")
	if *lat {
		fmt.Fprintf(w, " %14s %12s %12s", "TOTAL(us)", "AVG(us)", "MAX(us)")
	}
	fmt.Fprintln(w)
	for i, r := range res.Rows {
		if *top > 0 && i >= *top {
			break
		}
		if *perProc {
			fmt.Fprintf(w, "%-8d %-16s ", r.Pid, r.Comm)
		}
		fmt.Fprintf(w, "%-22s %10d %8d", r.Name, r.Count, r.Errors)
		if *lat {
			fmt.Fprintf(w, " %14.1f %12.3f %12.1f", float64(r.TotalNS)/1e3, r.AvgNS/1e3, float64(r.MaxNS)/1e3)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "# %d syscalls in %s, %d lost to a full map\n", total, res.Elapsed.Round(time.Millisecond), res.Lost)
	return res.ExitCode, nil
}

// filterSyscalls keeps the rows of processes named comm, merged per syscall
// unless keepProcs.
func filterSyscalls(rows []syscount.Row, comm string, keepProcs bool) []syscount.Row {
	var out []syscount.Row
	idx := map[uint32]int{}
	for _, r := range rows {
		if r.Comm != comm {
			continue
		}
		if keepProcs {
			out = append(out, r)
			continue
		}
		i, ok := idx[r.Nr]
		if !ok {
			r.Pid, r.Comm = 0, ""
			idx[r.Nr] = len(out)
			out = append(out, r)
			continue
		}
		o := &out[i]
		o.Count += r.Count
		o.Errors += r.Errors
		o.TotalNS += r.TotalNS
		o.MaxNS = max(o.MaxNS, r.MaxNS)
		if o.Count > 0 {
			o.AvgNS = float64(o.TotalNS) / float64(o.Count)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Count > out[j].Count })
	return out
}
