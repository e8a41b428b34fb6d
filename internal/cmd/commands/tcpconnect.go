package commands

import (
	"context"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/cmd/remote"
	"github.com/sonde-dev/sonde/internal/tools/tcpconn"
)

// tcpFlags are what tcpconnect and tcpaccept share besides the snoop
// flags: -P ports, -4/-6, -U.
type tcpFlags struct {
	ports  []uint
	v4, v6 bool
}

func (t *tcpFlags) add(f *pflag.FlagSet, c *tcpconn.Columns, portUsage string) {
	f.UintSliceVarP(&t.ports, "port", "P", nil, portUsage)
	f.BoolVarP(&t.v4, "ipv4", "4", false, "only IPv4")
	f.BoolVarP(&t.v6, "ipv6", "6", false, "only IPv6")
	f.BoolVarP(&c.UID, "print-uid", "U", false, "print the user id")
	remote.MarkValues(f, "port", "ipv4", "ipv6", "print-uid")
}

// check fills o from the flags after the snoop's own check, if any.
func (t *tcpFlags) check(s *snoop, o *tcpconn.Options) func(*cobra.Command, []string) error {
	prev := s.live.Check
	return func(cmd *cobra.Command, args []string) (err error) {
		if prev != nil {
			if err := prev(cmd, args); err != nil {
				return err
			}
		}
		if t.v4 && t.v6 {
			return cli.Usagef("-4/--ipv4 and -6/--ipv6 conflict: leave both out for both")
		}
		o.Family = map[bool]int{true: 4}[t.v4] + map[bool]int{true: 6}[t.v6]
		o.Ports, err = ports("-P/--port", t.ports)
		return err
	}
}

// newTcpconnectCmd is bcc's tcpconnect with tcpconnlat's latency: one line
// per connection a process makes, when it is established or fails.
func newTcpconnectCmd() *cobra.Command {
	s := &snoop{}
	var o tcpconn.Options
	var c tcpconn.Columns
	var t tcpFlags
	cmd := s.command("tcpconnect", snoopFlags{pid: "only connections of this process", timeShort: "t", cgroup: true})
	f := cmd.Flags()
	t.add(f, &c, "only connections to these remote ports (comma-separated)")
	f.BoolVarP(&c.LPort, "lport", "L", false, "print the local port")
	f.BoolVar(&o.Failed, "failed", false, "only connections that failed")
	remote.MarkValues(f, "lport", "failed")
	s.live.Check = t.check(s, &o)
	header := func(w io.Writer) { c.Time = s.timestamps; tcpconn.ConnectHeader(w, c) }
	text := func(w io.Writer, x tcpconn.Conn) { x.WriteText(w, c) }
	cmd.RunE = runSnoop(s, header, text, func(ctx context.Context, out func(tcpconn.Conn)) (*tcpconn.Result, error) {
		o.Cgroup, o.Pid, o.Comms, o.Duration = s.live.Cgroup, s.live.Pid, s.comms, s.live.Duration
		return tcpconn.Connects(ctx, o, out)
	})
	return cmd
}

var _ = Register(Spec{Name: "tcpconnect", Group: BPF, New: newTcpconnectCmd, JSON: []any{tcpconn.Conn{}}, Keys: tcpconn.Vocabulary, Remote: true,
	Smoke: []string{"tcpconnect", "-d", "1"},
	BadInput: append(snoopBadInput("tcpconnect"),
		BadInput{Name: "tcpconnect_port_range", Args: []string{"-P", "0"}, Code: 2, Want: `-P/--port 0: a port is 1 to 65535`},
		BadInput{Name: "tcpconnect_both_families", Args: []string{"-4", "-6"}, Code: 2, Want: `-4/--ipv4 and -6/--ipv6 conflict`},
	)})
