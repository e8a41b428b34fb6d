package commands

import (
	"cmp"
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/tools/bio"
	"github.com/sonde-dev/sonde/internal/view/dist"
	"github.com/sonde-dev/sonde/internal/view/emit"
)

func newBiolatCmd() *cobra.Command {
	l := &cli.Live{DurationArg: true, Dist: true, Cgroups: true}
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
		o := bio.Options{Duration: l.Duration, Cgroup: l.Cgroup}
		if perDisk {
			o.Per = "dev"
		}
		res, err := bio.Run(ctx, list, o)
		if err != nil {
			return err
		}
		return l.W.Final(dist.NewBlockIO(l.DistOptions, list, res))
	})
	return cmd
}

func newBiosnoopCmd() *cobra.Command {
	l := &cli.Live{DurationArg: true}
	var comm string
	cmd := l.Command(cli.Doc("biosnoop", &cobra.Command{}), "only I/O submitted by this process")
	cmd.Flags().StringVar(&comm, "comm", "", "only I/O submitted by processes with this name")
	cmd.RunE = l.RunE("tracing block I/O", func(ctx context.Context, _ string, _ []string) error {
		return runBiosnoop(ctx, bio.Filter{Pid: l.Pid, Comm: comm}, l.Duration, l.W)
	})
	return cmd
}

// runBiosnoop runs bio.Snoop and writes each request to w as it completes,
// flushed at once, as JSON Lines or as text between a header and a footer.
func runBiosnoop(ctx context.Context, f bio.Filter, duration time.Duration, w *emit.Writer) error {
	if !w.JSON {
		bio.SnoopHeader(w)
		w.Flush()
	}
	var werr error
	res, err := bio.Snoop(ctx, f, duration, func(x bio.IO) {
		if w.JSON {
			werr = cmp.Or(werr, x.WriteJSON(w))
		} else {
			x.WriteText(w)
		}
		werr = cmp.Or(werr, w.Flush())
	})
	if err != nil {
		return err
	}
	if !w.JSON {
		res.WriteFooter(w)
	}
	return cmp.Or(werr, w.Flush())
}

var _ = Register(Spec{Name: "biolat", Group: BPF, New: newBiolatCmd, JSON: []any{dist.BlockIO{}}, Remote: true})
var _ = Register(Spec{Name: "biosnoop", Page: "biolat.md", Group: BPF, New: newBiosnoopCmd, JSON: []any{bio.IO{}}, Remote: true})
