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

// familyFlags are -4/--ipv4 and -6/--ipv6, which the TCP tools share.
type familyFlags struct{ v4, v6 bool }

func (ff *familyFlags) add(f *pflag.FlagSet) {
	f.BoolVarP(&ff.v4, "ipv4", "4", false, "only IPv4")
	f.BoolVarP(&ff.v6, "ipv6", "6", false, "only IPv6")
	remote.MarkValues(f, "ipv4", "ipv6")
}

// family is the tools' Family: 4 or 6 for only that one, 0 for both.
func (ff *familyFlags) family() (int, error) {
	if ff.v4 && ff.v6 {
		return 0, cli.Usagef("-4/--ipv4 and -6/--ipv6 conflict: leave both out for both")
	}
	return map[bool]int{true: 4}[ff.v4] + map[bool]int{true: 6}[ff.v6], nil
}

// tcpFlags are what tcpconnect and tcpaccept share besides the snoop
// flags: -P ports, -4/-6, -U.
type tcpFlags struct {
	ports []uint
	familyFlags
}

func (t *tcpFlags) add(f *pflag.FlagSet, c *tcpconn.Columns, portUsage string) {
	f.UintSliceVarP(&t.ports, "port", "P", nil, portUsage)
	t.familyFlags.add(f)
	f.BoolVarP(&c.UID, "print-uid", "U", false, "print the user id")
	remote.MarkValues(f, "port", "print-uid")
}

// check fills o from the flags.
func (t *tcpFlags) check(o *tcpconn.Options) func(*cobra.Command, []string) error {
	return func(*cobra.Command, []string) (err error) {
		if o.Family, err = t.family(); err != nil {
			return err
		}
		o.Ports, err = ports("-P/--port", t.ports)
		return err
	}
}

// tcpconnCmd is tcpconnect's and tcpaccept's command: the snoop flags,
// tcpFlags, the tool's own flags (more, nil for none), its header and run.
func tcpconnCmd(name, pidUsage, portUsage string, header func(io.Writer, tcpconn.Columns),
	more func(*pflag.FlagSet, *tcpconn.Options, *tcpconn.Columns),
	run func(context.Context, tcpconn.Options, func(tcpconn.Conn)) (*tcpconn.Result, error)) *cobra.Command {
	var o tcpconn.Options
	var c tcpconn.Columns
	var t tcpFlags
	return snoopTool[tcpconn.Conn, *tcpconn.Result]{
		name:  name,
		flags: snoopFlags{pid: pidUsage, timeShort: "t", cgroup: true},
		own: func(f *pflag.FlagSet) func(*cobra.Command, []string) error {
			t.add(f, &c, portUsage)
			if more != nil {
				more(f, &o, &c)
			}
			return t.check(&o)
		},
		header: func(w io.Writer, timestamps bool) { c.Time = timestamps; header(w, c) },
		text:   func(x tcpconn.Conn, w io.Writer, _ bool) { x.WriteText(w, c) },
		run: func(ctx context.Context, sc snoopScope, out func(tcpconn.Conn)) (*tcpconn.Result, error) {
			o.Cgroup, o.Pid, o.Comms, o.Duration = sc.Cgroup, sc.Pid, sc.Comms, sc.Duration
			return run(ctx, o, out)
		},
	}.command()
}

// newTcpconnectCmd is bcc's tcpconnect with tcpconnlat's latency: one line
// per connection a process makes, when it is established or fails.
func newTcpconnectCmd() *cobra.Command {
	more := func(f *pflag.FlagSet, o *tcpconn.Options, c *tcpconn.Columns) {
		f.BoolVarP(&c.LPort, "lport", "L", false, "print the local port")
		f.BoolVar(&o.Failed, "failed", false, "only connections that failed")
		remote.MarkValues(f, "lport", "failed")
	}
	return tcpconnCmd("tcpconnect", "only connections of this process", "only connections to these remote ports (comma-separated)",
		tcpconn.ConnectHeader, more, tcpconn.Connects)
}

var _ = Register(snoopSpec("tcpconnect", newTcpconnectCmd, tcpconn.Conn{}, tcpconn.Vocabulary,
	BadInput{Name: "tcpconnect_port_range", Args: []string{"-P", "0"}, Code: 2, Want: `-P/--port 0: a port is 1 to 65535`},
	BadInput{Name: "tcpconnect_both_families", Args: []string{"-4", "-6"}, Code: 2, Want: `-4/--ipv4 and -6/--ipv6 conflict`},
))
