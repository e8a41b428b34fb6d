package commands

import (
	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"

	"github.com/sonde-dev/sonde/internal/service/web"
)

func newServeCmd() *cobra.Command {
	var inputs []string
	var o web.Options
	cmd := cli.Doc("serve", &cobra.Command{
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return web.Serve(inputs, o) },
	})
	f := cmd.Flags()
	f.StringArrayVarP(&inputs, "input", "i", nil, inputHelp+" (repeat for several; default sonde.data)")
	f.StringVar(&o.Addr, "addr", "127.0.0.1:0", "listen address (loopback unless you name another; port 0 picks one)")
	f.BoolVar(&o.Open, "open", false, "open the page in a browser (xdg-open)")
	f.StringVar(&o.Export, "export", "", "write one self-contained HTML file instead of serving (unfiltered views)")
	return cmd
}

var _ = Register(Spec{Name: "serve", Page: "web.md", Group: Recording, New: newServeCmd})
