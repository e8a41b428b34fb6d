package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cli"
	"github.com/sonde-dev/sonde/internal/files"
)

func newFiletopCmd() *cobra.Command {
	l := &cli.Live{Intervals: true}
	var o files.TopOptions
	var noClear bool
	cmd := l.Command(&cobra.Command{
		Use:   "filetop [flags] [INTERVAL [COUNT]] [-- COMMAND [ARGS…]]",
		Short: "files by reads, writes and bytes per process, every interval, from syscall tracepoints (BPF)",
		Long: "Count reads and writes per process and file in the kernel, as libbpf-tools' filetop does, but from the\n" +
			"syscall tracepoints (no kprobes): a report every INTERVAL (1s), COUNT times; with a command, at its exit.",
		Example: "  sonde filetop\n  sonde filetop -s wbytes -r 10 5 3\n  sonde filetop --json -- tar cf /tmp/x.tar /usr/share/doc",
	}, "trace only this process")
	f := cmd.Flags()
	f.IntVarP(&o.Rows, "rows", "r", 20, "files to print (0: all)")
	f.StringVarP(&o.Sort, "sort", "s", "all", "sort by all (bytes), reads, writes, rbytes or wbytes")
	f.BoolVarP(&noClear, "noclear", "C", false, "do not clear the screen between reports")
	f.BoolVarP(&o.All, "all", "a", false, "include pipes, sockets and devices, not only regular files")
	cli.AtLeast(f, 0, "rows")
	l.Check = func(cmd *cobra.Command, args []string) error { return files.TopArgs(cmd, args, l, &o) }
	cmd.RunE = l.RunE("tracing file reads and writes", func(ctx context.Context, tgt string, _ []string) error {
		o.Pid, o.Target, o.Clear = l.Pid, tgt, !noClear && !l.JSON && cli.IsTerminal(1)
		return files.RunTop(ctx, o, l)
	})
	return cmd
}

func newFileslowerCmd() *cobra.Command {
	l := &cli.Live{}
	var o files.SlowerOptions
	cmd := l.Command(&cobra.Command{
		Use:   "fileslower [flags] [MIN_MS] [-- COMMAND [ARGS…]]",
		Short: "each file read or write slower than MIN_MS (10), from syscall tracepoints (BPF)",
		Long: "Trace reads and writes and print each that took at least MIN_MS milliseconds (default 10), as bcc's\n" +
			"fileslower does, but from the syscall tracepoints (no kprobes); 0 prints every call.",
		Example: "  sonde fileslower\n  sonde fileslower 1 -p 1234\n  sonde fileslower -a 50 -- ./server",
	}, "trace only this process")
	cmd.Flags().BoolVarP(&o.All, "all", "a", false, "include pipes, sockets and devices, not only regular files")
	l.Check = func(cmd *cobra.Command, args []string) error { return files.SlowerArgs(cmd, args, &o) }
	cmd.RunE = l.RunE("", func(ctx context.Context, _ string, _ []string) error {
		o.Pid, o.Duration = l.Pid, l.Duration
		return files.RunSlower(ctx, o, l)
	})
	return cmd
}
