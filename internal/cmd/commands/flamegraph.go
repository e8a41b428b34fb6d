package commands

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/service/load"
	"github.com/sonde-dev/sonde/internal/view/flamegraph"
)

func newFlamegraphCmd() *cobra.Command {
	var (
		input, output, title, format string
		inverted, diffMode           bool
	)
	cmd := cli.Doc("flamegraph", &cobra.Command{})
	f := cmd.Flags()
	f.StringVarP(&input, "input", "i", "sonde.data", inputHelp+", or collapsed stacks")
	f.StringVarP(&output, "output", "o", "", "output file, - for stdout (default flame.html, or stdout for folded)")
	f.StringVar(&title, "title", "sonde flame graph", "title above the graph")
	f.BoolVar(&inverted, "inverted", false, "icicle graph: roots at the top")
	f.StringVar(&format, "format", "", "svg, html or folded (default from -o's extension)")
	f.BoolVar(&diffMode, "diff", false, "differential flame graph of BASE NEW: red grew, blue shrank")
	var minWidth flamegraph.MinWidth
	f.Var(&minWidth, "minwidth", "leave out of the drawing frames narrower than this: pixels (default 0.1, as FlameGraph) or a percentage of the total with % (0 draws all; folded output stays exact)")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		if diffMode && len(pos) != 2 {
			return cli.Usagef("--diff takes two inputs: BASE NEW")
		}
		if !diffMode && len(pos) > 0 {
			return cli.Usagef("unexpected argument %q (the input goes after -i)", pos[0])
		}
		var err error
		if format, err = flamegraph.FormatOf(format, output); err != nil {
			return cli.Usagef("--format %v", err)
		}
		o := flamegraph.Options{Title: title, Inverted: inverted, MinWidth: minWidth}
		var root *flamegraph.Node
		if diffMode {
			if format == "folded" {
				return cli.Usagef("--diff draws a graph: use -o FILE.svg or .html")
			}
			if root, o.Diff, o.Subtitle, err = load.FlameDiff(pos[0], pos[1]); err != nil {
				return err
			}
		} else if root, o.Subtitle, err = load.Flame(input, nil); err != nil {
			return err
		}
		switch {
		case output == "-":
			// As FlameGraph and inferno write theirs: to a pipe.
			output = ""
		case output == "" && format != "folded":
			output = "flame." + format
		}
		out, err := cli.Create(output)
		if err != nil {
			return err
		}
		if err := flamegraph.Write(out, root, format, o); err != nil {
			return out.Finish(fmt.Errorf("writing flame graph: %w", err))
		}
		if err := out.Close(); err != nil {
			return err
		}
		if output != "" && output != "-" {
			fmt.Fprintf(os.Stderr, "sonde: flame graph written to %s\n", output)
		}
		return nil
	}
	return cmd
}

var _ = Register(Spec{Name: "flamegraph", Group: Recording, New: newFlamegraphCmd})
