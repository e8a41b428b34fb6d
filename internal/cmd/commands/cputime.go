package commands

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/format/stream"
	"github.com/sonde-dev/sonde/internal/view/cpuusage"
)

func newCputimeCmd() *cobra.Command {
	var o cpuusage.WatchOptions
	var compare bool
	var pids string
	var freq uint64
	cmd := cli.Doc("cputime", &cobra.Command{
		Args: cli.MaxArgs(2, "unexpected argument %q: the arguments are INTERVAL [COUNT] (cputime 1 5)"),
	})
	f := cmd.Flags()
	cli.DurationVarP(f, &o.Interval, "interval", "i", time.Second, "report interval: seconds (1) or a duration (500ms)")
	f.IntVarP(&o.Count, "count", "n", 0, "stop after this many reports")
	f.IntVar(&o.Top, "top", 10, "tasks per report (and per CPU with --per-cpu)")
	f.BoolVar(&o.PerCPU, "per-cpu", false, "each CPU's top tasks as well")
	f.StringVarP(&pids, "pid", "p", "", "show only these processes' threads (comma-separated pids)")
	f.StringVar(&o.Comm, "comm", "", "only tasks with this name")
	f.StringVar(&o.Stream, "stream", "", "also send each report to udp://HOST:PORT or tcp://HOST:PORT")
	f.BoolVar(&compare, "compare-sampled", false, "sample with cpu-clock beside the exact figure and show the estimate's error")
	f.Uint64VarP(&freq, "freq", "F", 100, "sampling rate for --compare-sampled")
	cli.AddDurationFlag(f, &o.Duration, "reporting")
	f.BoolVar(&o.JSON, "json", false, "write JSON Lines, one report a line (keys in docs/json.md)")
	cli.AtLeast(f, 1, "count", "top")
	cli.Between(f, "freq", 1, 100000)
	cli.AtLeast(f, 10*time.Millisecond, "interval")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := cli.IntervalCount(cmd, args, &o.Interval, &o.Count); err != nil {
			return err
		}
		if o.Interval < 10*time.Millisecond {
			return cli.Usagef("-i/--interval %s: at least 10ms", o.Interval)
		}
		if compare {
			o.SampleHz = freq
		}
		var err error
		if o.Pids, err = cli.ParseIDs(pids, "-p/--pid"); err != nil {
			return err
		}
		for _, pid := range o.Pids {
			if err := cli.CheckPid(pid); err != nil {
				return err
			}
		}
		if _, err := cli.CheckLive(0); err != nil {
			return err
		}
		return cli.UntilSignal(func(ctx context.Context) error { return cpuusage.Watch(ctx, o, os.Stdout, os.Stderr) })
	}
	return cmd
}

func newListenCmd() *cobra.Command {
	return cli.Doc("listen", &cobra.Command{
		Args: cli.ExactArgs(1, "give one address: udp://:PORT or tcp://:PORT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return cli.UntilSignal(func(ctx context.Context) error {
				return stream.Listen(args[0], os.Stdout, ctx.Done(), func(a net.Addr) {
					if cli.IsTerminal(2) {
						fmt.Fprintf(os.Stderr, "sonde: listening on %s\n", a)
					}
				})
			})
		},
	})
}

var _ = Register(Spec{Name: "cputime", Group: BPF, New: newCputimeCmd, JSON: []any{cpuusage.Report{}}, Remote: true,
	BadInput: []BadInput{{Name: "cputime_bad_pid_list", Args: []string{"-p", "1,x"}, Code: 2, Want: `-p/--pid "1,x": want comma-separated positive ids`}}})
var _ = Register(Spec{Name: "listen", Page: "cputime.md", Group: BPF, New: newListenCmd})
