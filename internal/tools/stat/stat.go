// Package stat counts events (perf stat): counters opened per task or per
// CPU, read with their enabled/running times so multiplexed counts are
// scaled, optionally every interval, for a command, processes, threads or
// the whole system.
package stat

import (
	"context"
	"errors"
	"fmt"
	"github.com/sonde-dev/sonde/internal/collect/cgroup"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sonde-dev/sonde/internal/collect/events"
	"github.com/sonde-dev/sonde/internal/collect/perf"
	"github.com/sonde-dev/sonde/internal/collect/procfs"
	"github.com/sonde-dev/sonde/internal/collect/runctl"
)

// Options configure one counting run.
type Options struct {
	Specs    []events.Spec
	Filters  map[int]string // spec index → tracepoint filter
	All      bool
	Cgroup   *cgroup.Target // with All: only its tasks (perf's cgroup mode)
	Pids     []int
	Tids     []int
	CPUs     []int
	Command  []string
	Interval time.Duration
	Duration time.Duration
	// OnInterval receives the counts of each interval (deltas).
	OnInterval func(elapsed time.Duration, counts []Count)
}

// Count is one event's total.
type Count struct {
	Event     string  `json:"event"`
	Kind      string  `json:"kind"`
	Value     float64 `json:"value"` // scaled for multiplexing
	Raw       uint64  `json:"raw"`
	Enabled   uint64  `json:"time_enabled_ns"`
	Running   uint64  `json:"time_running_ns"`
	Supported bool    `json:"supported"`
	Reason    string  `json:"reason,omitempty"`
}

// Counted says whether the event ran at all.
func (c Count) Counted() bool { return c.Supported && c.Running > 0 }

// Percent running, for multiplexed counters.
func (c Count) RunningPct() float64 {
	if c.Enabled == 0 {
		return 0
	}
	return 100 * float64(c.Running) / float64(c.Enabled)
}

// Result of one run.
type Result struct {
	Counts   []Count       `json:"counts"`
	Elapsed  time.Duration `json:"duration_ns"`
	User     time.Duration `json:"user_ns"`
	Sys      time.Duration `json:"sys_ns"`
	ExitCode int           `json:"exit_code"`
	CPUs     int           `json:"cpus"`
}

type counter struct {
	spec int
	fd   int
}

// Run counts until the command exits, the duration passes, or a signal.
func Run(ctx context.Context, o Options) (*Result, error) {
	cpus := o.CPUs
	if cpus == nil {
		var err error
		if cpus, err = perf.OnlineCPUs(); err != nil {
			return nil, err
		}
	}
	res := &Result{Counts: make([]Count, len(o.Specs)), CPUs: len(cpus)}
	for i, s := range o.Specs {
		res.Counts[i] = Count{Event: s.String(), Kind: s.Def.Kind.String(), Supported: true}
	}
	c := &session{o: o, res: res, done: make(chan struct{}), cgroupFD: -1}
	if o.Cgroup != nil {
		fd, err := o.Cgroup.OpenForPerf()
		if err != nil {
			return nil, err
		}
		c.cgroupFD = fd
		defer unix.Close(fd)
	}
	if err := c.setTargets(cpus); err != nil {
		return nil, err
	}
	if err := c.openAll(); err != nil {
		return c.fail(err)
	}
	defer c.closeAll()

	start := time.Now()
	if err := c.watch(); err != nil {
		return c.fail(err)
	}
	clock := runctl.NewClock(o.Duration, o.Interval)
	defer clock.Stop()
	prev := c.count(ctx, clock, start)
	res.Elapsed = time.Since(start)
	c.finish(prev)
	return res, nil
}

// session is one counting run: what it counts, the counters and the command
// it started.
type session struct {
	o               Options
	res             *Result
	targets         []target
	inherit, onExec bool // counters follow new tasks; and start at the command's exec
	ctrs            []counter
	cgroupFD        int // the cgroup's directory (-G), -1 without
	child           *runctl.Child
	done            chan struct{} // closed when the command, or every target, has exited
	waitErr         error         // the command's, once done is closed
}

// target is where a counter is opened: a task (cpu -1) or a CPU (pid -1).
type target struct{ pid, cpu int }

// setTargets chooses what to count and starts the command if there is one.
func (c *session) setTargets(cpus []int) error {
	o := &c.o
	switch {
	case len(o.Command) > 0 && !o.All:
		var err error
		if c.child, err = runctl.StartChild(o.Command); err != nil {
			return err
		}
		c.targets = []target{{c.child.Cmd.Process.Pid, -1}}
		c.inherit, c.onExec = true, true
	case o.All:
		for _, cpu := range cpus {
			c.targets = append(c.targets, target{-1, cpu})
		}
	case len(o.Pids) > 0 || len(o.Tids) > 0:
		for _, p := range o.Pids {
			tids, err := procfs.Threads(p)
			if err != nil {
				return err
			}
			for _, t := range tids {
				c.targets = append(c.targets, target{t, -1})
			}
		}
		for _, t := range o.Tids {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", t)); err != nil {
				return fmt.Errorf("no such thread: %d", t)
			}
			c.targets = append(c.targets, target{t, -1})
		}
		c.inherit = len(o.Pids) > 0
	default:
		return fmt.Errorf("nothing to count: give a command, -p PID, -t TID or -a")
	}
	if o.All && len(o.Command) > 0 {
		var err error
		if c.child, err = runctl.StartChild(o.Command); err != nil {
			return err
		}
	}
	return nil
}

// open opens one counter on t, or on t's CPU in the cgroup's mode.
func (c *session) open(a *unix.PerfEventAttr, t target, ev perf.Event) (int, error) {
	if c.cgroupFD >= 0 && t.pid == -1 {
		return perf.OpenCgroup(a, c.cgroupFD, t.cpu, ev)
	}
	return perf.Open(a, t.pid, t.cpu, -1, ev)
}

// openAll opens a counter for each spec and target. A hardware event the
// machine cannot count is marked unsupported instead of failing the run.
func (c *session) openAll() error {
	for i, s := range c.o.Specs {
		attr := perf.NewAttr(perf.AttrOptions{Event: s.Event, Counting: true, Inherit: c.inherit, EnableOnExec: c.onExec, Disabled: c.onExec})
		for _, t := range c.targets {
			a := attr
			fd, err := c.open(&a, t, s.Event)
			if err != nil {
				if s.Def.Kind != perf.KindSoftware && s.Def.Kind != perf.KindTracepoint && notSupported(err) {
					c.res.Counts[i].Supported = false
					c.res.Counts[i].Reason = "no usable hardware PMU"
					break
				}
				return err
			}
			if f := c.o.Filters[i]; f != "" {
				if err := perf.SetFilter(fd, f); err != nil {
					unix.Close(fd)
					var fields []string
					if s.Format != nil {
						fields = s.Format.Names()
					}
					return perf.FilterError(f, s.String(), fields, err)
				}
			}
			c.ctrs = append(c.ctrs, counter{spec: i, fd: fd})
		}
	}
	return nil
}

func (c *session) closeAll() {
	for _, ctr := range c.ctrs {
		unix.Close(ctr.fd)
	}
}

// fail stops the command, if one was started, and closes the counters.
func (c *session) fail(err error) (*Result, error) {
	if c.child != nil {
		c.child.Abort()
	}
	c.closeAll()
	return nil, err
}

// watch lets the command run, and arranges for done to close when it exits
// or, like perf stat -p, when every target has.
func (c *session) watch() error {
	if c.child != nil {
		if err := c.child.Go(); err != nil {
			return err
		}
		go func() { c.waitErr = c.child.Cmd.Wait(); close(c.done) }()
	}
	if c.child == nil && len(c.o.Pids)+len(c.o.Tids) > 0 {
		go c.pollTargets()
	}
	return nil
}

// pollTargets closes done once no target is alive.
func (c *session) pollTargets() {
	for {
		time.Sleep(50 * time.Millisecond)
		alive := false
		for _, p := range append(append([]int(nil), c.o.Pids...), c.o.Tids...) {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", p)); err == nil && !zombie(p) {
				alive = true
			}
		}
		if !alive {
			close(c.done)
			return
		}
	}
}

// count waits for the end of the count, passing each interval's counts to
// OnInterval, and returns the counts read at the last interval.
func (c *session) count(ctx context.Context, clock *runctl.Clock, start time.Time) []Count {
	prev := make([]Count, len(c.res.Counts))
	copy(prev, c.res.Counts)
	// The caller's context ends the count (runctl.WithSignals: Ctrl-C,
	// SIGTERM). A counted command is asked to stop and counted to its end,
	// as perf stat does (Ctrl-C on a terminal reaches it as well).
	cancelled := ctx.Done()
	for {
		select {
		case <-cancelled:
			if c.child == nil {
				return prev
			}
			c.child.Cmd.Process.Signal(syscall.SIGTERM)
			cancelled = nil
		case <-c.done:
			return prev
		case <-clock.Deadline:
			if c.child != nil {
				c.child.Cmd.Process.Signal(syscall.SIGTERM)
				continue
			}
			return prev
		case <-clock.Tick:
			cur := readAll(c.ctrs, c.res.Counts)
			if c.o.OnInterval != nil {
				c.o.OnInterval(time.Since(start), delta(cur, prev))
			}
			prev = cur
		}
	}
}

// finish waits for the command, then reads the totals and reports the last,
// partial interval if anything was counted in it.
func (c *session) finish(prev []Count) {
	res := c.res
	if c.child != nil {
		<-c.done
		res.ExitCode = runctl.ExitCode(c.waitErr, c.child.Cmd.ProcessState)
		if st := c.child.Cmd.ProcessState; st != nil {
			res.User, res.Sys = st.UserTime(), st.SystemTime()
		}
	}
	res.Counts = readAll(c.ctrs, res.Counts)
	if c.o.Interval > 0 && c.o.OnInterval != nil {
		if d := delta(res.Counts, prev); anyCounted(d) {
			c.o.OnInterval(res.Elapsed, d)
		}
	}
}

// zombie reports whether pid has exited but not been reaped.
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}

func anyCounted(c []Count) bool {
	for _, x := range c {
		if x.Raw > 0 {
			return true
		}
	}
	return false
}

func notSupported(err error) bool {
	var errno unix.Errno
	if errors.As(err, &errno) {
		return errno == unix.ENOENT || errno == unix.EOPNOTSUPP || errno == unix.ENODEV
	}
	// perf.OpenError already explained it.
	return true
}

// readAll sums every counter of each spec and scales for multiplexing.
func readAll(ctrs []counter, base []Count) []Count {
	out := make([]Count, len(base))
	for i, b := range base {
		out[i] = Count{Event: b.Event, Kind: b.Kind, Supported: b.Supported, Reason: b.Reason}
	}
	scaled := make([]float64, len(base))
	for _, c := range ctrs {
		v, err := perf.ReadCounter(c.fd)
		if err != nil {
			continue
		}
		o := &out[c.spec]
		o.Raw += v.Value
		o.Enabled += v.Enabled
		o.Running += v.Running
		if v.Running > 0 {
			scaled[c.spec] += float64(v.Value) * float64(v.Enabled) / float64(v.Running)
		}
	}
	for i := range out {
		out[i].Value = scaled[i]
	}
	return out
}

func delta(cur, prev []Count) []Count {
	out := make([]Count, len(cur))
	for i := range cur {
		out[i] = cur[i]
		out[i].Raw -= prev[i].Raw
		out[i].Enabled -= prev[i].Enabled
		out[i].Running -= prev[i].Running
		out[i].Value -= prev[i].Value
	}
	return out
}
