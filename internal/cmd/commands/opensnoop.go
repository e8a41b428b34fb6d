package commands

import (
	"context"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/cmd/remote"
	"github.com/sonde-dev/sonde/internal/tools/opensnoop"
)

// newOpensnoopCmd is bcc's opensnoop, with bcc's letters: -T for the time,
// -t for a thread, -U for the uid column, -x for failures, -e for the
// flags column; one line per open as it returns, JSON Lines with --json.
func newOpensnoopCmd() *cobra.Command {
	var o opensnoop.Options
	var c opensnoop.Columns
	return snoopTool[opensnoop.Open, *opensnoop.Result]{
		name:  "opensnoop",
		flags: snoopFlags{pid: "only opens of this process", timeShort: "T", cgroup: true},
		own: func(f *pflag.FlagSet) func(*cobra.Command, []string) error {
			f.IntVarP(&o.Tid, "tid", "t", 0, "only opens of this thread")
			cli.AtLeast(f, 1, "tid")
			f.BoolVarP(&o.Failed, "failed", "x", false, "only opens that failed")
			f.BoolVarP(&c.UID, "print-uid", "U", false, "print the user id")
			f.BoolVarP(&c.Flags, "extended", "e", false, "print the open flags (octal)")
			remote.MarkValues(f, "failed", "print-uid", "extended")
			return nil
		},
		header: func(w io.Writer, timestamps bool) { c.Time = timestamps; opensnoop.Header(w, c) },
		text:   func(x opensnoop.Open, w io.Writer, _ bool) { x.WriteText(w, c) },
		run: func(ctx context.Context, sc snoopScope, out func(opensnoop.Open)) (*opensnoop.Result, error) {
			o.Cgroup, o.Pid, o.Comms, o.Duration = sc.Cgroup, sc.Pid, sc.Comms, sc.Duration
			return opensnoop.Run(ctx, o, out)
		},
	}.command()
}

var _ = Register(snoopSpec("opensnoop", newOpensnoopCmd, opensnoop.Open{}, opensnoop.Vocabulary,
	BadInput{Name: "opensnoop_tid_zero", Args: []string{"-t", "0"}, Code: 2, Want: `-t/--tid`},
	BadInput{Name: "opensnoop_cgroup_missing", Args: []string{"-G", "no-such-cgroup"}, Code: 2, Want: `-G/--cgroup: no such cgroup "no-such-cgroup"`},
))
