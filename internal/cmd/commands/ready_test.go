package commands

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// readyCases is how each measuring command is run by TestReadySignal:
// {ticker} is a program calling tick() 100 times a second, {pid} a
// process of it. Every command of the BPF group needs a case, so a new
// tool cannot go without its ready signal.
var readyCases = map[string][]string{
	"biolat":     {"biolat", "-d", "1"},
	"biosnoop":   {"biosnoop", "-d", "1"},
	"cpudist":    {"cpudist", "-d", "1"},
	"cputime":    {"cputime", "-d", "1"},
	"deadlock":   {"deadlock", "-p", "{pid}", "-d", "1"},
	"execsnoop":  {"execsnoop", "-d", "1"},
	"exitsnoop":  {"exitsnoop", "-d", "1"},
	"filetop":    {"filetop", "-d", "1"},
	"fileslower": {"fileslower", "-d", "1"},
	"funclat":    {"funclat", "-d", "1", "{ticker}:tick"},
	"hardirqs":   {"hardirqs", "-d", "1"},
	"softirqs":   {"softirqs", "-d", "1"},
	"listen":     {"listen", "udp://127.0.0.1:0"},
	"memleak":    {"memleak", "-p", "{pid}", "-d", "1"},
	"offcpu":     {"offcpu", "-d", "1"},
	"opensnoop":  {"opensnoop", "-d", "1"},
	"profile":    {"profile", "-d", "1"},
	"runqlat":    {"runqlat", "-d", "1"},
	"stackcount": {"stackcount", "-d", "1", "sched:sched_switch"},
	"syscount":   {"syscount", "-d", "1"},
	"tcpaccept":  {"tcpaccept", "-d", "1"},
	"tcpconnect": {"tcpconnect", "-d", "1"},
	"tcplife":    {"tcplife", "-d", "1"},
	"tcpretrans": {"tcpretrans", "-d", "1"},
	"top":        {"top", "-b", "1", "-i", "1"},
	"wakeup":     {"wakeup", "-d", "1"},
	"why":        {"why", "-d", "1"},
	// Commands of the recording group that measure.
	"record":  {"record", "-a", "-g", "-o", "{dir}/r.sonde", "--", "sleep", "1"},
	"stat":    {"stat", "-a", "--", "sleep", "1"},
	"latency": {"latency", "--start", "block:block_rq_issue", "--end", "block:block_rq_complete", "--key", "dev,sector", "-d", "1"},
	"ftrace":  {"ftrace", "record", "-o", "{dir}/f.sonde", "-d", "1", "-p", "{pid}"},
}

// TestReadySignal runs every measuring command with $NOTIFY_SOCKET set:
// each must send READY=1 (sd_notify's protocol, what tests and service
// managers wait for) and, when it does, hold its events open: BPF links
// or perf events (listen: its socket). Then it must end well.
func TestReadySignal(t *testing.T) {
	testutil.RequirePrivileged(t)
	_, ticker := testutil.Workload(t, "ticker", []string{"ticker.c"}, "-O1")
	tk := testutil.Start(t, ticker)
	for _, s := range Specs() {
		args, ok := readyCases[s.Name]
		if !ok {
			if s.Group == BPF {
				t.Errorf("%s: no case in readyCases", s.Name)
			}
			continue
		}
		t.Run(s.Name, func(t *testing.T) {
			dir := t.TempDir()
			r := strings.NewReplacer("{ticker}", ticker, "{pid}", fmt.Sprint(tk.Process.Pid), "{dir}", dir)
			a := make([]string, len(args))
			for i, v := range args {
				a[i] = r.Replace(v)
			}
			b := testutil.StartSondeReady(t, dir, a...)
			if s.Name != "listen" {
				if n := testutil.EventFDs(b.Cmd.Process.Pid); n == 0 {
					t.Errorf("sonde %s: ready with no BPF link or perf event open", strings.Join(a, " "))
				}
			}
			if s.Name == "listen" {
				b.Cmd.Process.Signal(os.Interrupt)
			}
			if err := b.Wait(); err != nil {
				t.Errorf("sonde %s: %v\n%s", strings.Join(a, " "), err, b.Stderr.String())
			}
		})
	}
}
