package record

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sonde-dev/sonde/internal/collect/perf"
	"github.com/sonde-dev/sonde/internal/collect/procfs"
	"github.com/sonde-dev/sonde/internal/collect/runctl"
)

// openTarget opens the events on what the options name: a command, the
// whole system (-a, with or without a command), or processes or threads.
func (s *session) openTarget() error {
	switch o := s.o; {
	case len(o.Command) > 0 && !o.All:
		return s.openCommand()
	case o.All:
		return s.openSystemWide()
	case len(o.Pids) > 0 || len(o.Tids) > 0:
		return s.openThreads()
	}
	return fmt.Errorf("nothing to record: give a command, -p PID, -t TID or -a")
}

// openCommand starts the command held before its exec and opens the
// events on it, inherited by its threads and children and enabled at the
// exec, so the recording holds the command and not sonde's start-up.
func (s *session) openCommand() error {
	s.meta.Target = "command"
	child, err := runctl.StartChild(s.o.Command)
	if err != nil {
		return err
	}
	s.child = child
	pid := child.Cmd.Process.Pid
	if s.w != nil {
		s.w.ld.FollowTree(pid)
		s.w.preload(s.o.Command[0])
		if err := s.w.follow(pid); err != nil {
			return err
		}
	}
	return s.openEach(pid, true, true, false)
}

// openSystemWide opens the events on every CPU asked for, and names the
// processes already running.
func (s *session) openSystemWide() error {
	s.meta.Target = "system-wide"
	if s.o.CPUs != nil {
		s.meta.Target = "cpus " + cpuListString(s.cpus)
	}
	if s.o.Cgroup != nil {
		fd, err := s.o.Cgroup.OpenForPerf()
		if err != nil {
			return err
		}
		// The events hold the cgroup; its directory is not needed after.
		defer unix.Close(fd)
		s.cgroupFD = fd
		s.meta.Target = "cgroup " + s.o.Cgroup.Path
	}
	if err := s.openEach(-1, false, false, false); err != nil {
		return err
	}
	pids, _ := procfs.Pids()
	for _, p := range pids {
		s.b.Synthesize(p)
	}
	if len(s.o.Command) > 0 {
		// perf's `-a -- CMD`: system-wide for as long as CMD runs.
		child, err := runctl.StartChild(s.o.Command)
		if err != nil {
			return err
		}
		s.child = child
	}
	return nil
}

// openThreads opens the events on each thread of -p's processes (which
// follow the threads and children they create) or on -t's threads.
func (s *session) openThreads() error {
	type tgt struct{ pid, tid int }
	var targets []tgt
	for _, p := range s.o.Pids {
		tids, err := procfs.Threads(p)
		if err != nil {
			return err
		}
		for _, t := range tids {
			targets = append(targets, tgt{p, t})
		}
		s.b.Synthesize(p)
	}
	for _, t := range s.o.Tids {
		p, err := procfs.TGID(t)
		if err != nil {
			return err
		}
		targets = append(targets, tgt{p, t})
		s.b.Synthesize(p)
	}
	if len(s.o.Pids) > 0 {
		s.meta.Target = "pid " + joinInts(s.o.Pids)
	} else {
		s.meta.Target = "tid " + joinInts(s.o.Tids)
	}
	inherit := len(s.o.Pids) > 0 // follow threads and children they create
	for _, t := range targets {
		if s.w != nil {
			if err := s.w.follow(t.pid); err != nil {
				return err
			}
		}
		// A thread may exit between the listing and its open.
		if err := s.openEach(t.tid, inherit, false, true); err != nil {
			return err
		}
	}
	if len(s.rings) == 0 {
		return fmt.Errorf("no such process: %s", s.meta.Target)
	}
	return nil
}

// openEach opens every event on every CPU for pid (-1: all). With
// skipGone, an event the kernel refuses because the thread has exited
// meanwhile is skipped.
func (s *session) openEach(pid int, inherit, onExec, skipGone bool) error {
	for _, c := range s.cpus {
		for i := range s.o.Events {
			err := s.openEvent(s.attr(i, inherit, onExec), pid, c, i)
			if err != nil && !(skipGone && strings.Contains(err.Error(), "no such process")) {
				return err
			}
		}
	}
	return nil
}

// attr builds event i's attributes; side-band records come from the
// first event only, so each mmap and comm arrives once.
func (s *session) attr(i int, inherit, onExec bool) unix.PerfEventAttr {
	info := s.meta.Events[i]
	a := perf.NewAttr(perf.AttrOptions{
		Event: s.o.Events[i].Event, Freq: info.Freq, Period: info.Period, Callchain: s.o.Callchain,
		SideBand: i == 0, BuildID: true, Raw: s.raw, Inherit: inherit, EnableOnExec: onExec, Disabled: true,
	})
	// Every event starts disabled, as perf's do: a command's at its exec,
	// the others once the walker's program is attached to each and its
	// outputs are in every ring (session.enable). Enabled at open, the
	// first events sampled while the later ones were still being opened:
	// samples without the walker's program, or whose walked stack's record
	// had no output event yet to go to (about 70 of 120,000 in a 60 s
	// record -a -g at 999 Hz, counted as lost_unwritten).
	s.onExec = onExec
	if s.w != nil {
		// The kernel's chain stops at the user boundary: the walker
		// adds the user part.
		a.Bits |= unix.PerfBitExcludeCallchainUser
	}
	return a
}

// openEvent opens event ev for pid on cpu. The first event on a CPU gets
// the ring; the others write into it, so one ring per CPU holds its
// records in time order.
func (s *session) openEvent(attr unix.PerfEventAttr, pid, cpu, ev int) error {
	var fd int
	var err error
	if pid == -1 && s.cgroupFD > 0 {
		fd, err = perf.OpenCgroup(&attr, s.cgroupFD, cpu, s.o.Events[ev].Event)
	} else {
		fd, err = perf.Open(&attr, pid, cpu, -1, s.o.Events[ev].Event)
	}
	if err != nil {
		return err
	}
	if err := s.setupEvent(fd, ev); err != nil {
		unix.Close(fd)
		return err
	}
	if r, ok := s.rings[cpu]; ok {
		if err := perf.SetOutput(fd, r.FD); err != nil {
			unix.Close(fd)
			return fmt.Errorf("sharing ring on cpu %d: %w", cpu, err)
		}
		s.fds = append(s.fds, fd)
		return nil
	}
	r, err := perf.NewRing(fd, cpu, s.o.RingPages)
	if err != nil {
		unix.Close(fd)
		return err
	}
	s.rings[cpu] = r
	return nil
}

// setupEvent notes event ev's fd (its id names the event of each sample),
// attaches the walker and sets the tracepoint filter; the caller closes
// fd on an error.
func (s *session) setupEvent(fd, ev int) error {
	e := s.o.Events[ev]
	id, err := perf.ID(fd)
	if err != nil {
		return fmt.Errorf("reading event id: %w", err)
	}
	s.idToEvent[id] = uint16(ev)
	if _, ok := s.tpFD[ev]; !ok && e.Tracepoint() {
		s.tpFD[ev] = fd
	}
	if s.w != nil {
		if err := s.w.attach(fd, e); err != nil {
			return err
		}
	}
	f := s.o.Filters[ev]
	if f == "" {
		return nil
	}
	if err := perf.SetFilter(fd, f); err != nil {
		var fields []string
		if e.Format != nil {
			fields = e.Format.Names()
		}
		return perf.FilterError(f, e.String(), fields, err)
	}
	return nil
}
