package commands

import (
	"cmp"
	"context"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/cmd/remote"
)

// snoop is what the tools that print one line per event share with bcc's
// *snoop tools: a time column, a command-name filter and, for those whose
// events happen in the task's own context, a cgroup filter. Their own
// flags come on top.
type snoop struct {
	live       cli.Live
	timestamps bool
	comms      []string
}

// snoopFlags picks the letters a tool gives the shared flags, as its bcc
// namesake does (opensnoop's timestamp is -T, its -t a thread).
type snoopFlags struct {
	pid       string // what -p does ("" for no -p)
	timeShort string // the short form of --timestamp
	cgroup    bool   // -G/--cgroup
	noComm    bool   // no --comm: the events happen outside any process
}

// command builds the tool's command with the shared flags.
func (s *snoop) command(name string, fl snoopFlags) *cobra.Command {
	s.live.Cgroups = fl.cgroup // -G, in the kernel (cli.Live resolves it)
	cmd := s.live.Command(cli.Doc(name, &cobra.Command{Args: cobra.NoArgs}), fl.pid)
	f := cmd.Flags()
	f.BoolVarP(&s.timestamps, "timestamp", fl.timeShort, false, "print the time (seconds since boot) first")
	if !fl.noComm {
		f.StringSliceVar(&s.comms, "comm", nil, "only events of these command names (comma-separated)")
	}
	marks := []string{"timestamp"}
	remote.MarkValues(f, marks...)
	return cmd
}

// snoopLine is one event of a snoop tool, for --json.
type snoopLine interface{ WriteJSON(w io.Writer) error }

// snoopResult is the end of a run: its footer counts what was seen and lost.
type snoopResult interface{ WriteFooter(w io.Writer) }

// runSnoop is a snoop tool's RunE: the header (text), one line per event
// as it comes (text, or JSON Lines with --json), then the footer, on
// stdout in text and on stderr with --json, whose lines are events only.
func runSnoop[E snoopLine, R snoopResult](s *snoop, header func(w io.Writer), text func(w io.Writer, e E),
	run func(ctx context.Context, out func(E)) (R, error)) func(*cobra.Command, []string) error {
	l := &s.live
	return l.RunE("", func(ctx context.Context, _ string, _ []string) error {
		w := l.W
		if !l.JSON {
			header(w)
			w.Flush()
		}
		var werr error
		res, err := run(ctx, func(e E) {
			if l.JSON {
				werr = cmp.Or(werr, e.WriteJSON(w))
			} else {
				text(w, e)
			}
			werr = cmp.Or(werr, w.Flush())
		})
		if err != nil {
			return err
		}
		if l.JSON {
			res.WriteFooter(os.Stderr)
		} else {
			res.WriteFooter(w)
		}
		return cmp.Or(werr, w.Flush())
	})
}

// snoopBadInput are the refused command lines every snoop tool shares.
func snoopBadInput(name string) []BadInput {
	return []BadInput{
		{Name: name + "_argument", Args: []string{"now"}, Code: 2, Want: `unknown command "now"|unexpected argument`},
		{Name: name + "_zero_duration", Args: []string{"-d", "0"}, Code: 2, Want: `-d/--duration 0s: want a positive duration`},
	}
}
