package commands

import (
	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/view/eventlist"
)

func newListCmd() *cobra.Command {
	var asJSON bool
	cmd := cli.Doc("list", &cobra.Command{
		Args: cobra.MaximumNArgs(1),
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
	})
	cli.AddJSONFlag(cmd.Flags(), &asJSON)
	return cmd
}

var _ = Register(Spec{Name: "list", Group: Recording, New: newListCmd, JSON: []any{[]eventlist.Event{}}, Remote: true})
