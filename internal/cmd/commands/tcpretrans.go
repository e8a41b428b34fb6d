package commands

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/cmd/remote"
	"github.com/sonde-dev/sonde/internal/tools/tcpretrans"
)

// newTcpretransCmd is bcc's tcpretrans: one line per retransmit, or with
// -c the retransmits per connection at the end. No -p, -G or --comm:
// retransmits are sent from timers and softirq, outside any process.
func newTcpretransCmd() *cobra.Command {
	s := &snoop{}
	var o tcpretrans.Options
	var count, v4, v6 bool
	cmd := s.command("tcpretrans", snoopFlags{timeShort: "t", noComm: true})
	f := cmd.Flags()
	f.BoolVarP(&count, "count", "c", false, "count retransmits per connection, printed at the end")
	f.BoolVarP(&v4, "ipv4", "4", false, "only IPv4")
	f.BoolVarP(&v6, "ipv6", "6", false, "only IPv6")
	remote.MarkValues(f, "ipv4", "ipv6")
	s.live.Check = func(*cobra.Command, []string) error {
		if v4 && v6 {
			return cli.Usagef("-4/--ipv4 and -6/--ipv6 conflict: leave both out for both")
		}
		o.Family = map[bool]int{true: 4}[v4] + map[bool]int{true: 6}[v6]
		return nil
	}
	header := func(w io.Writer) { tcpretrans.Header(w, s.timestamps, count) }
	text := func(w io.Writer, r tcpretrans.Retransmit) { r.WriteText(w, s.timestamps) }
	cmd.RunE = runSnoop(s, header, text, func(ctx context.Context, out func(tcpretrans.Retransmit)) (*tcpretrans.Result, error) {
		o.Duration = s.live.Duration
		if !count {
			return tcpretrans.Run(ctx, o, out)
		}
		var c tcpretrans.Counter
		res, err := tcpretrans.Run(ctx, o, c.Add)
		for _, flow := range c.Flows() {
			out(flow)
		}
		return res, err
	})
	return cmd
}

var _ = Register(Spec{Name: "tcpretrans", Group: BPF, New: newTcpretransCmd, JSON: []any{tcpretrans.Retransmit{}}, Keys: tcpretrans.Vocabulary, Remote: true,
	Smoke: []string{"tcpretrans", "-d", "1"},
	BadInput: append(snoopBadInput("tcpretrans"),
		BadInput{Name: "tcpretrans_pid", Args: []string{"-p", "1"}, Code: 2, Want: `unknown shorthand flag: 'p'`},
	)})
