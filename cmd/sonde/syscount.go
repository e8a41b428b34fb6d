package main

import (
	"bufio"
	"context"
	"fmt"
	"os"

	"github.com/sonde-dev/sonde/internal/syscount"
	"github.com/sonde-dev/sonde/internal/view/syscounts"
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
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	return res.ExitCode, writeView(w, syscounts.New(res, syscounts.Options{PerProcess: *perProc, Latency: *lat, Top: *top, Comm: *comm}), *asJSON)
}
