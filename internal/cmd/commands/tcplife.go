package commands

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/cmd/remote"
	"github.com/sonde-dev/sonde/internal/tools/tcplife"
)

// newTcplifeCmd is bcc's tcplife: one line per TCP session as it closes,
// with bytes each way and duration; JSON Lines with --json. No -G: the
// close mostly happens in softirq, outside the owner's cgroup.
func newTcplifeCmd() *cobra.Command {
	var o tcplife.Options
	var lports, rports []uint
	var ff familyFlags
	return snoopTool[tcplife.Session, *tcplife.Result]{
		name:  "tcplife",
		flags: snoopFlags{pid: "only sessions of this process", timeShort: "t"},
		own: func(f *pflag.FlagSet) func(*cobra.Command, []string) error {
			f.UintSliceVarP(&lports, "localport", "L", nil, "only these local ports (comma-separated)")
			f.UintSliceVarP(&rports, "remoteport", "D", nil, "only these remote ports (comma-separated)")
			ff.add(f)
			remote.MarkValues(f, "localport", "remoteport")
			return func(*cobra.Command, []string) (err error) {
				if o.Family, err = ff.family(); err != nil {
					return err
				}
				if o.LocalPorts, err = ports("-L/--localport", lports); err != nil {
					return err
				}
				o.RemotePorts, err = ports("-D/--remoteport", rports)
				return err
			}
		},
		header: tcplife.Header,
		text:   tcplife.Session.WriteText,
		run: func(ctx context.Context, sc snoopScope, out func(tcplife.Session)) (*tcplife.Result, error) {
			o.Pid, o.Comms, o.Duration = sc.Pid, sc.Comms, sc.Duration
			return tcplife.Run(ctx, o, out)
		},
	}.command()
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

var _ = Register(snoopSpec("tcplife", newTcplifeCmd, tcplife.Session{}, tcplife.Vocabulary,
	BadInput{Name: "tcplife_port_range", Args: []string{"-L", "70000"}, Code: 2, Want: `-L/--localport 70000: a port is 1 to 65535`},
	BadInput{Name: "tcplife_both_families", Args: []string{"-4", "-6"}, Code: 2, Want: `-4/--ipv4 and -6/--ipv6 conflict`},
))
