package commands

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/tools/fileio"
)

func init() {
	Register(Spec{Name: "filetop", Group: BPF, New: newFiletopCmd, JSON: []any{fileio.TopReport{}}})
	Register(Spec{Name: "fileslower", Group: BPF, New: newFileslowerCmd, JSON: []any{fileio.Slow{}}})
}

func newFiletopCmd() *cobra.Command {
	l := &cli.Live{Intervals: true}
	var o fileio.TopOptions
	var noClear bool
	cmd := l.Command(cli.Doc("filetop", &cobra.Command{}), "trace only this process")
	f := cmd.Flags()
	f.IntVarP(&o.Rows, "rows", "r", 20, "files to print (0: all)")
	f.StringVarP(&o.Sort, "sort", "s", "all", "sort by all (bytes), reads, writes, rbytes or wbytes")
	f.BoolVarP(&noClear, "noclear", "C", false, "do not clear the screen between reports")
	f.BoolVarP(&o.All, "all", "a", false, "include pipes, sockets and devices, not only regular files")
	cli.AtLeast(f, 0, "rows")
	l.Check = func(cmd *cobra.Command, args []string) error { return fileio.TopArgs(cmd, args, l, &o) }
	cmd.RunE = l.RunE("tracing file reads and writes", func(ctx context.Context, tgt string, _ []string) error {
		o.Pid, o.Target, o.Clear = l.Pid, tgt, !noClear && !l.JSON && cli.IsTerminal(1)
		return fileio.RunTop(ctx, o, l)
	})
	return cmd
}

func newFileslowerCmd() *cobra.Command {
	l := &cli.Live{}
	var o fileio.SlowerOptions
	cmd := l.Command(cli.Doc("fileslower", &cobra.Command{}), "trace only this process")
	cmd.Flags().BoolVarP(&o.All, "all", "a", false, "include pipes, sockets and devices, not only regular files")
	l.Check = func(cmd *cobra.Command, args []string) error { return fileio.SlowerArgs(cmd, args, &o) }
	cmd.RunE = l.RunE("", func(ctx context.Context, _ string, _ []string) error {
		o.Pid, o.Duration = l.Pid, l.Duration
		return fileio.RunSlower(ctx, o, l)
	})
	return cmd
}
