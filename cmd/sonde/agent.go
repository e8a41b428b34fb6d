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
		Use:   "agent [--listen ADDR] (--token-file F | --tls-cert C --tls-key K [--client-ca CA]) [--metrics ADDR] [--continuous [--every 10s] [--otlp URL]]",
		Short: "serve sonde --remote to workstations, Prometheus metrics, continuous OTLP profiles",
		Long: "Serve sonde's measuring commands to authenticated clients over HTTP/2: they run here with checked\n" +
			"options, output streams back, data files return symbolized. --metrics serves Prometheus; --continuous\n" +
			"pushes system-wide on-CPU profiles as OpenTelemetry profiles (docs/remote.md).",
		Example: "  sonde agent --token-file /etc/sonde/token\n" +
			"  sonde agent --listen :7878 --tls-cert agent.pem --tls-key agent.key --client-ca ca.pem\n" +
			"  sonde agent --metrics :9464 --continuous --otlp http://collector:4318",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c.NewRoot = newRoot // remote command lines are checked against this very tree
			ctx, stop := runctl.WithSignals(context.Background())
			defer stop()
			return remote.RunAgent(ctx, c)
		},
	}
	c.AddFlags(cmd.Flags())
	return cmd
}
