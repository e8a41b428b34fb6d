package commands

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/cmd/remote"
	"github.com/sonde-dev/sonde/internal/tools/opensnoop"
)

// newOpensnoopCmd is bcc's opensnoop, with bcc's letters: -T for the time,
// -t for a thread, -U for the uid column, -x for failures, -e for the
// flags column; one line per open as it returns, JSON Lines with --json.
func newOpensnoopCmd() *cobra.Command {
	s := &snoop{}
	var o opensnoop.Options
	var c opensnoop.Columns
	cmd := s.command("opensnoop", snoopFlags{pid: "only opens of this process", timeShort: "T", cgroup: true})
	f := cmd.Flags()
	f.IntVarP(&o.Tid, "tid", "t", 0, "only opens of this thread")
	cli.AtLeast(f, 1, "tid")
	f.BoolVarP(&o.Failed, "failed", "x", false, "only opens that failed")
	f.BoolVarP(&c.UID, "print-uid", "U", false, "print the user id")
	f.BoolVarP(&c.Flags, "extended", "e", false, "print the open flags (octal)")
	remote.MarkValues(f, "failed", "print-uid", "extended")
	header := func(w io.Writer) { c.Time = s.timestamps; opensnoop.Header(w, c) }
	text := func(w io.Writer, x opensnoop.Open) { x.WriteText(w, c) }
	cmd.RunE = runSnoop(s, header, text, func(ctx context.Context, out func(opensnoop.Open)) (*opensnoop.Result, error) {
		o.Cgroup, o.Pid, o.Comms, o.Duration = s.live.Cgroup, s.live.Pid, s.comms, s.live.Duration
		return opensnoop.Run(ctx, o, out)
	})
	return cmd
}

var _ = Register(Spec{Name: "opensnoop", Group: BPF, New: newOpensnoopCmd, JSON: []any{opensnoop.Open{}}, Keys: opensnoop.Vocabulary, Remote: true,
	Smoke: []string{"opensnoop", "-d", "1"},
	BadInput: append(snoopBadInput("opensnoop"),
		BadInput{Name: "opensnoop_tid_zero", Args: []string{"-t", "0"}, Code: 2, Want: `-t/--tid`},
		BadInput{Name: "opensnoop_cgroup_missing", Args: []string{"-G", "no-such-cgroup"}, Code: 2, Want: `-G/--cgroup: no such cgroup "no-such-cgroup"`},
	)})
