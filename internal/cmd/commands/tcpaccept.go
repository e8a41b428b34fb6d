package commands

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/tools/tcpconn"
)

// newTcpacceptCmd is bcc's tcpaccept: one line per connection a process
// accepts, with the time it waited in the accept queue.
func newTcpacceptCmd() *cobra.Command {
	s := &snoop{}
	var o tcpconn.Options
	var c tcpconn.Columns
	var t tcpFlags
	cmd := s.command("tcpaccept", snoopFlags{pid: "only connections this process accepts", timeShort: "t", cgroup: true})
	t.add(cmd.Flags(), &c, "only connections to these local ports (comma-separated)")
	s.live.Check = t.check(s, &o)
	header := func(w io.Writer) { c.Time = s.timestamps; tcpconn.AcceptHeader(w, c) }
	text := func(w io.Writer, x tcpconn.Conn) { x.WriteText(w, c) }
	cmd.RunE = runSnoop(s, header, text, func(ctx context.Context, out func(tcpconn.Conn)) (*tcpconn.Result, error) {
		o.Cgroup, o.Pid, o.Comms, o.Duration = s.live.Cgroup, s.live.Pid, s.comms, s.live.Duration
		return tcpconn.Accepts(ctx, o, out)
	})
	return cmd
}

var _ = Register(Spec{Name: "tcpaccept", Group: BPF, New: newTcpacceptCmd, JSON: []any{tcpconn.Conn{}}, Keys: tcpconn.Vocabulary, Remote: true,
	Smoke: []string{"tcpaccept", "-d", "1"},
	BadInput: append(snoopBadInput("tcpaccept"),
		BadInput{Name: "tcpaccept_port_range", Args: []string{"-P", "65536"}, Code: 2, Want: `-P/--port 65536: a port is 1 to 65535`},
	)})
