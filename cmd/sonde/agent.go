package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cli"
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
	f := cmd.Flags()
	f.StringVar(&c.Listen, "listen", remote.DefaultListen, "address to serve the API on (loopback unless told otherwise)")
	f.StringVar(&c.TokenFile, "token-file", "", "file holding the token clients must send")
	f.StringVar(&c.TLSCert, "tls-cert", "", "the agent's certificate (PEM): serve HTTPS")
	f.StringVar(&c.TLSKey, "tls-key", "", "the key of --tls-cert (PEM)")
	f.StringVar(&c.ClientCA, "client-ca", "", "accept only clients with a certificate from this CA (PEM)")
	f.IntVar(&c.MaxRuns, "max-runs", remote.DefaultMaxRuns, "runs at once; more are refused, not queued")
	durationVarP(f, &c.MaxRunTime, "max-run-time", "", remote.DefaultMaxRunTime, "a run still going after this is ended")
	f.Int64Var(&c.MaxOutput, "max-output", remote.DefaultMaxOutput, "bytes of output files one run may send back")
	cli.AtLeast(f, 1, "max-runs")
	return cmd
}
