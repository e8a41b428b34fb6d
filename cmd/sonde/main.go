// Command sonde answers "where does the time go?": it samples on-CPU
// stacks and shows them as perf-style reports and flame graphs.
//
// This package only wires the command line (cobra/pflag, perf's
// conventions) to the packages under internal/ that measure and render.
package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"

	"github.com/spf13/cobra"
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

// Command groups, in the order help lists them.
const (
	groupRecord = "record"
	groupBPF    = "bpf"
	groupSetup  = "setup"
)

// newRoot builds the whole command tree; tests and `sonde man` use it too.
func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "sonde",
		Short: "where does the time go?",
		Long: "sonde answers \"where does the time go?\": it samples on-CPU stacks, counts events,\n" +
			"traces latencies and shows them as perf-style reports and flame graphs.",
		Version:       version,
		SilenceErrors: true, // main prints one line
		SilenceUsage:  true, // usage only for -h
		// Print help, not an error, for a bare `sonde`.
		Args: cobra.NoArgs,
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			if usesProbes[cmd.Name()] {
				// Probes left by a sonde that was killed go away now.
				if n := probe.CleanStale(); n > 0 {
					fmt.Fprintf(os.Stderr, "sonde: removed %d probes left by a sonde that did not exit cleanly\n", n)
				}
			}
		},
	}
	root.SetVersionTemplate("sonde {{.Version}}\n")
	root.AddGroup(
		&cobra.Group{ID: groupRecord, Title: "Recording, counting and reports:"},
		&cobra.Group{ID: groupBPF, Title: "Live BPF tools:"},
		&cobra.Group{ID: groupSetup, Title: "Other commands:"},
	)
	root.SetHelpCommandGroupID(groupSetup)
	root.SetCompletionCommandGroupID(groupSetup)
	root.SetFlagErrorFunc(flagError)
	for _, c := range recordCommands() {
		c.GroupID = groupRecord
		root.AddCommand(c)
	}
	for _, c := range bpfCommands() {
		c.GroupID = groupBPF
		root.AddCommand(c)
	}
	for _, c := range []*cobra.Command{newVersionCmd(), newManCmd(root)} {
		c.GroupID = groupSetup
		root.AddCommand(c)
	}
	// Add help and completion now (cobra would at Execute) so that the
	// unknown-command check and the man pages see them.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		switch c.Name() {
		case "help":
			c.Short = "help about any command: sonde help record"
		case "completion":
			c.Short = "write the shell completion script: sonde completion bash|zsh|fish"
		}
	}
	return root
}

// recordCommands are the perf-style commands: recordings, counts, reports.
func recordCommands() []*cobra.Command {
	return []*cobra.Command{
		newListCmd(),
		bridge("record", "sample on-CPU stacks of a command, processes or the whole system into a data file", runRecord),
		bridge("report", "show a data file as a perf-style report (text, JSON or pprof)", runReport),
		bridge("script", "print every recorded sample and event in time order, with tracepoint fields and stacks", runScript),
		bridge("annotate", "disassembly of hot functions with per-instruction samples and source lines", runAnnotate),
		bridge("diff", "compare two data files per symbol, as perf diff does", runDiff),
		bridge("flamegraph", "draw a data file or folded stacks as an interactive flame graph", runFlamegraph),
		bridge("stat", "count events (software, hardware, tracepoints, probes) for a command, processes or the system", runStat),
		bridge("latency", "latency distribution between two events paired by key fields (e.g. block issue → complete)", runLatency),
		bridge("probe", "add, list and remove dynamic probes (uprobes; kprobes where the kernel has them)", runProbe),
	}
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print the version",
		Args:  cobra.NoArgs,
		Run:   func(cmd *cobra.Command, _ []string) { fmt.Fprintln(cmd.OutOrStdout(), "sonde", version) },
	}
}

// usesProbes names the commands that may create uprobes: they clear the
// probes a killed sonde left behind before they start.
var usesProbes = map[string]bool{"record": true, "stat": true, "latency": true, "probe": true, "funclat": true}

func main() {
	if len(os.Args) > 1 && os.Args[1] == runctl.ChildArg {
		runctl.RunChild(os.Args[2:])
		return
	}
	os.Exit(run(newRoot(), os.Args[1:]))
}

// run executes one command line and returns the exit status: 0, the traced
// command's status, 1 for failures, 2 for bad command lines.
func run(root *cobra.Command, args []string) int {
	if len(args) == 0 {
		root.SetOut(os.Stderr)
		root.Help()
		return 2
	}
	if err := unknownCommand(root, args[0]); err != nil {
		fmt.Fprintf(os.Stderr, "sonde: %v\n", err)
		return 2
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	probe.RemoveTemp()
	if err == nil {
		return 0
	}
	var ex exitStatus
	if errors.As(err, &ex) {
		return int(ex)
	}
	name := "sonde"
	if cmd != nil && cmd != root {
		name = cmd.CommandPath()
	}
	fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
	var ue usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

// unknownCommand explains, in one line, a first word that names no command.
func unknownCommand(root *cobra.Command, name string) error {
	if strings.HasPrefix(name, "-") {
		return nil
	}
	names := []string{cobra.ShellCompRequestCmd, cobra.ShellCompNoDescRequestCmd}
	for _, c := range root.Commands() {
		names = append(names, c.Name())
		names = append(names, c.Aliases...)
	}
	for _, n := range names {
		if n == name {
			return nil
		}
	}
	sugg := root.SuggestionsFor(name)
	if len(sugg) == 0 {
		var visible []string
		for _, c := range root.Commands() {
			if c.IsAvailableCommand() {
				visible = append(visible, c.Name())
			}
		}
		sort.Strings(visible)
		sugg = perf.NearestOf(name, visible, 2)
	}
	return fmt.Errorf("unknown command %q; did you mean %s? (sonde help lists the commands)", name, strings.Join(sugg, " or "))
}

// isTerminal reports whether fd is a terminal (progress goes only there).
func isTerminal(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}
