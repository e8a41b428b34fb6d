package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cli"
	"github.com/sonde-dev/sonde/internal/memleak"
)

func newMemleakCmd() *cobra.Command {
	l := &cli.Live{Intervals: true, TakesCommand: true}
	o, v := memleak.Options{Version: version}, memleak.View{}
	cmd := l.Command(memleak.Command(), "trace this process")
	v.AddFlags(cmd.Flags(), &o)
	cmd.RunE = l.RunE("tracing allocations", func(ctx context.Context, tgt string, args []string) error {
		return memleak.Main(ctx, l, o, v, tgt, args)
	})
	return cmd
}
