// Command sonde answers "where does the time go?": it samples on-CPU
// stacks and shows them as perf-style reports and flame graphs.
//
// This package only wires the command line (cobra/pflag with perf's
// conventions, internal/cmd/cli) to the packages under internal/ that measure
// and render.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/collect/probe"
	"github.com/sonde-dev/sonde/internal/collect/runctl"
	"github.com/sonde-dev/sonde/internal/service/remote"
)

// version is set by the Makefile (-ldflags -X main.version=...).
var version = "dev"

// usesProbes names the commands that may create uprobes: they clear the
// probes a killed sonde left behind before they start.
var usesProbes = map[string]bool{"record": true, "stat": true, "latency": true, "probe": true, "funclat": true}

// newRoot builds the whole command tree; tests and `sonde man` use it too.
func newRoot() *cobra.Command {
	var rc remote.Client
	root := cli.Doc("sonde", &cobra.Command{
		Version: version,
		Args:    cobra.NoArgs,
		PersistentPreRunE: rc.Hook(func(cmd *cobra.Command) { // --remote: runs there, shows here
			if usesProbes[cmd.Name()] {
				if n := probe.CleanStale(); n > 0 {
					fmt.Fprintf(os.Stderr, "sonde: removed %d probes left by a sonde that did not exit cleanly\n", n)
				}
			}
		}),
	})
	rc.AddFlags(root.PersistentFlags())
	root.SetVersionTemplate("sonde {{.Version}}\n")
	groups := []struct {
		id, title string
		cmds      []*cobra.Command
	}{
		{"record", "Recording, counting and reports:", []*cobra.Command{newListCmd(), newRecordCmd(), newReportCmd(), newScriptCmd(),
			newAnnotateCmd(), newDiffCmd(), newFlamegraphCmd(), newImportCmd(), newStatCmd(), newLatencyCmd(), newProbeCmd(), newServeCmd(),
			newFtraceCmd()}},
		{"bpf", "Live BPF tools:", bpfCommands()},
		{"setup", "Other commands:", []*cobra.Command{newAgentCmd(), cli.NewVersionCmd("sonde " + version), cli.NewManCmd(root, "sonde "+version)}},
	}
	for _, g := range groups {
		root.AddGroup(&cobra.Group{ID: g.id, Title: g.title})
		for _, c := range g.cmds {
			c.GroupID = g.id
			root.AddCommand(c)
		}
	}
	root.SetHelpCommandGroupID("setup")
	root.SetCompletionCommandGroupID("setup")
	cli.Setup(root)
	return root
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == runctl.ChildArg {
		runctl.RunChild(os.Args[2:])
		return
	}
	code := cli.Execute(newRoot(), os.Args[1:])
	probe.RemoveTemp()
	os.Exit(code)
}
