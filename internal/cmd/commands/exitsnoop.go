package commands

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sonde-dev/sonde/internal/cmd/remote"
	"github.com/sonde-dev/sonde/internal/tools/exitsnoop"
)

// newExitsnoopCmd is bcc's exitsnoop: one line per process exit, with its
// age and exit code or signal; JSON Lines with --json.
func newExitsnoopCmd() *cobra.Command {
	var o exitsnoop.Options
	return snoopTool[exitsnoop.Exit, *exitsnoop.Result]{
		name:  "exitsnoop",
		flags: snoopFlags{pid: "only exits of this process", timeShort: "t", cgroup: true},
		own: func(f *pflag.FlagSet) func(*cobra.Command, []string) error {
			f.BoolVarP(&o.Failed, "failed", "x", false, "only exits with a non-zero code or a signal")
			f.BoolVar(&o.PerThread, "per-thread", false, "every thread's exit, not only the process's")
			remote.MarkValues(f, "failed")
			return nil
		},
		header: exitsnoop.Header,
		text:   exitsnoop.Exit.WriteText,
		run: func(ctx context.Context, sc snoopScope, out func(exitsnoop.Exit)) (*exitsnoop.Result, error) {
			o.Cgroup, o.Pid, o.Comms, o.Duration = sc.Cgroup, sc.Pid, sc.Comms, sc.Duration
			return exitsnoop.Run(ctx, o, out)
		},
	}.command()
}

var _ = Register(snoopSpec("exitsnoop", newExitsnoopCmd, exitsnoop.Exit{}, exitsnoop.Vocabulary,
	BadInput{Name: "exitsnoop_cgroup_missing", Args: []string{"-G", "/sys/fs/cgroup/no-such-cgroup"}, Code: 2, Want: `-G/--cgroup: no such cgroup "/sys/fs/cgroup/no-such-cgroup"`},
	BadInput{Name: "exitsnoop_cgroup_not_cgroup", Args: []string{"-G", "/tmp"}, Code: 2, Want: `-G/--cgroup: no such cgroup "/tmp"`},
))
