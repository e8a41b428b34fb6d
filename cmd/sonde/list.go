package main

import (
	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cli"
	"github.com/sonde-dev/sonde/internal/view/eventlist"
)

func newListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [GLOB]",
		Short: "list the events this machine has, and whether each is usable here",
		Long: "List the events sonde can record or count (-e): built-in software and hardware\n" +
			"events, PMU events, tracepoints and probes. Each built-in event is opened once\n" +
			"to tell whether it works here. GLOB filters the names; a bare word matches anywhere.",
		Example: "  sonde list\n  sonde list 'sched:*'\n  sonde list clock --json",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			glob := ""
			if len(args) > 0 {
				glob = args[0]
			}
			evs := eventlist.Collect(eventlist.Match(glob))
			if asJSON {
				return eventlist.WriteJSON(cmd.OutOrStdout(), evs)
			}
			return eventlist.WriteText(cmd.OutOrStdout(), evs)
		},
	}
	cli.AddJSONFlag(cmd.Flags(), &asJSON)
	return cmd
}
