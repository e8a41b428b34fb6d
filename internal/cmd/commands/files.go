package commands

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/tools/fileio"
)

func newFiletopCmd() *cobra.Command {
	l := &cli.Live{Intervals: true, Cgroups: true}
	var o fileio.TopOptions
	var noClear bool
	cmd := l.Command(cli.Doc("filetop", &cobra.Command{}), "trace only this process")
	f := cmd.Flags()
	f.IntVarP(&o.Rows, "rows", "r", 20, "files to print (0: all)")
	f.StringVarP(&o.Sort, "sort", "s", "all", "sort by all (bytes), reads, writes, rbytes or wbytes")
	cli.Choices(f, "sort", false, "all", "reads", "writes", "rbytes", "wbytes")
	f.BoolVarP(&noClear, "noclear", "C", false, "do not clear the screen between reports")
	f.BoolVarP(&o.All, "all", "a", false, "include pipes, sockets and devices, not only regular files")
	cli.AtLeast(f, 0, "rows")
	l.Check = func(cmd *cobra.Command, args []string) error { return filetopArgs(cmd, args, l, &o) }
	cmd.RunE = l.RunE("tracing file reads and writes", func(ctx context.Context, tgt string, _ []string) error {
		o.Pid, o.Cgroup, o.Target, o.Clear = l.Pid, l.Cgroup, tgt, !noClear && !l.JSON && cli.IsTerminal(1)
		return runFiletop(ctx, o, l)
	})
	return cmd
}

func newFileslowerCmd() *cobra.Command {
	l := &cli.Live{Cgroups: true}
	var o fileio.SlowerOptions
	cmd := l.Command(cli.Doc("fileslower", &cobra.Command{}), "trace only this process")
	cmd.Flags().BoolVarP(&o.All, "all", "a", false, "include pipes, sockets and devices, not only regular files")
	l.Check = func(cmd *cobra.Command, args []string) error { return fileslowerArgs(cmd, args, &o) }
	cmd.RunE = l.RunE("", func(ctx context.Context, _ string, _ []string) error {
		o.Pid, o.Cgroup, o.Duration = l.Pid, l.Cgroup, l.Duration
		return runFileslower(ctx, o, l)
	})
	return cmd
}

// splitDash splits bcc-style positional numbers from a command after --.
func splitDash(cmd *cobra.Command, args []string) (pos, command []string) {
	if i := cmd.ArgsLenAtDash(); i >= 0 {
		return args[:i], args[i:]
	}
	return args, nil
}

// filetopArgs reads filetop's [INTERVAL [COUNT]] [-- COMMAND]: a report every
// INTERVAL, COUNT times; without an interval, every second until the end
// (top's way), or once at the end with -d or a command.
func filetopArgs(cmd *cobra.Command, args []string, l *cli.Live, o *fileio.TopOptions) error {
	pos, command := splitDash(cmd, args)
	count := 0
	if err := cli.IntervalCount(cmd, pos, &l.Interval, &count); err != nil {
		return err
	}
	if len(pos) > 2 {
		return cli.Usagef("unexpected argument %q: the arguments are [INTERVAL [COUNT]] (filetop 1 5); a command goes after --", pos[2])
	}
	if l.Interval == 0 && len(command) == 0 && l.Duration == 0 {
		l.Interval = time.Second
	}
	if count > 0 {
		if l.Duration > 0 {
			return cli.Usagef("COUNT and -d/--duration both say how long: give one")
		}
		l.Duration = l.Interval * time.Duration(count)
	}
	o.Command, o.Interval, o.Duration = command, l.Interval, l.Duration
	return nil
}

// runFiletop runs filetop and writes its reports to l.W; a traced command's
// exit status becomes sonde's.
func runFiletop(ctx context.Context, o fileio.TopOptions, l *cli.Live) error {
	if len(o.Command) > 0 {
		o.Target = cli.Target{Command: o.Command}.String()
	}
	o.OnReport = func(r *fileio.TopReport) { l.W.Interval(r) }
	res, err := fileio.Top(ctx, o)
	if err != nil {
		return err
	}
	if err := l.W.Final(res); err != nil || res.ExitCode == nil {
		return err
	}
	return cli.ExitWith(*res.ExitCode)
}

// fileslowerArgs reads fileslower's [MIN_MS] [-- COMMAND].
func fileslowerArgs(cmd *cobra.Command, args []string, o *fileio.SlowerOptions) error {
	pos, command := splitDash(cmd, args)
	o.Min, o.Command = 10*time.Millisecond, command
	if len(pos) > 1 {
		return cli.Usagef("unexpected argument %q: the argument is MIN_MS (fileslower 10); a command goes after --", pos[1])
	}
	if len(pos) == 1 {
		ms, err := strconv.ParseFloat(pos[0], 64)
		if err != nil || ms < 0 {
			return cli.Usagef("MIN_MS %q: want milliseconds (10, 0.5, 0 for every call)", pos[0])
		}
		o.Min = time.Duration(ms * float64(time.Millisecond))
	}
	return nil
}

// runFileslower runs fileslower: one line per slow call as it completes,
// flushed at once; the losses end the text (and go to stderr with --json,
// whose lines are calls only).
func runFileslower(ctx context.Context, o fileio.SlowerOptions, l *cli.Live) error {
	if !l.JSON {
		fmt.Fprintf(l.W, "# tracing reads and writes of %s taking %s or more (%s)\n", kindsOf(o.All), o.Min, fileio.Mode)
		fileio.SlowHeader(l.W)
		l.W.Flush()
	}
	// Each call is a line, text or JSON, flushed at once.
	res, err := fileio.Slower(ctx, o, func(x fileio.Slow) { l.W.Interval(x) })
	if err != nil {
		return err
	}
	if l.JSON {
		res.WriteFooter(os.Stderr)
	} else {
		res.WriteFooter(l.W)
	}
	if err := l.W.Flush(); err != nil || len(o.Command) == 0 {
		return err
	}
	return cli.ExitWith(res.ExitCode)
}

func kindsOf(all bool) string {
	if all {
		return "every file"
	}
	return "regular files"
}

var _ = Register(Spec{Name: "filetop", Group: BPF, New: newFiletopCmd, JSON: []any{fileio.TopReport{}}})
var _ = Register(Spec{Name: "fileslower", Group: BPF, New: newFileslowerCmd, JSON: []any{fileio.Slow{}}})
