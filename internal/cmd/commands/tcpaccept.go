package commands

import (
	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/tools/tcpconn"
)

// newTcpacceptCmd is bcc's tcpaccept: one line per connection a process
// accepts, with the time it waited in the accept queue.
func newTcpacceptCmd() *cobra.Command {
	return tcpconnCmd("tcpaccept", "only connections this process accepts", "only connections to these local ports (comma-separated)",
		tcpconn.AcceptHeader, nil, tcpconn.Accepts)
}

var _ = Register(snoopSpec("tcpaccept", newTcpacceptCmd, tcpconn.Conn{}, tcpconn.Vocabulary,
	BadInput{Name: "tcpaccept_port_range", Args: []string{"-P", "65536"}, Code: 2, Want: `-P/--port 65536: a port is 1 to 65535`},
))
