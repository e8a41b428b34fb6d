package main

import (
	"os"
	"time"

	"github.com/sonde-dev/sonde/internal/view/top"
)

func runTop(args []string) (int, error) {
	fs := newFlags("top", "[-F HZ] [--tasks] [-b N] [-i INTERVAL] [--rows N]")
	hz := fs.Uint64("F", 997, "sampling rate for hot symbols")
	tasksOnly := fs.Bool("tasks", false, "tasks only (no symbol sampling)")
	batch := fs.Int("b", 0, "print N plain-text frames and exit (for pipes)")
	interval := fs.Duration("i", time.Second, "refresh interval")
	rows := fs.Int("rows", 15, "rows per table")
	if err := parseFlags(fs, args); err != nil {
		return 2, err
	}
	if *interval < 100*time.Millisecond {
		return 2, usageError{"-i: at least 100ms"}
	}
	o := top.Options{Hz: *hz, TasksOnly: *tasksOnly, Frames: *batch, Interval: *interval, Rows: *rows}
	if o.Frames == 0 && !isTerminal(1) {
		o.Frames = 1 // a pipe gets one frame, not a screen
	}
	ctx, stop := interruptible()
	defer stop()
	if err := top.Run(ctx, o, os.Stdout); err != nil {
		return 1, err
	}
	return 0, nil
}
