package commands

import (
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/format/perfdata"
	"github.com/sonde-dev/sonde/internal/service/load"
)

// inputHelp describes -i for every view: they all open inputs through
// internal/service/load.
const inputHelp = "recording to read: a sonde data file, perf.data or perf script text (- for standard input)"

func newImportCmd() *cobra.Command {
	var (
		output string
		po     perfdata.Options
		quiet  bool
	)
	cmd := cli.Doc("import", &cobra.Command{
		Args: cli.ExactArgs(1, "give one file to import: sonde import perf.data -o FILE"),
	})
	f := cmd.Flags()
	f.StringVarP(&output, "output", "o", "sonde.data", "sonde data file to write (- for standard output)")
	cli.FileOutputs(f, "output")
	f.StringVar(&po.SymFS, "symfs", "", "look for objects under this directory (a copy of the recording machine's files), as perf report --symfs")
	f.StringVar(&po.BuildIDDir, "buildid-dir", "", "perf's build-id cache (default $PERF_BUILDID_DIR, else ~/.debug)")
	f.StringVarP(&po.Kallsyms, "kallsyms", "k", "", "kallsyms of the recorded kernel (default: this machine's, if it is the same kernel)")
	f.StringVar(&po.DebugDir, "debug-dir", "", "separate debug files (default /usr/lib/debug)")
	f.BoolVarP(&quiet, "quiet", "q", false, "no summary line")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		var summary io.Writer = os.Stderr
		if quiet {
			summary = nil
		}
		return load.ImportFile(args[0], output, load.Options{Perf: po}, summary)
	}
	return cmd
}

var _ = Register(Spec{Name: "import", Group: Recording, New: newImportCmd})
