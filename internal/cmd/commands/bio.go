package commands

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/tools/bio"
)

func init() {
	Register(Spec{Name: "biolat", Group: BPF, New: newBiolatCmd, JSON: []any{bio.Latency{}}, Remote: true})
	Register(Spec{Name: "biosnoop", Page: "biolat.md", Group: BPF, New: newBiosnoopCmd, JSON: []any{bio.IO{}}, Remote: true})
}

func newBiolatCmd() *cobra.Command {
	l := &cli.Live{DurationArg: true, Dist: true}
	var queued, perDisk, stages bool
	cmd := l.Command(cli.Doc("biolat", &cobra.Command{}), "")
	cmd.Flags().BoolVarP(&queued, "queued", "Q", false, "include the time queued in the kernel (insert → complete)")
	cmd.Flags().BoolVarP(&perDisk, "disks", "D", false, "one distribution per disk")
	cmd.Flags().BoolVar(&stages, "stages", false, "split queued (insert → issue) from device (issue → complete) time")
	cmd.RunE = l.RunE("tracing block I/O latency", func(ctx context.Context, _ string, _ []string) error {
		list := []bio.Stage{bio.Device}
		switch {
		case stages:
			list = []bio.Stage{bio.Queued, bio.Device}
		case queued:
			list = []bio.Stage{bio.Total}
		}
		o := bio.Options{Duration: l.Duration}
		if perDisk {
			o.Per = "dev"
		}
		res, err := bio.Run(ctx, list, o)
		if err != nil {
			return err
		}
		return l.W.Final(bio.NewLatency(l.DistOptions, list, res))
	})
	return cmd
}

func newBiosnoopCmd() *cobra.Command {
	l := &cli.Live{DurationArg: true}
	var comm string
	cmd := l.Command(cli.Doc("biosnoop", &cobra.Command{}), "only I/O submitted by this process")
	cmd.Flags().StringVar(&comm, "comm", "", "only I/O submitted by processes with this name")
	cmd.RunE = l.RunE("tracing block I/O", func(ctx context.Context, _ string, _ []string) error {
		return bio.SnoopTo(ctx, bio.Filter{Pid: l.Pid, Comm: comm}, l.Duration, l.W)
	})
	return cmd
}
