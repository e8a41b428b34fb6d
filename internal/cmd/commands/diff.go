package commands

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/service/load"
	"github.com/sonde-dev/sonde/internal/view/diff"
)

func newDiffCmd() *cobra.Command {
	var (
		sortKeys string
		minPct   float64
		asJSON   bool
		text     diff.TextOptions
	)
	cmd := cli.Doc("diff", &cobra.Command{
		Args: cli.ExactArgs(2, "give two data files: BASE NEW"),
	})
	f := cmd.Flags()
	f.StringVarP(&sortKeys, "sort", "s", "dso,sym", "compare by dso, sym or both")
	cli.Choices(f, "sort", true, "dso", "sym")
	f.Float64Var(&minPct, "min", 0, "hide entries below this percent in both profiles")
	cli.Between(f, "min", 0.0, 100.0)
	f.BoolVarP(&text.Samples, "show-nr-samples", "n", false, "add each profile's sample count to every row")
	f.BoolVar(&text.Period, "period", false, "add each profile's event count (period; ns for the clock events) to every row, as perf diff --period")
	cli.AddJSONFlag(f, &asJSON)
	cmd.RunE = func(cmd *cobra.Command, files []string) error {
		keys := cli.SplitList(sortKeys)
		for _, k := range keys {
			if k != "dso" && k != "sym" {
				return cli.Usagef("-s/--sort %q: want dso, sym or dso,sym", sortKeys)
			}
		}
		base, cur, err := load.ForDiff(files[0], files[1], os.Stderr)
		if err != nil {
			return err
		}
		rows := diff.Compare(base, cur, diff.Options{Sort: keys, Min: minPct})
		return cli.WriteStdout(asJSON, func(w *cli.Output) error { return diff.WriteJSON(w, rows) },
			func(w *cli.Output) { diff.WriteText(w, base, cur, rows, text) })
	}
	return cmd
}

var _ = Register(Spec{Name: "diff", Page: "annotate.md", Group: Recording, New: newDiffCmd, JSON: []any{[]diff.Row{}}})
