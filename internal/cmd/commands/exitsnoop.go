package commands

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/remote"
	"github.com/sonde-dev/sonde/internal/tools/exitsnoop"
)

// newExitsnoopCmd is bcc's exitsnoop: one line per process exit, with its
// age and exit code or signal; JSON Lines with --json.
func newExitsnoopCmd() *cobra.Command {
	s := &snoop{}
	var o exitsnoop.Options
	cmd := s.command("exitsnoop", snoopFlags{pid: "only exits of this process", timeShort: "t", cgroup: true})
	f := cmd.Flags()
	f.BoolVarP(&o.Failed, "failed", "x", false, "only exits with a non-zero code or a signal")
	f.BoolVar(&o.PerThread, "per-thread", false, "every thread's exit, not only the process's")
	remote.MarkValues(f, "failed")
	header := func(w io.Writer) { exitsnoop.Header(w, s.timestamps) }
	text := func(w io.Writer, x exitsnoop.Exit) { x.WriteText(w, s.timestamps) }
	cmd.RunE = runSnoop(s, header, text, func(ctx context.Context, out func(exitsnoop.Exit)) (*exitsnoop.Result, error) {
		o.Cgroup, o.Pid, o.Comms, o.Duration = s.live.Cgroup, s.live.Pid, s.comms, s.live.Duration
		return exitsnoop.Run(ctx, o, out)
	})
	return cmd
}

var _ = Register(Spec{Name: "exitsnoop", Group: BPF, New: newExitsnoopCmd, JSON: []any{exitsnoop.Exit{}}, Keys: exitsnoop.Vocabulary, Remote: true,
	Smoke: []string{"exitsnoop", "-d", "1"},
	BadInput: append(snoopBadInput("exitsnoop"),
		BadInput{Name: "exitsnoop_cgroup_missing", Args: []string{"-G", "/sys/fs/cgroup/no-such-cgroup"}, Code: 2, Want: `-G/--cgroup: no such cgroup "/sys/fs/cgroup/no-such-cgroup"`},
		BadInput{Name: "exitsnoop_cgroup_not_cgroup", Args: []string{"-G", "/tmp"}, Code: 2, Want: `-G/--cgroup: no such cgroup "/tmp"`},
	)})
