package commands

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/cmd/remote"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/tools/stackcount"
	"github.com/sonde-dev/sonde/internal/view/emit"
	"github.com/sonde-dev/sonde/internal/view/stackprof"
)

// newStackcountCmd is bcc's stackcount: the stacks reaching tracepoints or
// user functions, counted in the kernel; events as arguments (bcc's
// habit) or with -e.
func newStackcountCmd() *cobra.Command {
	l := &cli.Live{}
	o := stackcount.Options{Version: version}
	var events []string
	var sf cli.Stacks
	cmd := l.Command(cli.Doc("stackcount", &cobra.Command{}), "count only this process's stacks")
	f := cmd.Flags()
	f.StringArrayVarP(&events, "event", "e", nil, "a tracepoint (group:name, globs) or u:BINARY:FUNCTION; repeatable")
	sf.Add(f, "hits")
	remote.MarkValues(f, "event")
	l.Check = func(_ *cobra.Command, args []string) error {
		o.Events = append(append([]string(nil), events...), args...)
		if len(o.Events) == 0 {
			return cli.Usagef("no event: name a tracepoint (sched:sched_switch) or a user function (u:/bin/bash:readline)")
		}
		if _, err := stackcount.Hooks(o.Events, 0); err != nil {
			return cli.Usagef("%v", err)
		}
		return sf.Check()
	}
	cmd.RunE = l.RunE("counting stacks", func(ctx context.Context, tgt string, _ []string) error {
		o.Pid, o.PerThread, o.User, o.Kernel, o.Duration = l.Pid, sf.PerThread, !sf.Kernel, !sf.User, l.Duration
		o.NoLines = sf.Output == ""
		return cli.RunStacks(l, &sf, cli.Stacked[*stackcount.Result]{Title: "sonde stackcount",
			Run: func(func(*stackcount.Result)) (*stackcount.Result, error) {
				r, err := stackcount.Run(ctx, o)
				if err == nil {
					// --comm before any output is formed, so every output agrees.
					r.Profile = r.Profile.Only(sf.Tasks())
				}
				return r, err
			},
			Report: func(r *stackcount.Result) emit.Report {
				rep := stackprof.New(r.Profile, stackprof.Errors{KernelStack: r.Errors.StackFailures, LostMapFull: r.Errors.MapFull}, tgt)
				rep.Run.Command = "stackcount"
				rep.UserStacks = sf.UserOf(&r.Stacks)
				return rep
			},
			Profile: func(r *stackcount.Result) (*model.Profile, string) {
				return r.Profile, fmt.Sprintf("%d hits", r.Hits)
			},
		})
	})
	return cmd
}

var _ = Register(Spec{Name: "stackcount", Group: BPF, New: newStackcountCmd, JSON: []any{stackprof.Report{}}, Remote: true, Probes: true,
	Smoke: []string{"stackcount", "-d", "1", "sched:sched_switch"},
	BadInput: []BadInput{
		{Name: "stackcount_no_event", Args: []string{"-d", "1"}, Code: 2, Want: `no event`},
		{Name: "stackcount_bad_event", Args: []string{"nosuchgroup:nosuchevent"}, Code: 2, Want: `no such tracepoint`},
		{Name: "stackcount_bad_uprobe", Args: []string{"u:/bin/true"}, Code: 2, Want: `u:BINARY:FUNCTION`},
	}})
