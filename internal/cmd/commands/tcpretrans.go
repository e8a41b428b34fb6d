package commands

import (
	"context"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sonde-dev/sonde/internal/tools/tcpretrans"
)

// newTcpretransCmd is bcc's tcpretrans: one line per retransmit, or with
// -c the retransmits per connection at the end. No -p, -G or --comm:
// retransmits are sent from timers and softirq, outside any process.
func newTcpretransCmd() *cobra.Command {
	var o tcpretrans.Options
	var count bool
	var ff familyFlags
	return snoopTool[tcpretrans.Retransmit, *tcpretrans.Result]{
		name:  "tcpretrans",
		flags: snoopFlags{timeShort: "t", noComm: true},
		own: func(f *pflag.FlagSet) func(*cobra.Command, []string) error {
			f.BoolVarP(&count, "count", "c", false, "count retransmits per connection, printed at the end")
			ff.add(f)
			return func(*cobra.Command, []string) (err error) {
				o.Family, err = ff.family()
				return err
			}
		},
		header: func(w io.Writer, timestamps bool) { tcpretrans.Header(w, timestamps, count) },
		text:   tcpretrans.Retransmit.WriteText,
		run: func(ctx context.Context, sc snoopScope, out func(tcpretrans.Retransmit)) (*tcpretrans.Result, error) {
			o.Duration = sc.Duration
			if !count {
				return tcpretrans.Run(ctx, o, out)
			}
			var c tcpretrans.Counter
			res, err := tcpretrans.Run(ctx, o, c.Add)
			for _, flow := range c.Flows() {
				out(flow)
			}
			return res, err
		},
	}.command()
}

var _ = Register(snoopSpec("tcpretrans", newTcpretransCmd, tcpretrans.Retransmit{}, tcpretrans.Vocabulary,
	BadInput{Name: "tcpretrans_pid", Args: []string{"-p", "1"}, Code: 2, Want: `unknown shorthand flag: 'p'`},
))
