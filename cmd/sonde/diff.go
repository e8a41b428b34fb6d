package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cli"
	"github.com/sonde-dev/sonde/internal/diff"
	"github.com/sonde-dev/sonde/internal/load"
	"github.com/sonde-dev/sonde/internal/model"
)

func newDiffCmd() *cobra.Command {
	var (
		sortKeys string
		minPct   float64
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:     "diff [flags] BASE NEW",
		Short:   "compare two data files per symbol, as perf diff does",
		Example: "  sonde diff before.data after.data\n  sonde diff before.data after.data --min 1 -s sym",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usagef("give two data files: BASE NEW")
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&sortKeys, "sort", "s", "dso,sym", "compare by dso, sym or both")
	f.Float64Var(&minPct, "min", 0, "hide entries below this percent in both profiles")
	addJSONFlag(f, &asJSON)
	cmd.RunE = func(cmd *cobra.Command, files []string) error {
		keys := splitList(sortKeys)
		for _, k := range keys {
			if k != "dso" && k != "sym" {
				return usagef("-s/--sort %q: want dso, sym or dso,sym", sortKeys)
			}
		}
		var profs [2]*model.Profile
		for i := range profs {
			p, err := load.Profile(files[i], load.Options{Group: true})
			if err != nil {
				return err
			}
			profs[i] = p
		}
		if !load.SameEvents(profs[0].Meta.Event, profs[1].Meta.Event) {
			fmt.Fprintf(os.Stderr, "sonde: warning: comparing different events (%s vs %s)\n", profs[0].Meta.Event, profs[1].Meta.Event)
		}
		rows := diff.Compare(profs[0], profs[1], diff.Options{Sort: keys, Min: minPct})
		out := cli.Stdout()
		if asJSON {
			return out.Finish(diff.WriteJSON(out, rows))
		}
		diff.WriteText(out, profs[0], profs[1], rows)
		return out.Finish(nil)
	}
	return cmd
}
