package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/sonde-dev/sonde/internal/collect/runctl"

	"github.com/spf13/pflag"

	"github.com/sonde-dev/sonde/internal/collect/cgroup"
	"github.com/sonde-dev/sonde/internal/collect/perf"
	"github.com/sonde-dev/sonde/internal/collect/procfs"
)

// TargetFlags are perf's target options: -a/--all-cpus, -p/--pid,
// -t/--tid and -C/--cpu. Add defines them; Resolve checks them.
type TargetFlags struct {
	all                      bool
	pids, tids, cpus, cgroup string
}

// Add defines the options; verb says what the command does to the target
// ("record", "count").
func (f *TargetFlags) Add(fs *pflag.FlagSet, verb string) {
	fs.BoolVarP(&f.all, "all-cpus", "a", false, verb+" the whole system, on all CPUs")
	fs.StringVarP(&f.pids, "pid", "p", "", verb+" existing processes (comma-separated pids), with the threads they start")
	fs.StringVarP(&f.tids, "tid", "t", "", verb+" existing threads (comma-separated tids)")
	fs.StringVarP(&f.cpus, "cpu", "C", "", "only these CPUs (e.g. 0-1,3); without -p or -t it means -a on them")
}

// AddCgroup defines -G/--cgroup, for the commands that can follow a
// cgroup's tasks.
func (f *TargetFlags) AddCgroup(fs *pflag.FlagSet, verb string) {
	fs.StringVarP(&f.cgroup, "cgroup", "G", "", verb+" only the tasks of this cgroup and its children (a path in the cgroup hierarchy, as perf -G takes it); implies -a")
}

// Target is what a command measures.
type Target struct {
	All              bool
	Pids, Tids, CPUs []int
	// Command is run and measured (with All: run while the whole system
	// is measured).
	Command []string
	// Alongside is run but not measured: the measurement of Pids or Tids
	// ends when it exits (`record -p PID sleep 5`, as perf does).
	Alongside []string
	// Cgroup (-G, with All): only the tasks of this cgroup.
	Cgroup *cgroup.Target
}

// Empty reports whether nothing was chosen.
func (t Target) Empty() bool {
	return !t.All && len(t.Pids) == 0 && len(t.Tids) == 0 && len(t.Command) == 0
}

// String names the target as perf stat does.
func (t Target) String() string {
	switch {
	case len(t.Command) > 0 && !t.All:
		return "'" + strings.Join(t.Command, " ") + "'"
	case len(t.Pids) > 0:
		return "process id '" + JoinInts(t.Pids) + "'"
	case len(t.Tids) > 0:
		return "thread id '" + JoinInts(t.Tids) + "'"
	}
	return "system wide"
}

// Resolve checks the options against each other and takes args (the words
// after the options) as the command to run.
func (f *TargetFlags) Resolve(args []string) (Target, error) {
	var t Target
	var err error
	if t.Pids, err = ParseIDs(f.pids, "-p/--pid"); err != nil {
		return t, err
	}
	if t.Tids, err = ParseIDs(f.tids, "-t/--tid"); err != nil {
		return t, err
	}
	var chosen []string
	for _, c := range []struct {
		set  bool
		name string
	}{{f.all || f.cgroup != "", "-a/--all-cpus"}, {len(t.Pids) > 0, "-p/--pid"}, {len(t.Tids) > 0, "-t/--tid"}} {
		if c.set {
			chosen = append(chosen, c.name)
		}
	}
	if len(chosen) > 1 {
		return t, Usagef("%s and %s conflict: choose one target", chosen[0], chosen[1])
	}
	if err := procfs.CheckPids(t.Pids); err != nil {
		return t, err
	}
	for _, id := range t.Tids {
		if err := procfs.CheckTid(id); err != nil {
			return t, err
		}
	}
	t.All = f.all
	if f.cgroup != "" {
		if t.Cgroup, err = ResolveCgroup(f.cgroup); err != nil {
			return t, err
		}
		t.All = true
	}
	if f.cpus != "" {
		if t.CPUs, err = perf.ParseCPUList(f.cpus); err != nil {
			return t, Usagef("-C/--cpu: %v", err)
		}
		online, _ := perf.OnlineCPUs()
		for _, c := range t.CPUs {
			if !slices.Contains(online, c) {
				return t, Usagef("-C/--cpu: cpu %d is not online (online: %s)", c, JoinInts(online))
			}
		}
		t.All = t.All || len(t.Pids)+len(t.Tids) == 0
	}
	if len(args) > 0 {
		if _, err := exec.LookPath(args[0]); err != nil {
			return t, fmt.Errorf("command not found: %s", args[0])
		}
		if len(t.Pids)+len(t.Tids) > 0 {
			t.Alongside = args
		} else {
			t.Command = args
		}
	}
	return t, nil
}

// ResolveCgroup finds the cgroup -G/--cgroup names.
func ResolveCgroup(name string) (*cgroup.Target, error) {
	hs, err := cgroup.Mounts()
	if err != nil {
		return nil, err
	}
	cg, err := cgroup.Resolve(name, hs)
	if err != nil {
		return nil, Usagef("-G/--cgroup: %v", err)
	}
	return &cg, nil
}

// CheckPid is the pid check of the commands that follow whole processes
// and have no -t (the live BPF tools): procfs.CheckPid's rule, as record
// and stat apply it through Resolve, with a thread's process named as the
// fix.
func CheckPid(pid int) error {
	err := procfs.CheckPid(pid)
	if errors.Is(err, procfs.ErrNotProcess) {
		if f, ferr := os.Open(fmt.Sprintf("/proc/%d/status", pid)); ferr == nil {
			st, serr := procfs.ParseStatus(f)
			f.Close()
			if serr == nil {
				return fmt.Errorf("pid %d (%s) %w: give its process, -p %d", pid, st.Name, procfs.ErrNotProcess, st.Tgid)
			}
		}
	}
	return err
}

// StartAlongside runs t.Alongside, if any, with sonde's standard streams.
// The returned context ends when it exits; wait returns its exit status.
// Without one, ctx is returned as is and wait returns 0.
func (t Target) StartAlongside(ctx context.Context) (_ context.Context, wait func() int, _ error) {
	if len(t.Alongside) == 0 {
		return ctx, func() int { return 0 }, nil
	}
	c := exec.Command(t.Alongside[0], t.Alongside[1:]...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := c.Start(); err != nil {
		return nil, nil, fmt.Errorf("starting %s: %w", t.Alongside[0], err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = c.Wait()
		// done first: whoever sees ctx end on the command's exit finds
		// it ended by itself.
		close(done)
		cancel()
	}()
	return ctx, func() int {
		select {
		case <-done:
			// It ended on its own: its status, shell style (128+signal
			// when a signal it did not get from sonde ended it).
			return runctl.ExitCode(waitErr, c.ProcessState)
		default:
		}
		// The measurement ended first (its targets exited, a duration):
		// sonde stops the command, as perf does, and that is no failure
		// of it, so it passes on no status.
		c.Process.Signal(os.Interrupt)
		<-done
		return 0
	}, nil
}

// Measure runs measure while the Alongside command, if any, runs, and
// returns the exit status sonde passes on: the measured command's (as
// measure returns it) when there is one, else the Alongside command's.
// Ctrl-C, SIGTERM and SIGHUP end the measurement (runctl.WithSignals).
func (t Target) Measure(ctx context.Context, measure func(context.Context) (int, error)) (int, error) {
	return t.MeasureReady(ctx, func(ctx context.Context, ready func() error) (int, error) {
		if err := ready(); err != nil {
			return 0, err
		}
		return measure(ctx)
	})
}

// MeasureReady is Measure for a measurement that takes a while to set up
// (loading BPF programs): the Alongside command starts only when measure
// calls ready, once its events are open, as perf starts `sleep N` after
// its own setup, so the measurement covers the whole of it. The context
// ends when the Alongside command exits.
func (t Target) MeasureReady(ctx context.Context, measure func(ctx context.Context, ready func() error) (int, error)) (int, error) {
	ctx, stop := runctl.WithSignals(ctx)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wait := func() int { return 0 }
	started := false
	ready := func() error {
		if started {
			return nil
		}
		started = true
		actx, w, err := t.StartAlongside(ctx)
		if err != nil {
			return err
		}
		wait = w
		context.AfterFunc(actx, cancel)
		return nil
	}
	code, err := measure(ctx, ready)
	if alongside := wait(); len(t.Command) == 0 {
		code = alongside
	}
	return code, err
}
