package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sonde-dev/sonde/internal/procfs"
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

// durationArg takes bcc's positional duration: `offcpu 5` traces for 5 s,
// as `offcpu -d 5` does.
func durationArg(cmd *cobra.Command, args []string, d *time.Duration) error {
	switch {
	case len(args) == 0:
		return nil
	case len(args) > 1:
		return usagef("unexpected argument %q: the only argument is how long to trace (%s 5)", args[1], cmd.Name())
	case cmd.Flags().Changed("duration"):
		return usagef("two durations: -d/--duration and %q; give one", args[0])
	}
	v, err := parseDuration(args[0])
	if err != nil {
		return usagef("unexpected argument %q: the only argument is how long to trace, in seconds (%s 5) or as a duration (500ms)", args[0], cmd.Name())
	}
	*d = v
	return nil
}

// addPidFlag is -p/--pid for tools that filter one process in the kernel.
func addPidFlag(fs *pflag.FlagSet, p *int, what string) {
	fs.IntVarP(p, "pid", "p", 0, what+" only this process")
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

// addIntervalFlag is -i/--interval: a report every interval.
func addIntervalFlag(fs *pflag.FlagSet, p *time.Duration, def time.Duration, usage string) {
	durationVarP(fs, p, "interval", "i", def, usage+": seconds (1) or a duration (500ms)")
}

// checkInterval keeps intervals long enough to read and cheap to take.
func checkInterval(d, least time.Duration) error {
	if d != 0 && d < least {
		return usagef("-i/--interval %s: at least %s", d, least)
	}
	return nil
}

// addStackFlags are the stack side and folded output options that profile,
// offcpu and wakeup share (bcc's -U, -K, -f).
type stackFlags struct {
	user, kernel, folded bool
	flame, output, comm  string
	perThread            bool
}

func addStackFlags(fs *pflag.FlagSet, s *stackFlags, unit string) {
	fs.BoolVarP(&s.user, "user", "U", false, "user stacks only")
	fs.BoolVarP(&s.kernel, "kernel", "K", false, "kernel stacks only")
	fs.BoolVar(&s.perThread, "per-thread", false, "keep threads apart")
	fs.StringVar(&s.comm, "comm", "", "only these commands in the output (comma-separated)")
	fs.BoolVarP(&s.folded, "folded", "f", false, "print collapsed stacks instead of a report (values in "+unit+")")
	fs.StringVar(&s.flame, "flamegraph", "", "also write a flame graph (.html, or .svg)")
	fs.StringVarP(&s.output, "output", "o", "", "also write a data file for report and flamegraph")
}

func (s stackFlags) check() error {
	if s.user && s.kernel {
		return usagef("-U/--user and -K/--kernel conflict: leave both out for both stacks")
	}
	return nil
}

// stdout buffers a command's output; flush it before returning.
func stdout() *bufio.Writer { return bufio.NewWriter(os.Stdout) }

// progress tells a terminal's user what runs; pipes and files don't get it.
func progress(format string, a ...any) {
	if isTerminal(2) {
		fmt.Fprintf(os.Stderr, "sonde: "+format+"\n", a...)
	}
}

// forHow says how long a run lasts, for progress lines.
func forHow(d time.Duration) string {
	if d == 0 {
		return "Ctrl-C to stop"
	}
	return "for " + d.String()
}
