package commands

import (
	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
)

func newRecordCmd() *cobra.Command {
	r := Record{Version: version}
	cmd := cli.AcceptsCommand(cli.Doc("record", &cobra.Command{}))
	f := cmd.Flags()
	r.Events.Add(f, "events to sample (default cpu-clock)")
	r.Sampling.Add(f)
	r.CallGraph.Add(f)
	r.Target.Add(f, "record")
	r.Target.AddCgroup(f, "record")
	cli.AddDurationFlag(f, &r.Duration, "recording")
	f.StringVarP(&r.Output, "output", "o", "sonde.data", "data file to write (- for standard output)")
	cli.FileOutputs(f, "output")
	f.IntVarP(&r.Pages, "mmap-pages", "m", 128, "ring buffer pages per CPU (a power of two)")
	f.BoolVarP(&r.Quiet, "quiet", "q", false, "no progress or summary on stderr")
	cli.AddNoInterpFlag(f, &r.NoInterp)
	cli.AtLeast(f, 1, "count", "mmap-pages")
	cmd.RunE = func(_ *cobra.Command, args []string) error { return r.Run(args) }
	return cmd
}

var _ = Register(Spec{Name: "record", Group: Recording, New: newRecordCmd, Remote: true, RunsCommand: true, Probes: true})
