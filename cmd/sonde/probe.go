package main

import (
	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cli"
)

func newProbeCmd() *cobra.Command {
	var p cli.Probe
	cmd := &cobra.Command{
		Use:   "probe [flags] -a SPEC | -l | -d NAME | --del-all",
		Short: "add, list and remove dynamic probes (uprobes; kprobes where the kernel has them)",
		Long: "Manage dynamic probes as perf probe does. A SPEC is 'FUNC [ARG[=LOC] …]' or\n" +
			"'FUNC%return $retval'; the probe is then an event for stat -e and record -e.",
		Example: "  sonde probe -x ./myprog -a 'compute n'\n  sonde probe -x ./myprog -a 'compute%return $retval'\n" +
			"  sonde probe -l\n  sonde probe -d probe_myprog:compute",
	}
	f := cmd.Flags()
	f.BoolVarP(&p.Add, "add", "a", false, "create a probe from the spec")
	f.StringVarP(&p.Binary, "exec", "x", "", "binary (executable or library) for user probes")
	f.IntVarP(&p.Pid, "pid", "p", 0, "probe the executable of this process")
	cli.AtLeast(f, 1, "pid")
	f.BoolVarP(&p.List, "list", "l", false, "list probes")
	f.StringVarP(&p.Del, "del", "d", "", "remove a probe (group:event or event)")
	f.BoolVar(&p.DelAll, "del-all", false, "remove every probe sonde created (probe_* and sonde_* groups)")
	cli.AddJSONFlag(f, &p.JSON)
	cmd.RunE = func(_ *cobra.Command, args []string) error { return p.Run(args) }
	return cmd
}
