package why

import (
	"fmt"
	"slices"

	"github.com/sonde-dev/sonde/internal/collect/bpfmaps"
	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/collect/perf"
	"github.com/sonde-dev/sonde/internal/collect/syscalls"
	"github.com/sonde-dev/sonde/internal/collect/unwind"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/model/jsonout"
	"github.com/sonde-dev/sonde/internal/symbolize"
	"github.com/sonde-dev/sonde/internal/symbolize/builder"
)

// Frame is one stack frame; stacks are leaf first, kernel frames first.
type Frame = jsonout.Frame

// Thread is one thread's wall time, split. OnCPU + IRQ + Runnable +
// Throttled + Blocked is Wall.
type Thread struct {
	jsonout.Task
	Depth       int    `json:"-"` // 0: a target thread; n: a waker n hops away
	WallNS      uint64 `json:"wall_ns"`
	OnCPUNS     uint64 `json:"on_cpu_ns"`
	IRQNS       uint64 `json:"irq_ns"` // on a CPU in interrupts, softirqs or stolen: the kernel charges it to no task
	RunnableNS  uint64 `json:"runnable_ns"`
	ThrottledNS uint64 `json:"throttled_ns"`
	BlockedNS   uint64 `json:"blocked_ns"`
	Exited      bool   `json:"exited,omitempty"`
	// beginNS and endNS are the part of the window it lived (CLOCK_MONOTONIC).
	beginNS, endNS uint64
	// ByReason splits BlockedNS by reason (filled by Analyze).
	ByReason map[string]uint64 `json:"blocked_by_reason_ns,omitempty"`
}

// Wait is one bucket of blocked time, its stacks named.
type Wait struct {
	Pid, Tid  int
	Comm      string
	Frames    []Frame
	Syscall   string // "" outside a syscall
	Before    bool   // blocked since before the start (stack from /proc)
	Open      bool   // still blocked at the end
	WakerPid  int
	WakerTid  int // 0: woken from the idle task
	WakerComm string
	// WakerFrames: where the waker was when it woke the thread.
	WakerFrames []Frame
	// WakerLast*: the waker's own last block before it woke the thread.
	WakerLast        []Frame
	WakerLastSyscall string
	WakerLastKnown   bool
	WakerLastWaker   int
	NS, Count        uint64
	WakerRanNS       uint64 // summed time the waker had been awake when it woke
	WakerLastNS      uint64 // summed length of the waker's last block
	Slots            [whySlots]uint64
	// stack and wakerLast identify the blocked stack and the waker's last
	// blocked stack, so a chain can go on through the waker's own waits.
	stack, wakerLast string
}

// CPU is time on a CPU in slices that ended at one stack.
type CPU struct {
	Pid, Tid int
	Comm     string
	Frames   []Frame
	NS       uint64
}

// Data is a run's accounts with named stacks.
type Data struct {
	Pid int
	// System: the whole machine was the target (no -p, -t, -G or
	// command): every thread of every process.
	System          bool
	StartNS, StopNS uint64
	Threads         []Thread
	Waits           []Wait
	CPU             []CPU
	Cgroup          *Cgroup // the target's CPU cgroup, when it has one
	// Timeline, when asked for (Options.Slices), is every thread's state
	// over the window.
	Timeline *Timeline
}

const whySlots = 32

// reader turns the maps into Data.
type reader struct {
	maps        *whyMaps
	ld          *unwind.Loader
	pid, tid    int // tid: the one target thread (-t), or 0
	system      bool
	start, stop uint64
	before      map[int]procTask
	user        bool
	n           *namer
}

func stackID(pid uint32, u uint64, k int32) string { return fmt.Sprintf("%d/%x/%d", pid, u, k) }

func (r *reader) read(d *Data) error {
	d.Pid, d.StartNS, d.StopNS, d.System = r.pid, r.start, r.stop, r.system
	threads := map[uint32]whyWhyThread{}
	if err := bpfmaps.Each(r.maps.Threads, func(tid uint32, t whyWhyThread) { threads[tid] = t }); err != nil {
		return fmt.Errorf("reading threads: %w", err)
	}
	waits, err := bpfmaps.All[whyWhyKey, whyWhyWait](r.maps.Waits)
	if err != nil {
		return fmt.Errorf("reading blocked time: %w", err)
	}
	cpus, err := bpfmaps.All[bpfskel.StackKey, uint64](r.maps.Cpu)
	if err != nil {
		return fmt.Errorf("reading CPU time: %w", err)
	}
	r.n = newNamer(r.maps, r.ld, r.user)
	type pending struct {
		w              *Wait
		blocked, waker ref
		last           ref
	}
	var pend []pending
	for _, e := range waits {
		w, p := r.wait(e.Key, e.Value)
		pend = append(pend, pending{w, p[0], p[1], p[2]})
	}
	for tid, t := range threads {
		if w := r.closeThread(tid, &t); w != nil {
			pend = append(pend, pending{w: w, blocked: r.n.want(t.Pid, t.BlockUstack, t.BlockKstack), waker: noRef, last: noRef})
		}
		th := Thread{Task: jsonout.Task{PID: int(t.Pid), TID: int(tid), Comm: bpfmaps.CString(t.Comm[:])}, Depth: int(t.Depth),
			OnCPUNS: t.OnCpuNs, IRQNS: t.IrqNs, RunnableNS: t.RunqNs, ThrottledNS: t.ThrottledNs, BlockedNS: t.BlockedNs, Exited: t.State == whyDead}
		end := r.stop
		if t.End != 0 {
			end = t.End
		}
		th.beginNS, th.endNS = t.Begin, end
		if end > t.Begin {
			th.WallNS = end - t.Begin
		}
		d.Threads = append(d.Threads, th)
	}
	var pend2 []*Wait
	d.Threads, pend2 = r.unseen(d.Threads, threads)
	for _, w := range pend2 {
		pend = append(pend, pending{w: w, blocked: noRef, waker: noRef, last: noRef})
	}
	cpuRefs := make([]ref, len(cpus))
	for i, c := range cpus {
		cpuRefs[i] = r.n.want(c.Key.Pid, c.Key.UserStack, c.Key.KernelStack)
	}
	r.n.finish()
	for _, p := range pend {
		if p.blocked != noRef {
			p.w.Frames = r.n.frames(p.blocked)
		}
		if p.waker != noRef {
			p.w.WakerFrames = r.n.frames(p.waker)
		}
		if p.last != noRef {
			p.w.WakerLast = r.n.frames(p.last)
		}
		d.Waits = append(d.Waits, *p.w)
	}
	comms := map[int]string{}
	for _, t := range d.Threads {
		comms[t.TID] = t.Comm
	}
	for i, c := range cpus {
		d.CPU = append(d.CPU, CPU{Pid: int(c.Key.Pid), Tid: int(c.Key.Tid), Comm: comms[int(c.Key.Tid)], Frames: r.n.frames(cpuRefs[i]), NS: c.Value})
	}
	return nil
}

// wait turns one bucket into a Wait and the stacks it needs named.
func (r *reader) wait(k whyWhyKey, v whyWhyWait) (*Wait, [3]ref) {
	w := &Wait{Pid: int(k.Pid), Tid: int(k.Tid), Comm: bpfmaps.CString(k.Comm[:]),
		WakerPid: int(k.WakerPid), WakerTid: int(k.WakerTid), WakerComm: bpfmaps.CString(k.WakerComm[:]),
		NS: v.Ns, Count: v.Count, WakerRanNS: v.WakerRanNs, WakerLastNS: v.WakerLastNs, Slots: v.Slots,
		WakerLastWaker: int(k.WakerLastWaker)}
	w.stack = stackID(k.Pid, k.UserStack, k.KernelStack)
	refs := [3]ref{noRef, noRef, noRef}
	switch k.Syscall {
	case whyBefore:
		w.Before = true
		pt := r.before[w.Tid]
		w.Syscall = pt.syscall
		for _, f := range pt.kernel {
			w.Frames = append(w.Frames, Frame{Sym: f, DSO: "[kernel.kallsyms]", Kernel: true})
		}
	case whyNoSyscall:
	default:
		w.Syscall = syscalls.Native(int(k.Syscall))
	}
	if !w.Before {
		refs[0] = r.n.want(k.Pid, k.UserStack, k.KernelStack)
	}
	if k.WakerTid != 0 {
		refs[1] = r.n.want(k.WakerPid, k.WakerUserStack, k.WakerKernelStack)
	}
	if k.WakerLastSyscall != whyNoSyscall || k.WakerLastUserStack != 0 || k.WakerLastKernelStack >= 0 {
		w.WakerLastKnown = true
		if k.WakerLastSyscall >= 0 {
			w.WakerLastSyscall = syscalls.Native(int(k.WakerLastSyscall))
		}
		refs[2] = r.n.want(k.WakerPid, k.WakerLastUserStack, k.WakerLastKernelStack)
		w.wakerLast = stackID(k.WakerPid, k.WakerLastUserStack, k.WakerLastKernelStack)
	}
	return w, refs
}

// closeThread ends the thread's interval in progress at the stop; a
// block in progress is returned as an open wait.
func (r *reader) closeThread(tid uint32, t *whyWhyThread) *Wait {
	if t.State == whyDead || t.Ts >= r.stop {
		return nil
	}
	d := r.stop - t.Ts
	switch t.State {
	case whyOn:
		t.OnCpuNs += d
	case whyRunq:
		if t.Throttled != 0 {
			t.ThrottledNs += d
		} else {
			t.RunqNs += d
		}
	case whyUnseen:
		// Seen by no event: its state now tells how it spent the window.
		if pt := readTask(int(t.Pid), int(tid)); pt.state == 'R' {
			t.OnCpuNs += d
			return nil
		}
		fallthrough
	case whyBlocked:
		t.BlockedNs += d
		w := &Wait{Pid: int(t.Pid), Tid: int(tid), Comm: bpfmaps.CString(t.Comm[:]), Open: true, NS: d, Count: 1}
		w.stack = stackID(t.Pid, t.BlockUstack, t.BlockKstack)
		if t.BlockSyscall >= 0 {
			w.Syscall = syscalls.Native(int(t.BlockSyscall))
		} else if t.BlockSyscall == whyBefore || t.State == whyUnseen {
			w.Before = true
			w.Syscall = r.before[int(tid)].syscall
		}
		return w
	}
	return nil
}

// unseen adds the target's threads no event named (blocked or running the
// whole window): their state and stack come from /proc. System-wide,
// every thread /proc listed at the start is the target's.
func (r *reader) unseen(ts []Thread, known map[uint32]whyWhyThread) ([]Thread, []*Wait) {
	if r.pid == 0 && !r.system {
		return ts, nil
	}
	var waits []*Wait
	for _, tid := range r.beforeTids() {
		if _, ok := known[uint32(tid)]; ok {
			continue
		}
		b, ok := r.before[tid]
		if !ok {
			continue // born during the window: its first event would have named it
		}
		pt := readTask(b.pid, tid)
		if pt.comm == "" {
			continue // gone: it exited in the window, unseen (its exit would have been an event)
		}
		wall := r.stop - r.start
		th := Thread{Task: jsonout.Task{PID: b.pid, TID: tid, Comm: pt.comm}, WallNS: wall, beginNS: r.start, endNS: r.stop}
		if pt.state == 'R' {
			th.OnCPUNS = wall
		} else {
			th.BlockedNS = wall
			w := &Wait{Pid: b.pid, Tid: tid, Comm: pt.comm, Before: true, Open: true, NS: wall, Count: 1, Syscall: b.syscall}
			for _, f := range b.kernel {
				w.Frames = append(w.Frames, Frame{Sym: f, DSO: "[kernel.kallsyms]", Kernel: true})
			}
			w.stack = fmt.Sprintf("before/%d", tid)
			waits = append(waits, w)
		}
		ts = append(ts, th)
	}
	return ts, waits
}

// beforeTids are the target's threads at the start, in order.
func (r *reader) beforeTids() []int {
	if !r.system {
		return targetThreads(r.pid, r.tid)
	}
	tids := make([]int, 0, len(r.before))
	for tid := range r.before {
		tids = append(tids, tid)
	}
	slices.Sort(tids)
	return tids
}

// ref is a stack to name: an index into the namer's list.
type ref int

const noRef ref = -1

// namer names the stacks of a run in one symbolize pass.
type namer struct {
	maps    *whyMaps
	ld      *unwind.Loader
	user    bool
	b       *builder.Builder
	prof    *model.Profile
	locs    [][]int32
	ids     map[string]ref
	restore func(pid uint32) // the loader's Restorer
	kbuf    []uint64
	ubuf    [unwind.MaxFrames]uint64
}

func newNamer(m *whyMaps, ld *unwind.Loader, user bool) *namer {
	b := builder.New()
	b.Symbolizer = symbolize.DefaultWith(false)
	return &namer{maps: m, ld: ld, user: user, b: b, ids: map[string]ref{}, restore: ld.Restorer(b), kbuf: make([]uint64, perf.MaxStack)}
}

func (n *namer) want(pid uint32, u uint64, k int32) ref {
	id := stackID(pid, u, k)
	if r, ok := n.ids[id]; ok {
		return r
	}
	n.restore(pid)
	var us []uint64
	if n.user {
		if st, ok := n.ld.Stack(u, &n.ubuf); ok {
			us = st.PCs
		}
	}
	locs := n.b.StackLocs(pid, bpfmaps.Stack(n.maps.Stacks, k, n.kbuf), us)
	n.b.SampleLocs(pid, pid, locs, 1)
	r := ref(len(n.locs))
	n.locs = append(n.locs, append([]int32(nil), locs...))
	n.ids[id] = r
	return r
}

func (n *namer) finish() { n.prof = n.b.Finish(model.Meta{Unit: "ns"}) }

// frames names a stack, without the tracing program's own frames.
func (n *namer) frames(r ref) []Frame {
	var out []Frame
	for _, loc := range n.locs[r] {
		name := n.prof.FrameName(loc)
		kernel := n.prof.Kind(loc).IsKernel()
		if kernel && model.TracingFrame(name) {
			continue
		}
		out = append(out, Frame{Sym: name, DSO: n.prof.DSOName(loc), Kernel: kernel})
	}
	return out
}
