package commands

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/cmd/remote"
	"github.com/sonde-dev/sonde/internal/collect/runctl"
	"github.com/sonde-dev/sonde/internal/format/outfile"
	"github.com/sonde-dev/sonde/internal/model/jsonout"
	"github.com/sonde-dev/sonde/internal/service/whyweb"
	"github.com/sonde-dev/sonde/internal/tools/why"
	"github.com/sonde-dev/sonde/internal/view/flamegraph"
)

func newWhyCmd() *cobra.Command {
	l := &cli.Live{DurationArg: true, TakesCommand: true, Cgroups: true, ReportFile: true}
	o := why.Options{User: true}
	var top int
	var kernelOnly bool
	var flame string
	var webView, all bool
	cmd := l.Command(cli.Doc("why", &cobra.Command{}), "explain this process's threads")
	f := cmd.Flags()
	f.IntVarP(&o.Tid, "tid", "t", 0, "explain this thread of a process only (its process's other threads count as wakers)")
	cli.AtLeast(f, 1, "tid")
	f.IntVar(&top, "top", 10, "findings to print")
	cli.AtLeast(f, 1, "top")
	f.IntVar(&o.Depth, "depth", 4, "follow wakers this many hops from the target's threads")
	cli.Between(f, "depth", 1, 8)
	f.BoolVarP(&kernelOnly, "kernel", "K", false, "kernel stacks only (no user stacks walked)")
	f.StringVar(&flame, "flamegraph", "", "also write a wall-clock flame graph: every thread's time under on-CPU, runnable, throttled or blocked: REASON (.html, .svg or .folded)")
	f.BoolVar(&webView, "web", false, "then show the findings in the browser: ranked, each with its chain as a graph and its flame graph, every thread's time as a bar and over time (serves until Ctrl-C)")
	f.BoolVarP(&all, "all-cpus", "a", false, "explain every thread on the machine, with each process's budget (the default without -p, -t, -G or a command)")
	cli.Conflicting(f, "all-cpus", "pid", "choose one target")
	cli.Conflicting(f, "all-cpus", "tid", "choose one target")
	cli.Conflicting(f, "all-cpus", "cgroup", "choose one target")
	remote.MarkValues(f, "depth")
	l.Check = func(cmd *cobra.Command, args []string) error {
		if all && cmd.ArgsLenAtDash() == 0 {
			return cli.Usagef("-a/--all-cpus and a command conflict: explain the whole machine or run a command")
		}
		if err := checkWhyTid(cmd, args, &o); err != nil {
			return err
		}
		if flame == "" {
			return nil
		}
		if _, err := flamegraph.FormatOf("", flame); err != nil {
			return cli.Usagef("--flamegraph %s: %v", flame, err)
		}
		return outfile.Check(flame)
	}
	cmd.RunE = l.RunE("finding where the time goes", func(ctx context.Context, tgt string, _ []string) error {
		if o.Tid != 0 {
			tgt = cli.Target{Tids: []int{o.Tid}}.String()
		} else {
			o.Pid = l.Pid
		}
		o.Command, o.Duration, o.Cgroup = l.Argv, l.Duration, l.Cgroup
		o.User = !kernelOnly
		if webView {
			o.Slices = whyweb.Slices
		}
		res, err := why.Run(ctx, o)
		if err != nil {
			return err
		}
		rep := why.Analyze(&res.Data, top)
		rep.Run = jsonout.Run{Command: "why", Target: tgt, DurationNS: jsonout.Nanos(res.StopNS - res.StartNS)}
		rep.Errors, rep.Attach = res.Errors, res.Attach
		if res.Exited {
			code := res.ExitCode
			rep.Run.ExitCode = &code
		}
		if err := l.Final(rep); err != nil {
			return err
		}
		if flame != "" {
			if err := writeWallFlame(flame, &res.Data, tgt); err != nil {
				return err
			}
		}
		if webView {
			// A fresh context: Ctrl-C may have ended the run already; the
			// next one stops the page.
			sctx, stop := runctl.WithSignals(context.Background())
			defer stop()
			if err := whyweb.Serve(sctx, rep, whyweb.Options{}); err != nil {
				return err
			}
		}
		if res.Exited {
			return cli.ExitWith(res.ExitCode)
		}
		return nil
	})
	return cmd
}

// checkWhyTid checks -t against -p and a command, and finds its process.
func checkWhyTid(cmd *cobra.Command, args []string, o *why.Options) error {
	if o.Tid == 0 {
		return nil
	}
	if cmd.Flags().Changed("pid") {
		return cli.Usagef("-p/--pid and -t/--tid conflict: choose one target")
	}
	if cmd.ArgsLenAtDash() == 0 {
		return cli.Usagef("-t/--tid and a command conflict: trace a thread or run a command")
	}
	pid, err := why.ProcessOf(o.Tid)
	if err != nil {
		return err
	}
	o.Pid = pid
	return nil
}

// writeWallFlame writes why's wall-clock stacks as a flame graph.
func writeWallFlame(path string, d *why.Data, target string) error {
	var folded bytes.Buffer
	if err := why.WriteFolded(&folded, d); err != nil {
		return err
	}
	root, err := flamegraph.ParseFolded(&folded, func(string) {})
	if err != nil {
		return fmt.Errorf("building the flame graph: %w", err)
	}
	format, _ := flamegraph.FormatOf("", path)
	return outfile.Write(path, func(w io.Writer) error {
		return flamegraph.Write(w, root, format, flamegraph.Options{Title: "sonde why: wall-clock time of " + target, Unit: "ns"})
	})
}

var _ = Register(Spec{Name: "why", Group: BPF, New: newWhyCmd, JSON: []any{why.Report{}}, Keys: why.Vocabulary, Remote: true, RunsCommand: true,
	Smoke: []string{"why", "-d", "1"},
	BadInput: []BadInput{{Name: "why_zero_duration", Args: []string{"-d", "0"}, Code: 2, Want: `-d/--duration 0s`},
		{Name: "why_tid_zero", Args: []string{"-t", "0"}, Code: 2, Want: `-t/--tid 0`},
		{Name: "why_tid_and_pid", Args: []string{"-t", "1", "-p", "1"}, Code: 2, Want: `-p/--pid and -t/--tid conflict`},
		{Name: "why_all_and_pid", Args: []string{"-a", "-p", "1"}, Code: 2, Want: `-a/--all-cpus and -p/--pid conflict`},
		{Name: "why_all_and_command", Args: []string{"-a", "--", "true"}, Code: 2, Want: `-a/--all-cpus and a command conflict`},
		{Name: "why_output_dir", Args: []string{"-o", "/", "-d", "1"}, Code: 1, Want: `/ is a directory`}}})
