package commands

import (
	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/service/load"
	"github.com/sonde-dev/sonde/internal/view/annotate"
)

func newAnnotateCmd() *cobra.Command {
	var (
		input, sym            string
		top                   int
		noSource, raw, asJSON bool
	)
	cmd := cli.Doc("annotate", &cobra.Command{
		Args: cobra.MaximumNArgs(1),
	})
	f := cmd.Flags()
	f.StringVarP(&input, "input", "i", "sonde.data", inputHelp)
	f.StringVarP(&sym, "symbol", "s", "", "annotate this function (default: the hottest ones); also the positional SYMBOL")
	f.IntVar(&top, "top", 3, "how many hot functions without a symbol")
	cli.AtLeast(f, 1, "top")
	f.Bool("stdio", true, "plain text (the only mode; accepted for perf compatibility)")
	f.BoolVar(&noSource, "no-source", false, "no source lines")
	f.BoolVar(&raw, "asm-raw", false, "show instruction bytes")
	cli.AddJSONFlag(f, &asJSON)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 1 {
			if sym != "" {
				return cli.Usagef("give the symbol once: -s %s or %s", sym, args[0])
			}
			sym = args[0] // perf annotate SYMBOL
		}
		p, err := load.Profile(input, load.Options{Group: true})
		if err != nil {
			return err
		}
		o := annotate.Options{Symbol: sym, Top: top, NoSource: noSource, AsmRaw: raw}
		funcs, err := annotate.Build(p, o)
		if err != nil {
			return err
		}
		return cli.WriteStdout(asJSON, func(w *cli.Output) error { return annotate.WriteJSON(w, funcs) },
			func(w *cli.Output) { annotate.WriteText(w, p, funcs, o) })
	}
	return cmd
}

var _ = Register(Spec{Name: "annotate", Group: Recording, New: newAnnotateCmd, JSON: []any{[]annotate.Func{}}})
