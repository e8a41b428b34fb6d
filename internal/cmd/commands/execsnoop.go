package commands

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sonde-dev/sonde/internal/cmd/remote"
	"github.com/sonde-dev/sonde/internal/tools/execsnoop"
)

// newExecsnoopCmd is bcc's execsnoop: one line per exec as it returns,
// JSON Lines with --json; the counts and losses end the text on stdout
// (on stderr with --json, whose lines are execs only).
func newExecsnoopCmd() *cobra.Command {
	var o execsnoop.Options
	return snoopTool[execsnoop.Exec, *execsnoop.Result]{
		name:  "execsnoop",
		flags: snoopFlags{timeShort: "t", comm: "only execs whose new command name is one of these (comma-separated)"},
		own: func(f *pflag.FlagSet) func(*cobra.Command, []string) error {
			f.BoolVarP(&o.Fails, "fails", "x", false, "include execs that failed (with their errno)")
			remote.MarkValues(f, "fails")
			return nil
		},
		header: execsnoop.Header,
		text:   execsnoop.Exec.WriteText,
		run: func(ctx context.Context, sc snoopScope, out func(execsnoop.Exec)) (*execsnoop.Result, error) {
			o.Comms, o.Duration = sc.Comms, sc.Duration
			return execsnoop.Run(ctx, o, out)
		},
	}.command()
}

var _ = Register(snoopSpec("execsnoop", newExecsnoopCmd, execsnoop.Exec{}, execsnoop.Vocabulary))
