// Package why answers "why is this process slow?" in one run: where each
// thread's wall-clock time goes (on CPU, runnable, throttled, blocked by
// reason) and, for each wait, who ended it, followed from waker to waker
// to a root (CPU work, a sleep, a device, a peer, a cycle). One BPF
// program on the scheduler's tracepoints keeps a state machine per thread
// and sums blocked time per (blocked stack, waker stack, waker's last
// block) in the kernel; user space reads it once, names the stacks and
// ranks the findings by the share of the target's wall time they explain.
package why

import (
	"context"
	"fmt"
	"github.com/sonde-dev/sonde/internal/collect/cgroup"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/collect/procfs"
	"github.com/sonde-dev/sonde/internal/collect/runctl"
	"github.com/sonde-dev/sonde/internal/collect/syscalls"
	"github.com/sonde-dev/sonde/internal/collect/unwind"
)

// Options configure a run.
type Options struct {
	Pid int // 0: every process
	// Cgroup, when set, makes its tasks the target (with Pid 0: every
	// process of the cgroup and its children).
	Cgroup *cgroup.Target
	// Tid, when set, is the one target thread (-t); Pid is then its
	// process (ProcessOf), and its other threads count only as wakers.
	Tid      int
	Duration time.Duration
	// Command, when set, is run and traced (Pid must be 0).
	Command []string
	// Depth is how many hops from a target thread wakers are followed (0: 4).
	Depth int
	// User: walk user stacks (the findings name functions with them).
	User bool
	// OnStart and OnStop, when set, are called as the window opens and
	// closes, with its edge in CLOCK_MONOTONIC ns (tests read
	// /proc/TID/schedstat there).
	OnStart, OnStop func(ns uint64)
	// Slices, when not 0, asks for a timeline of every thread's state in
	// about this many slices of the window (--web draws it).
	Slices int
}

// Errors counted by the program (each counter tag names its member of
// enum why_error, bpfskel.Counters).
type Errors struct {
	StackFailures uint64 `json:"stack_failures" counter:"WHY_ERR_STACK"`
	MapFull       uint64 `json:"lost_map_full" counter:"WHY_ERR_FULL"`
	ThreadsFull   uint64 `json:"lost_threads" counter:"WHY_ERR_THREADS"`
	Unseen        uint64 `json:"unseen_switches" counter:"WHY_ERR_UNSEEN"`
	// SliceSamples is no error: on-CPU stacks taken inside slices longer
	// than 10 ms of runtime, besides the one where each slice ends.
	SliceSamples uint64 `json:"slice_samples" counter:"WHY_ERR_TICK"`
}

// Result of a run: the data, named, before the analysis.
type Result struct {
	Data
	Errors   Errors
	Attach   string
	Exited   bool
	ExitCode int
}

// Run measures until the duration passes, ctx ends, a signal arrives or
// the command exits.
func Run(ctx context.Context, o Options) (*Result, error) {
	depth := o.Depth
	if depth <= 0 {
		depth = 4
	}
	var maps whyMaps
	t := bpfskel.Tool{
		Name: "wall-time analysis", Spec: loadWhy, Maps: &maps,
		Command: o.Command, PidConst: whyVarTargetPid, Cgroup: o.Cgroup,
		Consts: map[string]any{whyVarTargetPid: uint32(o.Pid), whyVarTargetTid: uint32(o.Tid), whyVarMaxDepth: uint32(depth), whyVarUserStacks: o.User},
		Hooks: []bpfskel.Hook{
			bpfskel.BTFTracepoint("sys_enter", whyProgTpBtfSysEnter, whyProgRawSysEnter),
			bpfskel.BTFTracepoint("sys_exit", whyProgTpBtfSysExit, whyProgRawSysExit),
			bpfskel.BTFTracepoint("sched_wakeup_new", whyProgTpBtfSchedWakeupNew, whyProgRawSchedWakeupNew),
			bpfskel.BTFTracepoint("sched_waking", whyProgTpBtfSchedWaking, whyProgRawSchedWaking),
			bpfskel.BTFTracepoint("sched_switch", whyProgTpBtfSchedSwitchIn, whyProgRawSchedSwitchIn),
			bpfskel.BTFTracepoint("sched_switch", whyProgTpBtfSchedSwitchOut, whyProgRawSchedSwitchOut),
			bpfskel.BTFTracepoint("sched_stat_runtime", whyProgTpBtfSchedStatRuntime, whyProgRawSchedStatRuntime),
		},
	}
	// Wakers are often other processes: their tables load on demand.
	ld := unwind.Wire(&t, o.Pid, nil)
	ld.Only = 0
	s, done, err := ld.OpenKept(t)
	if err != nil {
		return nil, err
	}
	defer done()
	if s.Pid() != 0 {
		o.Pid = s.Pid()
	}
	// No process, cgroup or command: the whole machine (-a).
	system := o.Pid == 0 && o.Cgroup == nil
	before := snapshot(o.Pid, o.Tid, system)
	cg := ""
	if o.Pid != 0 {
		cg = cgroup.ControllerDir(o.Pid, "cpu")
	}
	cs0, cgOK := readCPUStat(cg)
	start := now()
	if err := maps.Ctl.Update(uint32(whyCtlStart), start, 0); err != nil {
		return nil, fmt.Errorf("opening the window: %w", err)
	}
	if o.OnStart != nil {
		o.OnStart(start)
	}
	var smp *sampler
	if o.Slices > 0 {
		smp = newSampler(maps.Threads, o.Slices, o.Duration)
		smp.start()
	}
	// The window closes when the duration ends, before the programs are
	// detached (a detach takes milliseconds, and events are lost meanwhile).
	var stop uint64
	var once sync.Once
	closeWindow := func() {
		once.Do(func() {
			stop = now()
			maps.Ctl.Update(uint32(whyCtlStop), stop, 0)
			if o.OnStop != nil {
				o.OnStop(stop)
			}
		})
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if o.Duration > 0 {
		timer := time.AfterFunc(o.Duration, func() { closeWindow(); cancel() })
		defer timer.Stop()
	}
	run, err := s.Run(rctx, runctl.Options{})
	if err != nil {
		return nil, err
	}
	closeWindow() // a signal or the command's exit ended the run (no-op after the duration)
	var samples []sample
	if smp != nil {
		samples = smp.stop(stop)
	}
	r := &Result{Attach: s.Mode()}
	if len(o.Command) > 0 && run.Reason == runctl.Done {
		r.Exited, r.ExitCode = true, run.ExitCode
	}
	if err := maps.Errors.Read(&r.Errors); err != nil {
		return nil, fmt.Errorf("reading the error counters: %w", err)
	}
	if cs1, ok := readCPUStat(cg); ok && cgOK {
		r.Cgroup = &Cgroup{Path: cg, NrPeriods: cs1.periods - cs0.periods, NrThrottled: cs1.throttled - cs0.throttled, ThrottledNS: cs1.throttledNS - cs0.throttledNS}
	}
	rd := &reader{maps: &maps, ld: ld, pid: o.Pid, tid: o.Tid, system: system, start: start, stop: stop, before: before, user: o.User}
	if err := rd.read(&r.Data); err != nil {
		return nil, err
	}
	if smp != nil {
		r.Timeline = buildTimeline(&r.Data, samples)
	}
	return r, nil
}

// now is CLOCK_MONOTONIC in ns, bpf_ktime_get_ns's clock.
func now() uint64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

// procTask is what /proc says of a thread blocked since before the start.
type procTask struct {
	pid     int
	syscall string   // the syscall it is in ("" outside one)
	kernel  []string // its kernel stack, leaf first
	state   byte     // R, S, D, ...
	comm    string
}

// snapshot reads every target thread's syscall and kernel stack: the
// program learns neither for a block that began before it was attached.
// System-wide, every thread of every process.
func snapshot(pid, only int, system bool) map[int]procTask {
	out := map[int]procTask{}
	if system {
		pids, _ := procfs.Pids()
		for _, p := range pids {
			tids, _ := procfs.Threads(p)
			for _, tid := range tids {
				out[tid] = readTask(p, tid)
			}
		}
		return out
	}
	if pid == 0 {
		return out
	}
	for _, tid := range targetThreads(pid, only) {
		out[tid] = readTask(pid, tid)
	}
	return out
}

// targetThreads are pid's threads, or only the one thread only (-t) when
// it is not 0.
func targetThreads(pid, only int) []int {
	if only != 0 {
		return []int{only}
	}
	tids, _ := procfs.Threads(pid)
	return tids
}

// ProcessOf is the process a thread belongs to (its Tgid), for -t: the
// program filters on both.
func ProcessOf(tid int) (int, error) {
	if err := procfs.CheckTid(tid); err != nil {
		return 0, err
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", tid))
	if err != nil {
		return 0, fmt.Errorf("tid %d: %w", tid, err)
	}
	defer f.Close()
	st, err := procfs.ParseStatus(f)
	if err != nil {
		return 0, fmt.Errorf("tid %d: reading its status: %w", tid, err)
	}
	return st.Tgid, nil
}

func readTask(pid, tid int) procTask {
	dir := fmt.Sprintf("/proc/%d/task/%d/", pid, tid)
	t := procTask{pid: pid}
	if b, err := os.ReadFile(dir + "syscall"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			if nr, err := strconv.Atoi(f[0]); err == nil && nr >= 0 {
				t.syscall = syscalls.Native(nr)
			}
		}
	}
	if b, err := os.ReadFile(dir + "stack"); err == nil {
		t.kernel = parseProcStack(string(b))
	}
	if b, err := os.ReadFile(dir + "stat"); err == nil {
		t.state = parseState(string(b))
	}
	t.comm = procfs.Comm(pid, tid)
	return t
}

// parseProcStack reads /proc/TID/stack ("[<0>] do_nanosleep+0x6d/0x1a0").
func parseProcStack(s string) []string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name := f[1]
		if i := strings.IndexByte(name, '+'); i > 0 {
			name = name[:i]
		}
		out = append(out, name)
	}
	return out
}

// parseState is the state letter of /proc/TID/stat (after the comm's ")").
func parseState(s string) byte {
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return 0
	}
	return s[i+2]
}

// The program's constants, from its header (bpfgen declares the types,
// not the #defines and enums).
const (
	whyUnseen, whyOn, whyRunq, whyBlocked, whyDead = 0, 1, 2, 3, 4
	whyNoSyscall, whyBefore                        = -1, -2
	whyCtlStart, whyCtlStop                        = 0, 1
)
