package commands

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/tools/latency"
	"github.com/sonde-dev/sonde/internal/tools/pairbpf"
	"github.com/sonde-dev/sonde/internal/view/latencyview"
)

// TraceLatency pairs live in the kernel with BPF, which also sees events
// that perf sampling misses in interrupt context.
func TraceLatency(r *latencyview.Report, lo latency.Options, tf cli.TargetFlags, args []string, d time.Duration, filter string) (*latency.Result, int, error) {
	t, err := tf.Resolve(args)
	if err != nil {
		return nil, 0, err
	}
	if len(t.Pids) > 1 || len(t.Tids) > 0 || len(t.CPUs) > 0 {
		return nil, 0, cli.Usagef("live latency takes one -p PID (or -a, or a command)")
	}
	if filter != "" {
		return nil, 0, cli.Usagef("--filter works on recordings (sonde record --filter, then latency -i)")
	}
	if err := bpfskel.CheckPrivileges(); err != nil {
		return nil, 0, err
	}
	o := pairbpf.Options{Key: lo.Key, Per: lo.Per, Events: lo.Events, Command: t.Command, Duration: d}
	if len(t.Pids) == 1 {
		o.Pid = t.Pids[0]
	}
	if o.Start, err = cli.Tracepoint(lo.Start); err != nil {
		return nil, 0, err
	}
	if o.End, err = cli.Tracepoint(lo.End); err != nil {
		return nil, 0, err
	}
	if cli.IsTerminal(2) && len(args) == 0 && d == 0 {
		fmt.Fprintf(os.Stderr, "sonde: tracing %s → %s, Ctrl-C to stop\n", lo.Start, lo.End)
	}
	var res *pairbpf.Result
	exit, err := t.Measure(context.Background(), func(ctx context.Context) (code int, err error) {
		if res, err = pairbpf.Run(ctx, o); err != nil {
			return 0, err
		}
		return res.ExitCode, nil
	})
	if err != nil {
		return nil, 0, err
	}
	r.Duration, r.Lost = res.Elapsed, res.Counters.Drops+res.Counters.Full
	r.Extra = fmt.Sprintf(", %d ends of other requests", res.Counters.Unmatched)
	res.Result.Unmatched = 0
	return res.Result, exit, nil
}
