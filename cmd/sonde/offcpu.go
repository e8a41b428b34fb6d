package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/flamegraph"
	"github.com/sonde-dev/sonde/internal/offcpu"
	"github.com/sonde-dev/sonde/internal/view/blocked"
	"github.com/sonde-dev/sonde/internal/view/stackprof"
)

// newOffcpuCmd is offcpu, or with name "wakeup" the same tool following
// each block to the stack that ended it.
func newOffcpuCmd(name string) *cobra.Command {
	var (
		pid                int
		minBlock, maxBlock uint64
		state              string
		top                int
		asJSON             bool
		duration, interval time.Duration
		sf                 stackFlags
	)
	cmd := &cobra.Command{
		Use:   name + " [flags] [DURATION]",
		Short: "where threads block: blocked time per stack, summed in the kernel (BPF)",
		Long: "Sum the time threads spend off CPU per stack in the kernel, as bcc's offcputime does:\n" +
			"every sched_switch away from a thread starts a block, its switch back ends it.",
		Example: "  sonde offcpu 5\n  sonde offcpu -p 1234 -d 10 --state D\n  sonde offcpu -Kf 5 > blocked.folded",
	}
	if name == "wakeup" {
		cmd.Short = "blocked time per blocked stack and waker stack, as one chain (BPF)"
		cmd.Long = "Like offcpu, with the stack of the thread that woke the blocked one above a \"--\" frame,\n" +
			"as bcc's offwaketime shows them."
		cmd.Example = "  sonde wakeup 5\n  sonde wakeup -p 1234 -d 10 --flamegraph wake.html"
	}
	f := cmd.Flags()
	addPidFlag(f, &pid, "trace")
	f.Uint64VarP(&minBlock, "min-block", "m", 1, "ignore blocks shorter than this many microseconds")
	f.Uint64VarP(&maxBlock, "max-block", "M", 0, "ignore blocks longer than this many microseconds (0: no limit)")
	f.StringVar(&state, "state", "", "only blocks in these task states: S (sleeping), D (uninterruptible), R (preempted), T, I")
	f.IntVar(&top, "top", 20, "stacks to print")
	addStackFlags(f, &sf, "microseconds")
	addDurationFlag(f, &duration, "tracing")
	addIntervalFlag(f, &interval, 0, "print a report every interval (-o, --folded and --flamegraph then cover the last one)")
	addJSONFlag(f, &asJSON)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := durationArg(cmd, args, &duration); err != nil {
			return err
		}
		if err := checkInterval(interval, 100*time.Millisecond); err != nil {
			return err
		}
		if err := sf.check(); err != nil {
			return err
		}
		states, err := offcpu.ParseStates(state)
		if err != nil {
			return usagef("--state: %v", err)
		}
		tgt, err := pidTarget(pid)
		if err != nil {
			return err
		}
		o := offcpu.Options{Pid: pid, PerThread: sf.perThread, User: !sf.kernel, Kernel: !sf.user, Wakers: name == "wakeup",
			MinBlock: time.Duration(minBlock) * time.Microsecond, MaxBlock: time.Duration(maxBlock) * time.Microsecond,
			States: states, Duration: duration, Version: version, Interval: interval}
		w := stdout()
		vo := blocked.Options{Command: name, Target: tgt, Comms: splitList(sf.comm), Top: top}
		view := func(r *offcpu.Result) *blocked.Report {
			return blocked.New(r.Profile, r.Attach, blocked.Errors{StackFailures: r.Errors.StackFailures, LostMapFull: r.Errors.MapFull}, vo)
		}
		if interval > 0 && !sf.folded {
			o.OnInterval = func(r *offcpu.Result) { writeInterval(w, view(r), asJSON) }
		}
		progress("tracing off-CPU time, %s", forHow(duration))
		ctx, stop := interruptible()
		defer stop()
		res, err := offcpu.Run(ctx, o)
		if err != nil {
			return err
		}
		files := stackprof.Files{Data: sf.output, Flame: sf.flame, Title: "sonde " + name, What: "blocked time in µs"}
		if err := files.Write(res.Profile); err != nil {
			return err
		}
		if sf.folded {
			if err := flamegraph.WriteFolded(w, flamegraph.FromProfile(res.Profile)); err != nil {
				return err
			}
			return w.Flush()
		}
		return writeView(w, view(res), asJSON)
	}
	return cmd
}
