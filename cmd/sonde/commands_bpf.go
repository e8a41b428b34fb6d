package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/procfs"
	"github.com/sonde-dev/sonde/internal/view/emit"
)

// bpfCommands are the live BPF tools. They take bcc's habits as well as
// perf's: a bare number after the options is how long to trace
// (`offcpu 5`), -d/--duration takes seconds or a Go duration, and options
// may follow the arguments (`funclat ./srv:handle -p 42`).
func bpfCommands() []*cobra.Command {
	return []*cobra.Command{
		newProfileCmd(), newOffcpuCmd("offcpu"), newOffcpuCmd("wakeup"), newFunclatCmd(), newSyscountCmd(),
		newRunqlatCmd(), newBiolatCmd(), newBiosnoopCmd(), newCputimeCmd(), newListenCmd(), newTopCmd(),
	}
}

// live is what the live tools share: -p, -d (or a bare DURATION), -i,
// --json, the end of the run on Ctrl-C, and buffered output.
type live struct {
	pid                int
	duration, interval time.Duration
	asJSON             bool
	minInterval        time.Duration // 0: the tool has no -i
	durationArg        bool          // a bare argument is the duration
	w                  *emit.Writer
}

// newLive makes a live tool's command with the shared flags; pidUsage
// says what -p does ("" for no -p).
func newLive(l *live, c *cobra.Command, pidUsage string) *cobra.Command {
	f := c.Flags()
	if pidUsage != "" {
		f.IntVarP(&l.pid, "pid", "p", 0, pidUsage)
	}
	addDurationFlag(f, &l.duration, "tracing")
	if l.minInterval > 0 {
		durationVarP(f, &l.interval, "interval", "i", 0, "print a report every interval: seconds (1) or a duration (500ms)")
	}
	addJSONFlag(f, &l.asJSON)
	return c
}

// start checks the shared options and says on a terminal what runs; the
// context ends on Ctrl-C or SIGTERM (call stop); target names -p's process.
func (l *live) start(cmd *cobra.Command, args []string, what string) (ctx context.Context, target string, stop func(), err error) {
	if l.durationArg && len(args) > 0 {
		if err := l.bareDuration(cmd, args); err != nil {
			return nil, "", nil, err
		}
	}
	if l.interval != 0 && l.interval < l.minInterval {
		return nil, "", nil, usagef("-i/--interval %s: at least %s", l.interval, l.minInterval)
	}
	if target, err = pidTarget(l.pid); err != nil {
		return nil, "", nil, err
	}
	if isTerminal(2) {
		how := "Ctrl-C to stop"
		if l.duration > 0 {
			how = "for " + l.duration.String()
		}
		fmt.Fprintf(os.Stderr, "sonde: %s, %s\n", what, how)
	}
	l.w = emit.New(os.Stdout, l.asJSON)
	ctx, stop = interruptible()
	return ctx, target, stop, nil
}

// bareDuration takes bcc's positional duration: `offcpu 5` is `offcpu -d 5`.
func (l *live) bareDuration(cmd *cobra.Command, args []string) error {
	if len(args) > 1 {
		return usagef("unexpected argument %q: the only argument is how long to trace (%s 5)", args[1], cmd.Name())
	}
	if cmd.Flags().Changed("duration") {
		return usagef("two durations: -d/--duration and %q; give one", args[0])
	}
	d, err := parseDuration(args[0])
	if err != nil {
		return usagef("unexpected argument %q: the only argument is how long to trace, in seconds (%s 5) or as a duration (500ms)", args[0], cmd.Name())
	}
	l.duration = d
	return nil
}

// pidTarget checks -p and names what is traced as the text views do.
func pidTarget(pid int) (string, error) {
	if pid == 0 {
		return target{All: true}.String(), nil
	}
	if err := procfs.CheckPid(pid); err != nil {
		if errors.Is(err, procfs.ErrNotProcess) {
			// These tools filter on the process in the kernel: no -t.
			return "", usagef("-p/--pid %d is a thread, not a process: give its process's id", pid)
		}
		return "", err
	}
	return target{Pids: []int{pid}}.String(), nil
}

// interruptible returns a context that ends on Ctrl-C or SIGTERM: the one
// way a live command learns it should stop and print what it has.
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
