package commands

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/cmd/remote"
	"github.com/sonde-dev/sonde/internal/tools/irqs"
	"github.com/sonde-dev/sonde/internal/view/dist"
)

// newIrqsCmd is bcc's hardirqs (soft: softirqs): time per interrupt
// handler or softirq vector, counts with -C, distributions with -D (bcc's
// -d, which is sonde's duration).
func newIrqsCmd(name string, soft bool) func() *cobra.Command {
	return func() *cobra.Command {
		l := &cli.Live{Intervals: true, DurationArg: true, Dist: true}
		var counts, distOn bool
		cmd := l.Command(cli.Doc(name, &cobra.Command{}), "")
		f := cmd.Flags()
		f.BoolVarP(&counts, "count", "C", false, "show counts instead of time")
		f.BoolVarP(&distOn, "dist", "D", false, "show a distribution of each one's run times")
		cli.Conflicting(f, "count", "dist", "the distributions show the counts too")
		remote.MarkValues(f, "dist")
		what := "tracing hard interrupt time"
		if soft {
			what = "tracing softirq time"
		}
		cmd.RunE = l.RunE(what, func(ctx context.Context, tgt string, _ []string) error {
			do := l.DistOptions
			o := irqs.Options{Soft: soft, Dist: distOn, Duration: l.Duration, Interval: l.Interval}
			o.OnInterval = func(x []irqs.Irq) {
				l.W.Interval(dist.NewIrqTime(do, tgt, soft, counts, irqRuns(x), 0, 0, l.Lap()))
			}
			res, err := irqs.Run(ctx, o)
			if err != nil {
				return err
			}
			return l.W.Final(dist.NewIrqTime(do, tgt, soft, counts, irqRuns(res.Irqs), res.Unknown, res.LostMap, l.Span(res.Elapsed)))
		})
		return cmd
	}
}

// irqRuns hands the tool's interrupts to the view.
func irqRuns(x []irqs.Irq) []dist.IrqRun {
	out := make([]dist.IrqRun, 0, len(x))
	for _, i := range x {
		out = append(out, dist.IrqRun{Irq: i.Irq, Name: i.Name, Count: i.Count, TotalNS: i.SumNS, Hist: i.Hist})
	}
	return out
}

// irqKeys are hardirqs' and softirqs' JSON keys beyond the vocabulary.
var irqKeys = map[string]string{
	"irqs":                 "hardirqs, softirqs: one row per interrupt handler or softirq vector",
	"irq":                  "hardirqs: the irq number; softirqs: the vector",
	"begun_before_tracing": "runs under way when tracing began, not counted (cpudist: runs or waits; hardirqs, softirqs: handler runs)",
}

var _ = Register(Spec{Name: "hardirqs", Group: BPF, New: newIrqsCmd("hardirqs", false), JSON: []any{dist.IrqTime{}}, Keys: irqKeys, Remote: true,
	Smoke: []string{"hardirqs", "-d", "1"},
	BadInput: []BadInput{
		{Name: "hardirqs_count_dist", Args: []string{"-C", "-D"}, Code: 2, Want: `conflict`},
		{Name: "hardirqs_zero_duration", Args: []string{"-d", "0"}, Code: 2, Want: `-d/--duration 0s: want a positive duration`},
	}})

var _ = Register(Spec{Name: "softirqs", Group: BPF, New: newIrqsCmd("softirqs", true), JSON: []any{dist.IrqTime{}}, Keys: irqKeys, Remote: true,
	Smoke: []string{"softirqs", "-d", "1"},
	BadInput: []BadInput{
		{Name: "softirqs_bad_unit", Args: []string{"-u", "hours"}, Code: 2, Want: `-u/--unit`},
	}})
