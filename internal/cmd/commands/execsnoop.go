package commands

import (
	"cmp"
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/cmd/remote"
	"github.com/sonde-dev/sonde/internal/tools/execsnoop"
)

// newExecsnoopCmd is bcc's execsnoop: one line per exec as it returns,
// JSON Lines with --json; the counts and losses end the text on stdout
// (on stderr with --json, whose lines are execs only).
func newExecsnoopCmd() *cobra.Command {
	l := &cli.Live{}
	var o execsnoop.Options
	var timestamps bool
	cmd := l.Command(cli.Doc("execsnoop", &cobra.Command{Args: cobra.NoArgs}), "")
	f := cmd.Flags()
	f.BoolVarP(&o.Fails, "fails", "x", false, "include execs that failed (with their errno)")
	f.BoolVarP(&timestamps, "timestamp", "t", false, "print the time (seconds since boot) first")
	f.StringSliceVar(&o.Comms, "comm", nil, "only execs whose new command name is one of these (comma-separated)")
	remote.MarkValues(f, "fails", "timestamp")
	cmd.RunE = l.RunE("", func(ctx context.Context, _ string, _ []string) error {
		o.Duration = l.Duration
		w := l.W
		if !l.JSON {
			execsnoop.Header(w, timestamps)
			w.Flush()
		}
		var werr error
		res, err := execsnoop.Run(ctx, o, func(x execsnoop.Exec) {
			if l.JSON {
				werr = cmp.Or(werr, x.WriteJSON(w))
			} else {
				x.WriteText(w, timestamps)
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
	return cmd
}

var _ = Register(Spec{Name: "execsnoop", Group: BPF, New: newExecsnoopCmd, JSON: []any{execsnoop.Exec{}}, Keys: execsnoop.Vocabulary, Remote: true,
	Smoke: []string{"execsnoop", "-d", "1"},
	BadInput: []BadInput{
		{Name: "execsnoop_argument", Args: []string{"now"}, Code: 2, Want: `unknown command "now"|unexpected argument`},
		{Name: "execsnoop_zero_duration", Args: []string{"-d", "0"}, Code: 2, Want: `-d/--duration 0s: want a positive duration`},
	}})
