package commands

import (
	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/collect/probe"
)

func newProbeCmd() *cobra.Command {
	var p Probe
	cmd := cli.Doc("probe", &cobra.Command{})
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

var _ = Register(Spec{Name: "probe", Group: Recording, New: newProbeCmd, JSON: []any{[]probe.Listed{}}, Probes: true})
