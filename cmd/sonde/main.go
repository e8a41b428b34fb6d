// Command sonde answers "where does the time go?": it samples on-CPU
// stacks and shows them as perf-style reports and flame graphs.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sonde-dev/sonde/internal/perf"
	"github.com/sonde-dev/sonde/internal/probe"
	"github.com/sonde-dev/sonde/internal/runctl"
)

// version is set by the Makefile (-ldflags -X main.version=...).
var version = "dev"

func init() {
	// `sonde record -- CMD` re-executes sonde as a child that waits, then
	// execs CMD; the events follow the main thread, so stay on it.
	if len(os.Args) > 1 && os.Args[1] == runctl.ChildArg {
		runtime.LockOSThread()
	}
}

type command struct {
	name    string
	summary string
	run     func(args []string) (int, error)
}

var commands []command

func init() {
	commands = []command{
		{"list", "list the events this machine has, and whether each is usable here", runList},
		{"record", "sample on-CPU stacks of a command, processes or the whole system into a data file", runRecord},
		{"report", "show a data file as a perf-style report (text, JSON or pprof)", runReport},
		{"latency", "latency distribution between two events paired by key fields (e.g. block issue → complete)", runLatency},
		{"probe", "add, list and remove dynamic probes (uprobes; kprobes where the kernel has them)", runProbe},
		{"script", "print every recorded sample and event in time order, with tracepoint fields and stacks", runScript},
		{"stat", "count events (software, hardware, tracepoints, probes) for a command, processes or the system", runStat},
		{"profile", "count on-CPU stacks in the kernel with BPF (low overhead, system-wide or one process)", runProfile},
		{"offcpu", "where threads block: blocked time per stack, summed in the kernel (BPF)", runOffcpu},
		{"wakeup", "blocked time per blocked stack and waker stack, as one chain (BPF)", runWakeup},
		{"funclat", "latency distribution of user functions (uprobes) or kernel functions (fentry/kprobes)", runFunclat},
		{"syscount", "system calls counted and timed in the kernel, named from the architecture's table", runSyscount},
		{"runqlat", "run-queue latency: how long runnable tasks wait for a CPU (BPF)", runRunqlat},
		{"biolat", "block I/O latency distributions per disk, with queued and device stages (BPF)", runBiolat},
		{"biosnoop", "one line per block I/O: who, disk, sector, bytes, queued and device time (BPF)", runBiosnoop},
		{"cputime", "exact on-CPU time per task and CPU from sched_switch, every interval; streams to another machine", runCputime},
		{"listen", "receive cputime streams (udp:// or tcp://) and print them tagged by sender", runListen},
		{"top", "live view: hot symbols system-wide and exact per-task CPU time", runTop},
		{"annotate", "disassembly of hot functions with per-instruction samples and source lines", runAnnotate},
		{"diff", "compare two data files per symbol, as perf diff does", runDiff},
		{"flamegraph", "draw a data file or folded stacks as an interactive flame graph", runFlamegraph},
		{"version", "print the version", func([]string) (int, error) { fmt.Println("sonde", version); return 0, nil }},
	}
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "sonde %s: where does the time go?\n\nusage: sonde COMMAND [options]\n\ncommands:\n", version)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nsonde COMMAND -h shows a command's options.\n")
}

// usageError marks bad command lines (exit status 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func main() {
	if len(os.Args) > 1 && os.Args[1] == runctl.ChildArg {
		runctl.RunChild(os.Args[2:])
		return
	}
	if len(os.Args) < 2 {
		usage(os.Stderr)
		os.Exit(2)
	}
	name := os.Args[1]
	if name == "-h" || name == "--help" || name == "help" {
		usage(os.Stdout)
		return
	}
	for _, c := range commands {
		if c.name == name {
			switch name {
			case "record", "stat", "latency", "probe":
				// Probes left by a sonde that was killed go away now.
				if n := probe.CleanStale(); n > 0 {
					fmt.Fprintf(os.Stderr, "sonde: removed %d probes left by a sonde that did not exit cleanly\n", n)
				}
			}
			code, err := c.run(os.Args[2:])
			probe.RemoveTemp()
			if err != nil {
				if errors.Is(err, flag.ErrHelp) {
					os.Exit(0)
				}
				fmt.Fprintf(os.Stderr, "sonde %s: %v\n", name, err)
				var ue usageError
				if errors.As(err, &ue) {
					os.Exit(2)
				}
				if code == 0 {
					code = 1
				}
			}
			os.Exit(code)
		}
	}
	var names []string
	for _, c := range commands {
		names = append(names, c.name)
	}
	sort.Strings(names)
	fmt.Fprintf(os.Stderr, "sonde: unknown command %q (nearest: %s)\n", name, strings.Join(perf.NearestOf(name, names, 2), ", "))
	os.Exit(2)
}

// newFlags makes a FlagSet whose errors come back as one line.
func newFlags(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	// Parse errors are reported in one line by parseFlags; the usage text
	// is printed only for -h.
	fs.Usage = func() {}
	usageText[fs] = func() {
		fmt.Fprintf(os.Stdout, "usage: sonde %s %s\n\noptions:\n", name, synopsis)
		fs.SetOutput(os.Stdout)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs
}

var usageText = map[*flag.FlagSet]func(){}

func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			if u := usageText[fs]; u != nil {
				u()
			}
			return err
		}
		return usageError{fmt.Sprintf("%v (see sonde %s -h)", err, fs.Name())}
	}
	return nil
}

// parseInterspersed parses flags that may follow positional arguments
// (sonde diff A B --min 1); "--" ends flag parsing.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// isTerminal reports whether fd is a terminal (progress goes only there).
func isTerminal(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}
