package commands

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/service/load"
	"github.com/sonde-dev/sonde/internal/view/script"
)

func newScriptCmd() *cobra.Command {
	var (
		input, fieldList string
		asJSON           bool
	)
	cmd := cli.Doc("script", &cobra.Command{
		Args: cobra.NoArgs,
	})
	f := cmd.Flags()
	f.StringVarP(&input, "input", "i", "sonde.data", inputHelp)
	f.StringVarP(&fieldList, "fields", "F", "", "fields to print, comma-separated (default all the recording has): comm,pid,tid,cpu,time,event,period,trace,ip,sym,dso")
	cli.AddJSONFlag(f, &asJSON)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		fields, err := script.ParseFields(cli.SplitList(fieldList))
		if err != nil {
			return cli.Usagef("-F/--fields: %v", err)
		}
		p, err := load.Profile(input, load.Options{})
		if err != nil {
			return err
		}
		out := cli.Stdout()
		if err := out.Finish(script.Write(out, p, fields, asJSON)); err != nil {
			return err
		}
		if p.Meta.Lost > 0 {
			fmt.Fprintf(os.Stderr, "sonde: %d samples were lost while recording\n", p.Meta.Lost)
		}
		return nil
	}
	return cmd
}

var _ = Register(Spec{Name: "script", Group: Recording, New: newScriptCmd, JSON: []any{script.Event{}}})
