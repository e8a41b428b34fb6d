package record

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/collect/events"
	"github.com/sonde-dev/sonde/internal/collect/perf"
	"github.com/sonde-dev/sonde/internal/collect/unwind"
	"github.com/sonde-dev/sonde/internal/model/stackstat"
)

// Call-graph modes (--call-graph).
const (
	CallGraphFP   = "fp"   // the kernel's frame-pointer callchains, user part included
	CallGraphAuto = "auto" // kernel callchain from perf, user stacks by sonde's BPF unwinder
)

// UnwinderName is Meta.Unwinder for recordings whose user stacks the BPF
// unwinder walked (the name profile uses too).
const UnwinderName = "bpf-tables"

// walker runs sonde's user-stack walker at each of record's samples: BPF
// programs attached to record's own events write the walked stack's key
// into record's ring just before the sample (through one BPF_OUTPUT event
// per CPU), and take pairs them in ring order.
type walker struct {
	objs walkMaps
	sess *bpfskel.Session
	// The programs evs need (nil: not loaded).
	sample, tracepoint, uprobe *ebpf.Program
	ld                         *unwind.Loader
	outFDs                     []int
	outIDs                     map[uint64]bool
	attached                   map[uint64]bool // tracepoint ids whose program is attached
	last                       map[int]walked  // cpu → the last output record read from its ring
	stacks                     stackCache
	seen                       []uint64 // keys read this round: deleted from the map after it
	buf                        [unwind.MaxFrames]uint64

	filter bool // tracepoint programs walk only the processes followed

	stats      stackstat.Completeness
	missing    uint64 // samples without their walked stack: both causes below
	unpaired   uint64 // … whose walked stack's record never came
	unreadable uint64 // … whose key named no stack in unwind_stacks (the insert failed)
	// Unpaired samples by what came before them in their ring: no walked
	// stack's record since the last sample, or one of another thread.
	noRecord, otherThread uint64
	released              uint64 // samples paired with a released task's record (take)
}

// released is the thread id perf gives a task whose pid was released.
const released = ^uint32(0)

// walked is an output record waiting for its sample.
type walked struct {
	key uint64
	tid uint32
	ok  bool
}

// openWalker loads the walker with pid's tables (0: each process as the
// walker meets it) and starts following processes. Only the programs evs
// need are loaded: each takes seconds to verify on a busy machine. With
// filter, record's events follow some processes only (follow names
// them): tracepoint and probe programs, which run at every hit
// system-wide, walk only those and their children.
func openWalker(pid int, evs []events.Spec, filter, noInterp bool) (*walker, error) {
	if !unwind.Supported() {
		return nil, fmt.Errorf("the BPF unwinder does not run on this architecture")
	}
	w := &walker{outIDs: map[uint64]bool{}, attached: map[uint64]bool{}, last: map[int]walked{}}
	// record attaches the programs to its own events (attach): the hooks
	// only keep them in the object.
	none := func() ([]int, error) { return nil, nil }
	t := bpfskel.Tool{Name: "record's user-stack walker", Spec: loadWalk, Maps: &w.objs}
	need := map[string]bool{}
	for _, e := range evs {
		p := progFor(e)
		if !need[p] {
			need[p] = true
			t.Hooks = append(t.Hooks, bpfskel.PerfEventHook(p, none))
		}
	}
	if filter && (need[walkProgWalkTracepoint] || need[walkProgWalkUprobe]) {
		w.filter = true
		t.Consts = map[string]any{"walk_filter": true}
		t.Hooks = append(t.Hooks,
			bpfskel.BTFTracepoint("sched_process_fork", walkProgTpBtfWalkFork, walkProgRawWalkFork),
			bpfskel.BTFTracepoint("sched_process_exit", walkProgTpBtfWalkExit, walkProgRawWalkExit))
	}
	w.ld = unwind.Wire(&t, pid, func() unwind.Maps {
		m := w.objs
		return unwind.Maps{Rules: m.UnwindRules, Rows: m.UnwindRows, Procs: m.UnwindProcs,
			Stacks: m.UnwindStacks, Counters: m.UnwindCounters, Notices: m.UnwindNotices}
	})
	w.ld.NoInterp = noInterp
	s, err := w.ld.Open(t)
	if err != nil {
		return nil, err
	}
	w.sess = s
	for _, p := range []struct {
		name string
		to   **ebpf.Program
	}{{walkProgWalkSample, &w.sample}, {walkProgWalkTracepoint, &w.tracepoint}, {walkProgWalkUprobe, &w.uprobe}} {
		*p.to = s.Program(p.name)
	}
	return w, nil
}

// follow has the tracepoint and probe programs walk process tgid (and
// the children it forks from now on); without a filter they walk every
// process.
func (w *walker) follow(tgid int) error {
	if !w.filter {
		return nil
	}
	if err := w.objs.WalkTgids.Put(uint32(tgid), uint8(1)); err != nil {
		return fmt.Errorf("following process %d's stacks: %w", tgid, err)
	}
	return nil
}

// preloadTables is off only in the test that shows what it is for.
var preloadTables = true

// preload loads the tables of the command's executable, interpreter and
// libraries while it is held before its exec: its first samples, in main
// within a millisecond of the exec, then find them in place instead of
// waiting for the exec notice to be read and the tables built (70 of
// 2,000 samples of a 2 s run without it). A file it cannot read is left
// to the notices.
func (w *walker) preload(cmd string) {
	if preloadTables {
		w.ld.PreloadCommand(cmd)
	}
}

// attach runs the walker at every sample of event fd. A tracepoint's
// program serves every perf event of that tracepoint, so it is attached
// once; user probes are tracepoints to perf but take kprobe programs.
func (w *walker) attach(fd int, e events.Spec) error {
	if !e.Tracepoint() {
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_BPF, w.sample.FD()); err != nil {
			return fmt.Errorf("attaching the stack walker to %s: %w", e, err)
		}
		return nil
	}
	if w.attached[e.Def.Config] {
		return nil
	}
	p := w.tracepoint
	if progFor(e) == walkProgWalkUprobe {
		p = w.uprobe
	}
	err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_BPF, p.FD())
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("attaching the stack walker to %s: %w", e, err)
	}
	w.attached[e.Def.Config] = true
	return nil
}

// programID is the kernel's id of the walker's program for e (0 if none).
func (w *walker) programID(e events.Spec) uint32 {
	p := w.tracepoint
	if progFor(e) == walkProgWalkUprobe {
		p = w.uprobe
	}
	if p == nil {
		return 0
	}
	info, err := p.Info()
	if err != nil {
		return 0
	}
	id, _ := info.ID()
	return uint32(id)
}

// progFor names the walker's program for an event: user (and kernel)
// probes are tracepoints to perf but take kprobe-type programs; their
// records carry the probed address (__probe_ip).
func progFor(e events.Spec) string {
	if !e.Tracepoint() {
		return walkProgWalkSample
	}
	if e.Format != nil {
		for _, f := range e.Format.Fields {
			if f.Name == "__probe_ip" {
				return walkProgWalkUprobe
			}
		}
	}
	return walkProgWalkTracepoint
}

// outputs opens each CPU's BPF_OUTPUT event, writing into that CPU's
// ring, so a walked stack's record travels with the sample it belongs to.
func (w *walker) outputs(rings map[int]*perf.Ring) error {
	ev := perf.Event{Def: perf.EventDef{Name: "bpf-output", Kind: perf.KindSoftware,
		Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_BPF_OUTPUT}}
	for cpu, r := range rings {
		attr := perf.NewAttr(perf.AttrOptions{Event: ev, Period: 1, Raw: true})
		fd, err := perf.Open(&attr, -1, cpu, -1, ev)
		if err != nil {
			return fmt.Errorf("opening the stack walker's output on cpu %d: %w", cpu, err)
		}
		w.outFDs = append(w.outFDs, fd)
		id, err := perf.ID(fd)
		if err != nil {
			return fmt.Errorf("reading the stack walker's output id: %w", err)
		}
		w.outIDs[id] = true
		if err := perf.SetOutput(fd, r.FD); err != nil {
			return fmt.Errorf("sending the stack walker's output to cpu %d's ring: %w", cpu, err)
		}
		if err := w.objs.WalkOut.Put(uint32(cpu), uint32(fd)); err != nil {
			return fmt.Errorf("registering the stack walker's output on cpu %d: %w", cpu, err)
		}
	}
	return nil
}

// take reads a record of cpu's ring: a walked stack's record (a sample of
// an output event) is kept for the sample that follows it in the same
// ring (take says true: it is not queued); a sample gets the key kept
// for its thread. The pair is made here, in ring order: the sample's
// time is stamped before the program runs, so time order would put the
// sample first.
func (w *walker) take(cpu int, body []byte, p *pending) bool {
	if len(body) < 48 {
		return false
	}
	tid := le32(body[20:])
	if w.outIDs[le64(body)] {
		// id, ip, pid/tid, time, cpu, period, raw size (u32), raw.
		if len(body) >= 60 {
			w.last[cpu] = walked{key: le64(body[52:]), tid: tid, ok: true}
		}
		return true
	}
	// A record of thread -1 before a sample of another thread: a task
	// reaped on another CPU while it still ran its exit path here. The
	// sample's ids are taken before the program runs, the record's after,
	// and between them its pid was released (perf_event_tid says -1 for
	// a task no longer pid_alive; 10–30 samples a minute with processes
	// starting all the time). The kernel writes no sample whose program
	// did not run, so the record is this sample's.
	if l := w.last[cpu]; l.ok && (l.tid == tid || l.tid == released) {
		p.key, p.walked = l.key, true
		if l.tid != tid {
			w.released++
		}
	} else if le32(body[16:]) != 0 {
		if l.ok {
			w.otherThread++
		} else {
			w.noRecord++
		}
	}
	delete(w.last, cpu)
	return false
}

// user appends the walked user stack (key, from take) to s's callchain,
// which holds the kernel part only, and counts how complete it is.
func (w *walker) user(s *perf.Sample, key uint64, walked bool) {
	if !walked {
		if s.Pid != 0 {
			w.missing++
			w.unpaired++
		}
		return
	}
	if key == 0 || s.Pid == 0 {
		return // no user context (kernel thread), or the stacks map was full: counted by the walker
	}
	st := w.stacks.get(key)
	if st == nil {
		got, ok := w.ld.Stack(key, &w.buf)
		if !ok {
			w.missing++
			w.unreadable++
			return
		}
		got.PCs = append([]uint64(nil), got.PCs...)
		st = &got
		w.stacks.put(key, st)
	}
	w.seen = append(w.seen, key)
	s.Callchain = append(append(s.Callchain, perf.ContextUser), st.PCs...)
	w.stats.Add(w.ld.FileOf, s.Pid, *st, 1)
}

// stackCache keeps walked stacks by key (a hash of their frames, so a key
// names one stack for the whole recording), for samples that come back to
// a stack without reading the kernel's map again. It holds two
// generations of at most stackCacheSize stacks: a stack used in the
// newer one stays, one not used since the generation before is dropped.
// Kept whole, it grew by 30 MB in 40 s of a system-wide record beside
// builds; each stack read again costs one map lookup.
type stackCache struct {
	cur, old map[uint64]*stackstat.Stack
}

const stackCacheSize = 16 << 10

func (c *stackCache) get(key uint64) *stackstat.Stack {
	if st := c.cur[key]; st != nil {
		return st
	}
	st := c.old[key]
	if st != nil {
		c.put(key, st)
	}
	return st
}

func (c *stackCache) put(key uint64, st *stackstat.Stack) {
	if len(c.cur) >= stackCacheSize || c.cur == nil {
		c.old, c.cur = c.cur, make(map[uint64]*stackstat.Stack, stackCacheSize)
	}
	c.cur[key] = st
}

// round ends a drain round: the stacks read in it leave the kernel's map
// (their frames are kept here), so the map holds only the stacks of one
// round however long the recording.
func (w *walker) round() {
	if len(w.seen) == 0 {
		return
	}
	keys := w.seen[:0]
	dup := map[uint64]bool{}
	for _, k := range w.seen {
		if !dup[k] {
			dup[k] = true
			keys = append(keys, k)
		}
	}
	if _, err := w.objs.UnwindStacks.BatchDelete(keys, nil); err != nil {
		for _, k := range keys {
			w.objs.UnwindStacks.Delete(k)
		}
	}
	w.seen = w.seen[:0]
}

// WalkStats say how record's walker did.
type WalkStats struct {
	Stacks stackstat.Completeness `json:"user_stacks"`
	Walker unwind.Counters        `json:"walker"`
	Loader unwind.Stats           `json:"loader"`
	// Unpaired are samples whose walked stack's record never reached the
	// ring: the kernel could not write it (OutputErrors), or the sample
	// ran without the walker.
	Unpaired uint64 `json:"unpaired_samples"`
	// Unreadable are samples whose key named no stack in unwind_stacks.
	Unreadable uint64 `json:"unreadable_stacks"`
	// UnpairedNoRecord and UnpairedOtherThread say why samples were
	// unpaired: no walked stack's record came before them in their ring,
	// or the one that came was another thread's.
	UnpairedNoRecord    uint64 `json:"unpaired_no_record"`
	UnpairedOtherThread uint64 `json:"unpaired_other_thread"`
	// PairedReleased are samples paired with a record of thread -1: their
	// task was reaped while its exit path still ran.
	PairedReleased uint64 `json:"paired_released_task"`
	// OutputErrors are walked stacks the kernel could not write, by cause
	// (bpf_perf_event_output's errno).
	OutputErrors   uint64 `json:"output_errors"`
	OutputRingFull uint64 `json:"output_ring_full"`
	OutputNoEvent  uint64 `json:"output_no_event"`
	OutputOther    uint64 `json:"output_other"`
}

// finish reads the walker's counters.
func (w *walker) finish() *WalkStats {
	ws := &WalkStats{Stacks: w.stats, Walker: w.ld.Counters(), Loader: w.ld.Stats(), Unpaired: w.unpaired, Unreadable: w.unreadable,
		UnpairedNoRecord: w.noRecord, UnpairedOtherThread: w.otherThread, PairedReleased: w.released}
	ws.Stacks.Lost = ws.Walker.StacksFull
	ws.Stacks.Tables = w.ld.Sources()
	ws.Stacks.Unwritten = w.missing
	ws.Stacks.Total += ws.Stacks.Lost + ws.Stacks.Unwritten
	var errs walkErrors
	if err := w.objs.WalkErrors.Read(&errs); err == nil {
		ws.OutputErrors, ws.OutputRingFull, ws.OutputNoEvent, ws.OutputOther = errs.Output, errs.RingFull, errs.NoOutput, errs.Other
	}
	return ws
}

// walkErrors are record.bpf.c's counters (each tag names its member of
// enum walk_error, bpfskel.Counters).
type walkErrors struct {
	Output   uint64 `counter:"WALK_ERR_OUTPUT"`
	RingFull uint64 `counter:"WALK_ERR_RING_FULL"`
	NoOutput uint64 `counter:"WALK_ERR_NO_OUTPUT"`
	Other    uint64 `counter:"WALK_ERR_OUTPUT_OTHER"`
}

// close detaches everything; the caller closes the events first.
func (w *walker) close() {
	for _, fd := range w.outFDs {
		unix.Close(fd)
	}
	w.outFDs = nil
	if w.sess != nil {
		w.sess.Close()
	}
	w.ld.Stop()
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func le64(b []byte) uint64 {
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// describe names the call-graph mode that ran, for record's summary.
func describe(mode string, fallback string) string {
	switch {
	case mode == CallGraphAuto:
		return "auto (user stacks by sonde's BPF unwinder: unwind tables, frame pointers where a mapping has none)"
	case fallback != "":
		return "fp (kernel frame-pointer callchains; " + fallback + ")"
	}
	return "fp (kernel frame-pointer callchains)"
}
