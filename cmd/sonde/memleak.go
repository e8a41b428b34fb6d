package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cli"
	"github.com/sonde-dev/sonde/internal/memleak"
)

func newMemleakCmd() *cobra.Command {
	l := &cli.Live{MinInterval: 100 * time.Millisecond}
	o := memleak.Options{Version: version}
	var v memleak.View
	cmd := l.Command(acceptsCommand(&cobra.Command{
		Use:   "memleak [flags] [--] [COMMAND [ARGS…]]",
		Short: "memory allocated and not freed, by stack: allocator uprobes or kmem tracepoints (BPF)",
		Long: "Track allocations and frees, as bcc's memleak does, and report what is outstanding per stack: of a\n" +
			"command (at its exit, what it never freed), of a process (-p), or of the kernel (--kernel).",
		Example: "  sonde memleak -- ./server --once\n  sonde memleak -p 1234 -i 10 --older 5s\n  sonde memleak --kernel -d 10",
	}), "trace this process")
	f := cmd.Flags()
	cli.DurationVarP(f, &o.Older, "older", "", 0, "only allocations at least this old: seconds or a duration (bcc's -o; -o is the data file here)")
	f.Uint32VarP(&o.Every, "sample-rate", "s", 1, "track every Nth allocation call (estimates scaled)")
	f.Uint64Var(&o.SampleBytes, "sample-bytes", 0, "track allocations of B bytes or more, smaller ones with probability size/B (estimates scaled)")
	f.IntVar(&v.Top, "top", 10, "stacks to print")
	f.BoolVar(&o.Kernel, "kernel", false, "the kernel's allocations (kmem tracepoints): system-wide, or made by -p/the command")
	f.StringVar(&o.Lib, "lib", "", "the allocator's library or binary (default: libc; with --symbol-prefix, the program)")
	f.StringVar(&o.Prefix, "symbol-prefix", "", "the allocator's function name prefix (je_, tc_): PREFIXmalloc, PREFIXfree, …")
	f.StringVar(&v.Flame, "flamegraph", "", "also write a flame graph weighted by outstanding bytes (.html or .svg)")
	f.StringVarP(&v.Output, "output", "o", "", "also write a data file for report and flamegraph")
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
