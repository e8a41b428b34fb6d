// Package stat counts events (perf stat): counters opened per task or per
// CPU, read with their enabled/running times so multiplexed counts are
// scaled, optionally every interval, for a command, processes, threads or
// the whole system.
package stat

import (
	"context"
	"errors"
	"fmt"
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
	var ctrs []counter
	closeAll := func() {
		for _, c := range ctrs {
			unix.Close(c.fd)
		}
	}
	var child *runctl.Child
	type target struct{ pid, cpu int }
	var targets []target
	inherit, onExec := false, false
	switch {
	case len(o.Command) > 0 && !o.All:
		var err error
		if child, err = runctl.StartChild(o.Command); err != nil {
			return nil, err
		}
		targets = []target{{child.Cmd.Process.Pid, -1}}
		inherit, onExec = true, true
	case o.All:
		for _, c := range cpus {
			targets = append(targets, target{-1, c})
		}
	case len(o.Pids) > 0 || len(o.Tids) > 0:
		for _, p := range o.Pids {
			tids, err := procfs.Threads(p)
			if err != nil {
				return nil, err
			}
			for _, t := range tids {
				targets = append(targets, target{t, -1})
			}
		}
		for _, t := range o.Tids {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", t)); err != nil {
				return nil, fmt.Errorf("no such thread: %d", t)
			}
			targets = append(targets, target{t, -1})
		}
		inherit = len(o.Pids) > 0
	default:
		return nil, fmt.Errorf("nothing to count: give a command, -p PID, -t TID or -a")
	}
	if o.All && len(o.Command) > 0 {
		var err error
		if child, err = runctl.StartChild(o.Command); err != nil {
			return nil, err
		}
	}
	fail := func(err error) (*Result, error) {
		if child != nil {
			child.Abort()
		}
		closeAll()
		return nil, err
	}
	for i, s := range o.Specs {
		attr := perf.NewAttr(perf.AttrOptions{Event: s.Event, Counting: true, Inherit: inherit, EnableOnExec: onExec, Disabled: onExec})
		for _, t := range targets {
			a := attr
			fd, err := perf.Open(&a, t.pid, t.cpu, -1, s.Event)
			if err != nil {
				if s.Def.Kind != perf.KindSoftware && s.Def.Kind != perf.KindTracepoint && notSupported(err) {
					res.Counts[i].Supported = false
					res.Counts[i].Reason = "no usable hardware PMU"
					break
				}
				return fail(err)
			}
			if f := o.Filters[i]; f != "" {
				if err := perf.SetFilter(fd, f); err != nil {
					unix.Close(fd)
					return fail(fmt.Errorf("bad filter %q for %s: the kernel rejected it (fields: %v)", f, s.String(), s.Format.Names()))
				}
			}
			ctrs = append(ctrs, counter{spec: i, fd: fd})
		}
	}
	defer closeAll()

	start := time.Now()
	done := make(chan struct{})
	var waitErr error
	if child != nil {
		if err := child.Go(); err != nil {
			return fail(err)
		}
		go func() { waitErr = child.Cmd.Wait(); close(done) }()
	}
	if child == nil && len(o.Pids)+len(o.Tids) > 0 {
		// Like perf stat -p: stop when every target has exited.
		go func() {
			for {
				time.Sleep(50 * time.Millisecond)
				alive := false
				for _, p := range append(append([]int(nil), o.Pids...), o.Tids...) {
					if _, err := os.Stat(fmt.Sprintf("/proc/%d", p)); err == nil && !zombie(p) {
						alive = true
					}
				}
				if !alive {
					close(done)
					return
				}
			}
		}()
	}
	clock := runctl.NewClock(o.Duration, o.Interval)
	defer clock.Stop()
	prev := make([]Count, len(res.Counts))
	copy(prev, res.Counts)
	// The caller's context ends the count (runctl.WithSignals: Ctrl-C,
	// SIGTERM). A counted command is asked to stop and counted to its end,
	// as perf stat does (Ctrl-C on a terminal reaches it as well).
	cancelled := ctx.Done()
loop:
	for {
		select {
		case <-cancelled:
			if child == nil {
				break loop
			}
			child.Cmd.Process.Signal(syscall.SIGTERM)
			cancelled = nil
		case <-done:
			break loop
		case <-clock.Deadline:
			if child != nil {
				child.Cmd.Process.Signal(syscall.SIGTERM)
				continue
			}
			break loop
		case <-clock.Tick:
			cur := readAll(ctrs, res.Counts)
			if o.OnInterval != nil {
				o.OnInterval(time.Since(start), delta(cur, prev))
			}
			prev = cur
		}
	}
	res.Elapsed = time.Since(start)
	if child != nil {
		<-done
		res.ExitCode = runctl.ExitCode(waitErr, child.Cmd.ProcessState)
		if st := child.Cmd.ProcessState; st != nil {
			res.User, res.Sys = st.UserTime(), st.SystemTime()
		}
	}
	res.Counts = readAll(ctrs, res.Counts)
	if o.Interval > 0 && o.OnInterval != nil {
		if d := delta(res.Counts, prev); anyCounted(d) {
			o.OnInterval(res.Elapsed, d)
		}
	}
	return res, nil
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
