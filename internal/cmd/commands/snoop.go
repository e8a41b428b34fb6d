package commands

import (
	"cmp"
	"context"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/cmd/remote"
	"github.com/sonde-dev/sonde/internal/collect/cgroup"
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
	comm      string // what --comm does, if not the usual command-name filter
}

// command builds the tool's command with the shared flags.
func (s *snoop) command(name string, fl snoopFlags) *cobra.Command {
	s.live.Cgroups = fl.cgroup // -G, in the kernel (cli.Live resolves it)
	cmd := s.live.Command(cli.Doc(name, &cobra.Command{Args: cobra.NoArgs}), fl.pid)
	f := cmd.Flags()
	f.BoolVarP(&s.timestamps, "timestamp", fl.timeShort, false, "print the time (seconds since boot) first")
	if !fl.noComm {
		f.StringSliceVar(&s.comms, "comm", nil, cmp.Or(fl.comm, "only events of these command names (comma-separated)"))
	}
	marks := []string{"timestamp"}
	remote.MarkValues(f, marks...)
	return cmd
}

// snoopScope is what the shared flags select, for the tool's Options.
type snoopScope struct {
	Pid      int            // -p (0: every process)
	Cgroup   *cgroup.Target // -G (nil: every cgroup)
	Comms    []string       // --comm
	Duration time.Duration  // -d
}

// snoopTool declares a snoop tool: the letters of its shared flags, its
// own flags, its text and its run. Everything else is runSnoop's.
type snoopTool[E snoopLine, R snoopResult] struct {
	name  string
	flags snoopFlags
	// own adds the tool's own flags and returns its check of them (nil:
	// none), run before the shared checks.
	own    func(f *pflag.FlagSet) func(*cobra.Command, []string) error
	header func(w io.Writer, timestamps bool) // the text's column names
	// text writes one event; the event comes first so that a method
	// expression (exitsnoop.Exit.WriteText) serves as it is.
	text func(e E, w io.Writer, timestamps bool)
	run  func(ctx context.Context, sc snoopScope, out func(E)) (R, error)
}

// command builds the tool's command: shared flags, own flags, runSnoop.
func (t snoopTool[E, R]) command() *cobra.Command {
	s := &snoop{}
	cmd := s.command(t.name, t.flags)
	if t.own != nil {
		s.live.Check = t.own(cmd.Flags())
	}
	header := func(w io.Writer) { t.header(w, s.timestamps) }
	text := func(w io.Writer, e E) { t.text(e, w, s.timestamps) }
	cmd.RunE = runSnoop(s, header, text, func(ctx context.Context, out func(E)) (R, error) {
		l := &s.live
		return t.run(ctx, snoopScope{Pid: l.Pid, Cgroup: l.Cgroup, Comms: s.comms, Duration: l.Duration}, out)
	})
	return cmd
}

// snoopSpec is a snoop tool's declaration for Register: a BPF tool the
// agent may run, smoke-tested for a second, refusing the command lines
// every snoop tool refuses and its own bad ones.
func snoopSpec(name string, newCmd func() *cobra.Command, event any, keys map[string]string, bad ...BadInput) Spec {
	return Spec{Name: name, Group: BPF, New: newCmd, JSON: []any{event}, Keys: keys, Remote: true,
		Smoke: []string{name, "-d", "1"}, BadInput: append(snoopBadInput(name), bad...)}
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
