package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cli"
	"github.com/sonde-dev/sonde/internal/memleak"
)

func newMemleakCmd() *cobra.Command {
	l := &cli.Live{MinInterval: 100 * time.Millisecond}
	o, v := memleak.Options{Version: version}, memleak.View{}
	cmd := l.Command(cli.AcceptsCommand(memleak.Command()), "trace this process")
	v.AddFlags(cmd.Flags(), &o)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		ctx, tgt, stop, err := l.Start(cmd, nil, "tracing allocations")
		if err != nil {
			return err
		}
		defer stop()
		return memleak.Main(ctx, l, o, v, tgt, args)
	}
	return cmd
}
