// Package builder turns what sources saw — perf records, BPF stack maps —
// into sonde's model: it follows address spaces (mmap, fork, exec),
// deduplicates threads, locations and stacks while data arrives, and names
// everything once at the end through the symbolize pass. record, profile
// and offcpu all build their profiles here.
package builder

import (
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/sonde-dev/sonde/internal/collect/host"
	"github.com/sonde-dev/sonde/internal/collect/perf"
	"github.com/sonde-dev/sonde/internal/collect/procfs"
	"github.com/sonde-dev/sonde/internal/collect/python"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/model/stackstat"
	"github.com/sonde-dev/sonde/internal/symbolize"
)

// Builder turns the kernel's records (samples and side-band) or stacks read
// from BPF maps into a model.Profile. While data arrives it only tracks
// address spaces and deduplicates; names are looked up once, in Finish.
type Builder struct {
	prof         model.Profile
	procs        map[uint32]*process
	comms        map[uint32]string // tid → current name
	threads      model.Threads
	dsos         map[symbolize.Object]int32 // object → index into prof.DSOs
	objs         []symbolize.Object         // what each DSO is, for the symbolize pass
	rawLocs      map[rawLoc]int32
	stacks       model.Stacks
	frames       []int32
	frameBuf     []Frame // reused by the unwinder, one sample at a time
	kernelDSO    int32
	synthetic    map[string]int32
	syntheticDSO int32
	written      int // samples handed out and dropped (DropSamples)
	// Unwinder turns a sample into frames; frame pointers by default.
	Unwinder Unwinder
	// Symbolizer names the frames in Finish; nil: symbolize.Default.
	Symbolizer *symbolize.Symbolizer
	// Python names walked CPython frames as they arrive; nil: they stay
	// unnamed ([python]).
	Python *python.Reader
	py     pyNames
	// The running system, read for processes that started before the
	// recording (tests give a fake one).
	readMaps func(pid int) ([]procfs.Mapping, error)
	tids     func(pid int) ([]int, error)
	comm     func(pid, tid int) string
	cgroupOf func(pid int) string // nil: threads carry no cgroup
	// hold: files that may be gone when frames are named are held open
	// when first seen (symbolize.Hold).
	hold    bool
	cgroups map[uint32]string // pid → its cgroup path, read once
}

type rawLoc struct {
	dso  int32
	addr uint64 // file offset for file-backed objects, address otherwise
}

type mapping struct {
	start, end, pgoff uint64
	dso               int32
}

type process struct {
	maps []mapping // sorted by start, non-overlapping
	// other holds the process's mappings that are not code ([heap],
	// [stack], anonymous and file data) as last read from /proc/PID/maps,
	// sorted by start: a frame-pointer walk through code built without
	// them yields addresses there, and such a frame still gets an object
	// and an offset. Objects are made for them only when an address hits.
	other  []procfs.Mapping
	reread time.Time // when /proc/PID/maps was last read on a miss
}

// rereadEvery bounds how often a process's mappings are read again when
// an address falls outside all of them (-a -g meets such addresses in
// every process built without frame pointers).
const rereadEvery = time.Second

// New returns an empty builder.
func New() *Builder {
	return &Builder{
		procs:        map[uint32]*process{},
		comms:        map[uint32]string{},
		threads:      model.Threads{},
		dsos:         map[symbolize.Object]int32{},
		rawLocs:      map[rawLoc]int32{},
		kernelDSO:    -1,
		syntheticDSO: -1,
		Unwinder:     FramePointer{},
		Python:       python.NewReader(),
		readMaps:     procfs.ReadMaps,
		tids:         procfs.Threads,
		comm:         procfs.Comm,
	}
}

// ReadMapsWith makes the builder read the mappings of processes it did not
// see start with read (a procfs.MapsKeeper's Read keeps those of processes
// that exited).
func (b *Builder) ReadMapsWith(read func(pid int) ([]procfs.Mapping, error)) { b.readMaps = read }

func (b *Builder) proc(pid uint32) *process {
	p := b.procs[pid]
	if p == nil {
		p = &process{}
		b.procs[pid] = p
		// A process we have not seen start: read its current mappings.
		if maps, err := b.readMaps(int(pid)); err == nil {
			for _, m := range maps {
				if m.Exec() {
					b.addMapping(pid, p, m.Start, m.End, m.Offset, m.Path, nil)
				} else if m.End > m.Start {
					p.other = append(p.other, m)
				}
			}
		}
	}
	return p
}

// Synthesize records the current state of pid (mappings and thread names),
// for processes that existed before recording started.
func (b *Builder) Synthesize(pid int) {
	b.proc(uint32(pid))
	if tids, err := b.tids(pid); err == nil {
		for _, t := range tids {
			if c := b.comm(pid, t); c != "" {
				b.comms[uint32(t)] = c
			}
		}
	}
}

func (b *Builder) dsoFor(pid uint32, path string, buildID []byte) int32 {
	obj := symbolize.MappedObject(pid, path, hex.EncodeToString(buildID))
	// One DSO per file (and build-id), whichever process mapped it; one per
	// process for anonymous memory. The pid kept is the first mapper's, to
	// reach its mount namespace.
	key := obj
	if !obj.Anon() {
		key.Pid = 0
	}
	if id, ok := b.dsos[key]; ok {
		return id
	}
	return b.addDSO(key, obj)
}

func (b *Builder) addDSO(key, obj symbolize.Object) int32 {
	if b.hold && obj.Kind == model.DSOUser {
		symbolize.Hold(obj.Pid, obj.Path, obj.BuildID)
	}
	id := int32(len(b.prof.DSOs))
	b.dsos[key] = id
	b.prof.DSOs = append(b.prof.DSOs, obj.DSO())
	b.objs = append(b.objs, obj)
	return id
}

func (b *Builder) addMapping(pid uint32, p *process, start, end, pgoff uint64, path string, buildID []byte) {
	if end <= start {
		return
	}
	nm := mapping{start: start, end: end, pgoff: pgoff, dso: b.dsoFor(pid, path, buildID)}
	// Cut what the new mapping covers out of older ones (MAP_FIXED, dlopen).
	out := p.maps[:0:0]
	for _, m := range p.maps {
		if m.end <= start || m.start >= end {
			out = append(out, m)
			continue
		}
		if m.start < start {
			out = append(out, mapping{start: m.start, end: start, pgoff: m.pgoff, dso: m.dso})
		}
		if m.end > end {
			out = append(out, mapping{start: end, end: m.end, pgoff: m.pgoff + (end - m.start), dso: m.dso})
		}
	}
	out = append(out, nm)
	sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
	p.maps = out
}

// Mmap handles MMAP/MMAP2.
func (b *Builder) Mmap(m perf.Mmap) {
	if m.Prot&0x4 == 0 { // PROT_EXEC: only code matters for stacks
		return
	}
	if m.Pid == ^uint32(0) {
		return // kernel module maps: kallsyms covers them
	}
	b.addMapping(m.Pid, b.proc(m.Pid), m.Addr, m.Addr+m.Len, m.Pgoff, m.Filename, m.BuildID)
}

// Comm handles COMM; an exec starts a fresh address space.
func (b *Builder) Comm(c perf.Comm) {
	b.comms[c.Tid] = c.Comm
	if c.Exec {
		b.procs[c.Pid] = &process{}
	}
}

// Fork handles FORK: a new process starts with its parent's mappings.
func (b *Builder) Fork(t perf.Task) {
	if c, ok := b.comms[t.Ptid]; ok {
		b.comms[t.Tid] = c
	}
	if t.Pid == t.Ppid {
		return // a new thread shares the address space
	}
	parent := b.procs[t.Ppid]
	child := &process{}
	if parent != nil {
		child.maps = append([]mapping(nil), parent.maps...)
	}
	b.procs[t.Pid] = child
}

func (b *Builder) thread(pid, tid uint32) int32 {
	comm, ok := b.comms[tid]
	if !ok && tid == 0 {
		comm, ok = "swapper", true // the idle task
	}
	if !ok {
		comm = b.comm(int(pid), int(tid))
		if comm == "" {
			comm = fmt.Sprintf(":%d", tid)
		}
		b.comms[tid] = comm
	}
	return b.threads.ID(&b.prof, model.Thread{Pid: int32(pid), Tid: int32(tid), Comm: comm, Cgroup: b.cgroup(pid)})
}

// HoldFiles makes the builder hold, from their first mapping, the files
// that may be gone when frames are named (symbolize.Hold: containers'
// binaries, programs in temporary directories), so they are named after
// those processes exit. Live recordings only.
func (b *Builder) HoldFiles() { b.hold = true }

// CgroupsFrom makes each thread carry its process's cgroup, read with
// of once per process when its first sample arrives (a process gone by
// then has none).
func (b *Builder) CgroupsFrom(of func(pid int) string) {
	b.cgroupOf, b.cgroups = of, map[uint32]string{}
}

func (b *Builder) cgroup(pid uint32) string {
	if b.cgroupOf == nil || pid == 0 {
		return ""
	}
	cg, ok := b.cgroups[pid]
	if !ok {
		cg = b.cgroupOf(int(pid))
		b.cgroups[pid] = cg
	}
	return cg
}

// Sample adds one sample of the first event.
func (b *Builder) Sample(s *perf.Sample, misc uint16) { b.SampleEvent(s, misc, 0) }

// SampleEvent adds one sample of event ev, keeping its raw payload.
func (b *Builder) SampleEvent(s *perf.Sample, misc uint16, ev uint16) {
	b.frameBuf = b.Unwinder.Frames(s, misc, b.frameBuf[:0])
	b.frames = b.frames[:0]
	for _, f := range b.frameBuf {
		id := b.loc(s.Pid, f)
		if id < 0 {
			break // the walk left the process's memory: the rest is junk
		}
		b.frames = append(b.frames, id)
	}
	st := b.stacks.ID(&b.prof, b.frames)
	var raw []byte
	if len(s.Raw) > 0 {
		raw = append([]byte(nil), s.Raw...)
	}
	b.prof.Samples = append(b.prof.Samples, model.Sample{
		Time: s.Time, Thread: b.thread(s.Pid, s.Tid), CPU: s.CPU, Stack: st, Period: s.Period, Event: ev, Raw: raw,
	})
}

// loc returns the location of a frame; -1 for a return address that lies
// in no mapping of a process whose mappings are known: a frame-pointer walk
// through code built without frame pointers read a saved value that is
// not an address (0, text, a counter), and every frame after it is junk.
func (b *Builder) loc(pid uint32, f Frame) int32 {
	addr := f.Addr
	if !f.Kernel && python.IsFrame(addr) && b.Python != nil {
		if _, ok := python.Pid(addr); ok {
			return -1 // the process id a stack with Python frames ends with
		}
		return b.pyLoc(pid, addr)
	}
	if !f.Leaf && addr > 0 {
		// A return address points after the call; the call is what ran.
		addr--
	}
	var k rawLoc
	if f.Kernel {
		if b.kernelDSO < 0 {
			b.kernelDSO = b.addDSO(symbolize.KernelObject, symbolize.KernelObject)
		}
		k = rawLoc{dso: b.kernelDSO, addr: addr}
	} else {
		k = rawLoc{dso: -1, addr: addr}
		p := b.proc(pid)
		m, ok := find(p.maps, addr)
		if !ok {
			m, ok = b.miss(pid, p, addr)
		}
		if ok {
			k = rawLoc{dso: m.dso, addr: b.objs[m.dso].Offset(addr, m.start, m.pgoff)}
		} else if !f.Leaf && len(p.maps) > 0 {
			return -1
		}
	}
	return model.Intern(b.rawLocs, &b.prof.Locs, k, model.Loc{DSO: k.dso, Addr: k.addr, Func: -1, File: -1})
}

func find(ms []mapping, addr uint64) (mapping, bool) {
	i := sort.Search(len(ms), func(i int) bool { return ms[i].end > addr })
	if i < len(ms) && ms[i].start <= addr {
		return ms[i], true
	}
	return mapping{}, false
}

// miss places an address no known code mapping of pid covers: the address
// is not code (a frame-pointer walk gone astray) and is named by the data
// mapping that holds it, or the process mapped more since its mappings were
// read (read again, at most every rereadEvery).
func (b *Builder) miss(pid uint32, p *process, addr uint64) (mapping, bool) {
	if m, ok := b.data(pid, p, addr); ok {
		return m, true
	}
	now := time.Now()
	if now.Sub(p.reread) < rereadEvery {
		return mapping{}, false
	}
	p.reread = now
	maps, err := b.readMaps(int(pid))
	if err != nil || len(maps) == 0 {
		return mapping{}, false
	}
	p.other = p.other[:0]
	for _, m := range maps {
		if !m.Exec() {
			if m.End > m.Start {
				p.other = append(p.other, m)
			}
			continue
		}
		if _, ok := find(p.maps, m.Start); !ok {
			b.addMapping(pid, p, m.Start, m.End, m.Offset, m.Path, nil)
		}
	}
	if m, ok := find(p.maps, addr); ok {
		return m, true
	}
	return b.data(pid, p, addr)
}

// data finds addr in pid's non-code mappings, making its object on first use.
func (b *Builder) data(pid uint32, p *process, addr uint64) (mapping, bool) {
	i := sort.Search(len(p.other), func(i int) bool { return p.other[i].End > addr })
	if i == len(p.other) || p.other[i].Start > addr {
		return mapping{}, false
	}
	m := p.other[i]
	return mapping{start: m.Start, end: m.End, pgoff: m.Offset, dso: b.dsoFor(pid, m.Path, nil)}, true
}

// SyntheticLoc returns a location that prints as name: separators and
// process names inside combined stacks (the waker part of a wakeup chain).
func (b *Builder) SyntheticLoc(name string) int32 {
	if b.synthetic == nil {
		b.synthetic = map[string]int32{}
	}
	if id, ok := b.synthetic[name]; ok {
		return id
	}
	if b.syntheticDSO < 0 {
		b.syntheticDSO = int32(len(b.prof.DSOs))
		b.prof.DSOs = append(b.prof.DSOs, model.DSO{Name: "[sonde]", Kind: model.DSOUnknown})
		b.objs = append(b.objs, symbolize.Object{}) // named already: the pass leaves it alone
	}
	fn := int32(len(b.prof.Funcs))
	b.prof.Funcs = append(b.prof.Funcs, model.Func{Name: name, DSO: b.syntheticDSO})
	id := int32(len(b.prof.Locs))
	b.prof.Locs = append(b.prof.Locs, model.Loc{DSO: b.syntheticDSO, Func: fn, File: -1})
	b.synthetic[name] = id
	return id
}

// FrameLocs turns unwound frames of pid into location ids.
func (b *Builder) FrameLocs(pid uint32, frames []Frame) []int32 {
	out := make([]int32, 0, len(frames))
	for _, f := range frames {
		id := b.loc(pid, f)
		if id < 0 {
			break // the walk left the process's memory: the rest is junk
		}
		out = append(out, id)
	}
	return out
}

// StackLocs turns a kernel and a user stack read from a BPF stack map (leaf
// first) into location ids, with the same leaf rules as perf call chains.
func (b *Builder) StackLocs(pid uint32, kernel, user []uint64) []int32 {
	s := perf.Sample{}
	if len(kernel) > 0 {
		s.Callchain = append(append(s.Callchain, perf.ContextKernel), kernel...)
	}
	if len(user) > 0 {
		s.Callchain = append(append(s.Callchain, perf.ContextUser), user...)
	}
	if len(s.Callchain) == 0 {
		return nil
	}
	b.frameBuf = FramePointer{}.Frames(&s, 0, b.frameBuf[:0])
	return b.FrameLocs(pid, b.frameBuf)
}

// SampleLocs adds a sample made of location ids (leaf first).
func (b *Builder) SampleLocs(pid, tid uint32, locs []int32, period uint64) {
	b.SampleLocsN(pid, tid, locs, period, 1)
}

// SampleLocsN adds n identical samples (counts aggregated in the kernel).
func (b *Builder) SampleLocsN(pid, tid uint32, locs []int32, period, n uint64) {
	smp := model.Sample{Thread: b.thread(pid, tid), Stack: b.stacks.ID(&b.prof, locs), Period: period}
	for i := uint64(0); i < n; i++ {
		b.prof.Samples = append(b.prof.Samples, smp)
	}
}

// SetComm names a thread (for sources that learn names with their data).
func (b *Builder) SetComm(tid uint32, comm string) { b.comms[tid] = comm }

// SampleCount is the number of samples so far, written or not.
func (b *Builder) SampleCount() int { return b.written + len(b.prof.Samples) }

// Partial is the profile so far, its locations not yet named (recorded
// addresses, Meta.Unsymbolized): what a data file chunk carries while a
// recording runs. The tables only grow; call DropSamples once written.
func (b *Builder) Partial(meta model.Meta) *model.Profile {
	b.prof.Meta = meta
	b.prof.Meta.Unsymbolized = true
	return &b.prof
}

// DropSamples forgets the samples and the stacks so far (they are on
// disk), so memory stays flat however long a recording runs: a
// system-wide recording beside builds meets thousands of new stacks a
// second. A stack seen again keeps its id, and Finish names locations,
// not stacks (the leaves it keeps code for are kept by the index).
func (b *Builder) DropSamples() {
	b.written += len(b.prof.Samples)
	clear(b.prof.Samples) // drop raw payload references
	b.prof.Samples = b.prof.Samples[:0]
	b.stacks.Forget(&b.prof)
}

// Finish names every location and returns the profile. Objects are opened
// now, once each, while they are still on disk.
func (b *Builder) Finish(meta model.Meta) *model.Profile {
	s := b.Symbolizer
	if s == nil {
		s = symbolize.Default()
	}
	return b.FinishWith(s, meta)
}

// Warm starts loading what every process shares (the kernel's symbols,
// the vDSO) for the frames seen so far, with the symbolizer Finish will
// use (symbolize.Default when none is set): a recording calls it as its
// events stop, so the loads overlap its last drain.
func (b *Builder) Warm() {
	if b.Symbolizer == nil {
		b.Symbolizer = symbolize.Default()
	}
	b.Symbolizer.Warm(b.objs)
}

// FinishLive finishes the profile of a live BPF tool (profile, offcpu,
// memleak): it names the target (pid 0: the whole system) and the host,
// adds the tool's warnings, then one when user stacks were taken (user)
// and came out incomplete (stacks).
func (b *Builder) FinishLive(meta model.Meta, pid int, user bool, stacks *stackstat.Completeness, warnings ...string) *model.Profile {
	meta.Target = "system-wide"
	if pid != 0 {
		meta.Target = fmt.Sprintf("pid %d", pid)
	}
	host.Fill(&meta)
	meta.Warnings = append(meta.Warnings, warnings...)
	if user && stacks.Total > stacks.Complete {
		meta.Warnings = append(meta.Warnings, "user "+stacks.String())
	}
	return b.Finish(meta)
}

// FinishWith names locations with s (tests pass fake resolvers).
func (b *Builder) FinishWith(s *symbolize.Symbolizer, meta model.Meta) *model.Profile {
	b.prof.Meta = meta
	if w := b.py.warning(); w != "" {
		b.prof.Meta.Warnings = append(slices.Clip(b.prof.Meta.Warnings), w) // not into the caller's array
	}
	s.ProfileLeaves(&b.prof, b.objs, b.stacks.Leaves())
	return &b.prof
}
