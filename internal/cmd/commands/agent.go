package commands

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/cmd/remote"
	"github.com/sonde-dev/sonde/internal/collect/runctl"
)

func newAgentCmd() *cobra.Command {
	var c remote.AgentConfig
	cmd := cli.Doc("agent", &cobra.Command{
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c.NewRoot = newRoot // remote command lines are checked against this very tree
			ctx, stop := runctl.WithSignals(context.Background())
			defer stop()
			return remote.RunAgent(ctx, c)
		},
	})
	c.AddFlags(cmd.Flags())
	return cmd
}

var _ = Register(Spec{Name: "agent", Group: Setup, New: newAgentCmd})
