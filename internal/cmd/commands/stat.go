package commands

import (
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/view/statview"
)

func newStatCmd() *cobra.Command {
	var s Stat
	cmd := cli.AcceptsCommand(cli.Doc("stat", &cobra.Command{}))
	f := cmd.Flags()
	s.Events.Add(f, "events to count (default task-clock, context-switches, … as perf stat)")
	s.Target.Add(f, "count")
	s.Target.AddCgroup(f, "count")
	f.IntVarP(&s.Repeat, "repeat", "r", 1, "run the command N times and show mean ± standard error")
	cli.MillisVarP(f, &s.Interval, "interval-print", "I", "print counts every interval: milliseconds (1000) or a duration (1s)")
	f.StringVarP(&s.Sep, "field-separator", "x", "", "CSV output with this separator")
	cli.AddJSONFlag(f, &s.JSON)
	cli.AddDurationFlag(f, &s.Duration, "counting")
	f.StringVarP(&s.Output, "output", "o", "", "write the counts to this file instead of stderr")
	cli.AtLeast(f, 1, "repeat")
	cli.AtLeast(f, 10*time.Millisecond, "interval-print")
	cmd.RunE = func(_ *cobra.Command, args []string) error { return s.Run(args) }
	return cmd
}

var _ = Register(Spec{Name: "stat", Group: Recording, New: newStatCmd, JSON: []any{statview.Doc{}, statview.Interval{}}, Remote: true, RunsCommand: true, Probes: true,
	BadInput: []BadInput{
		// A generated filter of 3,000 clauses: one short line, before the kernel's bare EINVAL.
		{Name: "stat_filter_too_long", Args: []string{"-e", "sched:sched_switch", "--filter", strings.Repeat("prev_pid == 12345 || ", 2999) + "prev_pid == 1", "-a", "-d", "1"},
			Code: 2, Want: `^sonde stat: --filter "prev_pid == 12345 \|\| .*"… \(62992 bytes, 3000 clauses\) is longer than the kernel takes \(\d+ bytes\): use fewer clauses.{0,80}\n$`},
	}})
