package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/remote"
	"github.com/sonde-dev/sonde/internal/runctl"
)

func newAgentCmd() *cobra.Command {
	var c remote.AgentConfig
	cmd := &cobra.Command{
		Use:   "agent [--listen ADDR] (--token-file F | --tls-cert C --tls-key K [--client-ca CA])",
		Short: "run sonde's commands for workstations (sonde --remote HOST:PORT CMD …)",
		Long: "Serve sonde's measuring commands to authenticated clients over HTTP/2 (docs/remote.md): they\n" +
			"run here with checked options, their output streams back and their data files return symbolized.",
		Example: "  sonde agent --token-file /etc/sonde/token\n" +
			"  sonde agent --listen :7878 --tls-cert agent.pem --tls-key agent.key --client-ca ca.pem",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c.NewRoot = newRoot
			a, err := remote.NewAgent(c)
			if err != nil {
				return err
			}
			ctx, stop := runctl.WithSignals(context.Background())
			defer stop()
			return a.Serve(ctx, nil)
		},
	}
	c.AddFlags(cmd.Flags())
	return cmd
}
