package cli

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sonde-dev/sonde/internal/format/outfile"
)

// fileOutput marks a flag that names a file a command writes beside (or
// instead of) its report: a data file, a flame graph.
const fileOutput = "sonde_file_output"

// FileOutputs marks the named flags as files written beside the report,
// which take "-" for standard output (perf's -o -).
func FileOutputs(fs *pflag.FlagSet, names ...string) {
	for _, n := range names {
		fs.SetAnnotation(n, fileOutput, []string{"true"})
	}
}

// StdoutOutput is the file output of cmd given "-" ("" for none), once
// checked: one only, standard output not a terminal, and no --json or
// --folded wanting it too.
func StdoutOutput(cmd *cobra.Command) (string, error) {
	var name, shown string
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Annotations[fileOutput] == nil || f.Value.String() != outfile.Stdout {
			return
		}
		if name != "" {
			err = Usagef("%s - and %s -: only one file can go to standard output", shown, flagName(f))
		}
		name, shown = f.Name, flagName(f)
	})
	if err != nil || name == "" {
		return "", err
	}
	for _, other := range []string{"json", "folded"} {
		if f := cmd.Flags().Lookup(other); f != nil && f.Changed && f.Value.String() == "true" {
			return "", Usagef("%s - sends the file to standard output: %s has nowhere to go (write the file with %s FILE)", shown, flagName(f), shown)
		}
	}
	if outfile.StdoutIsTerminal() {
		return "", Usagef("%s -: standard output is a terminal; redirect it to a file or a pipe (| sonde report -i -)", shown)
	}
	return name, nil
}

// takeStdout gives standard output to the file written to "-", if any:
// what else the command prints goes to standard error (outfile.TakeStdout).
func takeStdout(cmd *cobra.Command) error {
	name, err := StdoutOutput(cmd)
	if err != nil || name == "" {
		return err
	}
	return outfile.TakeStdout()
}
