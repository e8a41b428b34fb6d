package commands

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/cmd/remote"
	"github.com/sonde-dev/sonde/internal/tools/tcplife"
)

// newTcplifeCmd is bcc's tcplife: one line per TCP session as it closes,
// with bytes each way and duration; JSON Lines with --json. No -G: the
// close mostly happens in softirq, outside the owner's cgroup.
func newTcplifeCmd() *cobra.Command {
	s := &snoop{}
	var o tcplife.Options
	var lports, rports []uint
	var v4, v6 bool
	cmd := s.command("tcplife", snoopFlags{pid: "only sessions of this process", timeShort: "t"})
	f := cmd.Flags()
	f.UintSliceVarP(&lports, "localport", "L", nil, "only these local ports (comma-separated)")
	f.UintSliceVarP(&rports, "remoteport", "D", nil, "only these remote ports (comma-separated)")
	f.BoolVarP(&v4, "ipv4", "4", false, "only IPv4")
	f.BoolVarP(&v6, "ipv6", "6", false, "only IPv6")
	remote.MarkValues(f, "localport", "remoteport", "ipv4", "ipv6")
	s.live.Check = func(*cobra.Command, []string) (err error) {
		if v4 && v6 {
			return cli.Usagef("-4/--ipv4 and -6/--ipv6 conflict: leave both out for both")
		}
		o.Family = map[bool]int{true: 4}[v4] + map[bool]int{true: 6}[v6]
		if o.LocalPorts, err = ports("-L/--localport", lports); err != nil {
			return err
		}
		o.RemotePorts, err = ports("-D/--remoteport", rports)
		return err
	}
	header := func(w io.Writer) { tcplife.Header(w, s.timestamps) }
	text := func(w io.Writer, x tcplife.Session) { x.WriteText(w, s.timestamps) }
	cmd.RunE = runSnoop(s, header, text, func(ctx context.Context, out func(tcplife.Session)) (*tcplife.Result, error) {
		o.Pid, o.Comms, o.Duration = s.live.Pid, s.comms, s.live.Duration
		return tcplife.Run(ctx, o, out)
	})
	return cmd
}

// ports checks port numbers of a flag.
func ports(flag string, ps []uint) ([]uint16, error) {
	var out []uint16
	for _, p := range ps {
		if p == 0 || p > 65535 {
			return nil, cli.Usagef("%s %d: a port is 1 to 65535", flag, p)
		}
		out = append(out, uint16(p))
	}
	return out, nil
}

var _ = Register(Spec{Name: "tcplife", Group: BPF, New: newTcplifeCmd, JSON: []any{tcplife.Session{}}, Keys: tcplife.Vocabulary, Remote: true,
	Smoke: []string{"tcplife", "-d", "1"},
	BadInput: append(snoopBadInput("tcplife"),
		BadInput{Name: "tcplife_port_range", Args: []string{"-L", "70000"}, Code: 2, Want: `-L/--localport 70000: a port is 1 to 65535`},
		BadInput{Name: "tcplife_both_families", Args: []string{"-4", "-6"}, Code: 2, Want: `-4/--ipv4 and -6/--ipv6 conflict`},
	)})
