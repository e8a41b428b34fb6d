package record

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/perf"
	"github.com/sonde-dev/sonde/internal/procfs"
	"github.com/sonde-dev/sonde/internal/symbolize"
)

// Builder turns the kernel's records (samples and side-band) into a
// model.Profile. While recording it only tracks address spaces and
// deduplicates; names are looked up once, in Finish.
type Builder struct {
	prof         model.Profile
	procs        map[uint32]*process
	comms        map[uint32]string // tid → current name
	threads      map[threadKey]int32
	dsos         map[string]int32 // key → index into prof.DSOs
	dsoInfo      []dsoInfo
	rawLocs      map[rawLoc]int32
	stacks       map[string]int32
	keyBuf       []byte
	frames       []int32
	frameBuf     []Frame // reused by the unwinder, one sample at a time
	kernelDSO    int32
	synthetic    map[string]int32
	syntheticDSO int32
	// Unwinder turns a sample into frames; frame pointers by default.
	Unwinder Unwinder
}

type threadKey struct {
	pid, tid uint32
	comm     string
}

type rawLoc struct {
	dso  int32
	addr uint64 // file offset for file-backed objects, address otherwise
}

type dsoInfo struct {
	path    string
	pid     uint32 // a process that mapped it, to reach its mount namespace
	buildID string // from MMAP2, when the kernel gave one
	anon    bool
}

type mapping struct {
	start, end, pgoff uint64
	dso               int32
}

type process struct {
	maps []mapping // sorted by start, non-overlapping
}

// NewBuilder returns an empty builder.
func NewBuilder() *Builder {
	return &Builder{
		procs:        map[uint32]*process{},
		comms:        map[uint32]string{},
		threads:      map[threadKey]int32{},
		dsos:         map[string]int32{},
		rawLocs:      map[rawLoc]int32{},
		stacks:       map[string]int32{},
		kernelDSO:    -1,
		syntheticDSO: -1,
		Unwinder:     FramePointer{},
	}
}

func (b *Builder) proc(pid uint32) *process {
	p := b.procs[pid]
	if p == nil {
		p = &process{}
		b.procs[pid] = p
		// A process we have not seen start: read its current mappings.
		if maps, err := procfs.ReadMaps(int(pid)); err == nil {
			for _, m := range maps {
				if m.Exec() {
					b.addMapping(pid, p, m.Start, m.End, m.Offset, m.Path, nil)
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
	if tids, err := procfs.Threads(pid); err == nil {
		for _, t := range tids {
			if c := procfs.Comm(pid, t); c != "" {
				b.comms[uint32(t)] = c
			}
		}
	}
}

func (b *Builder) dsoFor(pid uint32, path string, buildID []byte) int32 {
	anon := path == "" || path == "//anon" || strings.HasPrefix(path, "[anon") || strings.HasPrefix(path, "/memfd:") || strings.HasPrefix(path, "/dev/zero")
	key := path
	if anon {
		// JIT code lives in anonymous memory and is named per process.
		key = fmt.Sprintf("//anon/%d", pid)
	}
	if len(buildID) > 0 {
		key += "\x00" + hex.EncodeToString(buildID)
	}
	if id, ok := b.dsos[key]; ok {
		return id
	}
	id := int32(len(b.prof.DSOs))
	b.dsos[key] = id
	d := model.DSO{Name: path, Kind: model.DSOUser}
	switch {
	case anon:
		d.Name = fmt.Sprintf("[anon:%d]", pid)
		d.Kind = model.DSOUnknown
	case path == "[vdso]":
		d.Kind = model.DSOVDSO
	case strings.HasPrefix(path, "["):
		d.Kind = model.DSOUnknown
	}
	b.prof.DSOs = append(b.prof.DSOs, d)
	b.dsoInfo = append(b.dsoInfo, dsoInfo{path: path, pid: pid, buildID: hex.EncodeToString(buildID), anon: anon})
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
		comm = procfs.Comm(int(pid), int(tid))
		if comm == "" {
			comm = fmt.Sprintf(":%d", tid)
		}
		b.comms[tid] = comm
	}
	k := threadKey{pid, tid, comm}
	if id, ok := b.threads[k]; ok {
		return id
	}
	id := int32(len(b.prof.Threads))
	b.threads[k] = id
	b.prof.Threads = append(b.prof.Threads, model.Thread{Pid: int32(pid), Tid: int32(tid), Comm: comm})
	return id
}

// Frame is one unwound address.
type Frame struct {
	Addr   uint64
	Kernel bool
	Leaf   bool // the sampled instruction itself, not a return address
}

// Unwinder produces the frames of a sample, leaf first. Frame pointers come
// from the kernel's callchain; a DWARF unwinder would use registers and a
// copy of the user stack instead.
type Unwinder interface {
	Name() string
	Frames(s *perf.Sample, misc uint16, out []Frame) []Frame
}

// FramePointer uses PERF_SAMPLE_CALLCHAIN (or only the IP without -g).
type FramePointer struct{}

// Name implements Unwinder.
func (FramePointer) Name() string { return "fp" }

// Frames implements Unwinder.
func (FramePointer) Frames(s *perf.Sample, misc uint16, out []Frame) []Frame {
	out = out[:0]
	if len(s.Callchain) == 0 {
		return append(out, Frame{Addr: s.IP, Kernel: misc&perf.MiscCPUModeMask == perf.MiscKernel, Leaf: true})
	}
	kernel := misc&perf.MiscCPUModeMask == perf.MiscKernel
	first := true
	for _, ip := range s.Callchain {
		if ip >= perf.ContextMax {
			switch ip {
			case perf.ContextKernel:
				kernel = true
			case perf.ContextUser:
				kernel = false
			}
			continue
		}
		// The user part of a chain starts again at the interrupted user
		// instruction: that one is exact, not a return address.
		leaf := first
		if !kernel && len(out) > 0 && out[len(out)-1].Kernel {
			leaf = true
		}
		out = append(out, Frame{Addr: ip, Kernel: kernel, Leaf: leaf})
		first = false
	}
	return out
}

// Sample adds one sample of the first event.
func (b *Builder) Sample(s *perf.Sample, misc uint16) { b.SampleEvent(s, misc, 0) }

// SampleEvent adds one sample of event ev, keeping its raw payload.
func (b *Builder) SampleEvent(s *perf.Sample, misc uint16, ev uint16) {
	b.frameBuf = b.Unwinder.Frames(s, misc, b.frameBuf[:0])
	b.frames = b.frames[:0]
	for _, f := range b.frameBuf {
		b.frames = append(b.frames, b.loc(s.Pid, f))
	}
	b.keyBuf = b.keyBuf[:0]
	for _, id := range b.frames {
		b.keyBuf = binary.AppendUvarint(b.keyBuf, uint64(id))
	}
	st, ok := b.stacks[string(b.keyBuf)]
	if !ok {
		st = int32(len(b.prof.Stacks))
		b.stacks[string(b.keyBuf)] = st
		b.prof.Stacks = append(b.prof.Stacks, append([]int32(nil), b.frames...))
	}
	var raw []byte
	if len(s.Raw) > 0 {
		raw = append([]byte(nil), s.Raw...)
	}
	b.prof.Samples = append(b.prof.Samples, model.Sample{
		Time: s.Time, Thread: b.thread(s.Pid, s.Tid), CPU: s.CPU, Stack: st, Period: s.Period, Event: ev, Raw: raw,
	})
}

func (b *Builder) loc(pid uint32, f Frame) int32 {
	addr := f.Addr
	if !f.Leaf && addr > 0 {
		// A return address points after the call; the call is what ran.
		addr--
	}
	var k rawLoc
	if f.Kernel {
		if b.kernelDSO < 0 {
			b.kernelDSO = int32(len(b.prof.DSOs))
			b.prof.DSOs = append(b.prof.DSOs, model.DSO{Name: "[kernel.kallsyms]", Kind: model.DSOKernel})
			b.dsoInfo = append(b.dsoInfo, dsoInfo{})
		}
		k = rawLoc{dso: b.kernelDSO, addr: addr}
	} else {
		k = rawLoc{dso: -1, addr: addr}
		p := b.proc(pid)
		i := sort.Search(len(p.maps), func(i int) bool { return p.maps[i].end > addr })
		if i < len(p.maps) && p.maps[i].start <= addr {
			m := p.maps[i]
			if b.dsoInfo[m.dso].anon {
				k = rawLoc{dso: m.dso, addr: addr}
			} else {
				k = rawLoc{dso: m.dso, addr: addr - m.start + m.pgoff}
			}
		}
	}
	if id, ok := b.rawLocs[k]; ok {
		return id
	}
	id := int32(len(b.prof.Locs))
	b.rawLocs[k] = id
	b.prof.Locs = append(b.prof.Locs, model.Loc{DSO: k.dso, Addr: k.addr, Func: -1, File: -1})
	return id
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
		b.dsoInfo = append(b.dsoInfo, dsoInfo{})
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
		out = append(out, b.loc(pid, f))
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
	b.keyBuf = b.keyBuf[:0]
	for _, id := range locs {
		b.keyBuf = binary.AppendUvarint(b.keyBuf, uint64(id))
	}
	st, ok := b.stacks[string(b.keyBuf)]
	if !ok {
		st = int32(len(b.prof.Stacks))
		b.stacks[string(b.keyBuf)] = st
		b.prof.Stacks = append(b.prof.Stacks, append([]int32(nil), locs...))
	}
	smp := model.Sample{Thread: b.thread(pid, tid), Stack: st, Period: period}
	for i := uint64(0); i < n; i++ {
		b.prof.Samples = append(b.prof.Samples, smp)
	}
}

// SetComm names a thread (for sources that learn names with their data).
func (b *Builder) SetComm(tid uint32, comm string) { b.comms[tid] = comm }

// SampleCount is the number of samples so far.
func (b *Builder) SampleCount() int { return len(b.prof.Samples) }

// Finish names every location and returns the profile. Objects are opened
// now, once each, while they are still on disk.
func (b *Builder) Finish(meta model.Meta) *model.Profile {
	p := &b.prof
	p.Meta = meta
	funcs := map[string]int32{}
	files := map[string]int32{}
	addFunc := func(dso int32, fr symbolize.Frame) int32 {
		key := fmt.Sprintf("%d\x00%x\x00%s", dso, fr.FuncStart, fr.Func)
		if id, ok := funcs[key]; ok {
			return id
		}
		id := int32(len(p.Funcs))
		funcs[key] = id
		p.Funcs = append(p.Funcs, model.Func{Name: fr.Func, DSO: dso, Start: fr.FuncStart, Size: fr.FuncSize})
		return id
	}
	addFile := func(f string) int32 {
		if id, ok := files[f]; ok {
			return id
		}
		id := int32(len(p.Files))
		files[f] = id
		p.Files = append(p.Files, f)
		return id
	}
	// Group locations by object so each object is opened once.
	byDSO := map[int32][]int32{}
	for i, l := range p.Locs {
		if l.DSO >= 0 {
			byDSO[l.DSO] = append(byDSO[l.DSO], int32(i))
		}
	}
	dsoIDs := make([]int32, 0, len(byDSO))
	for d := range byDSO {
		dsoIDs = append(dsoIDs, d)
	}
	sort.Slice(dsoIDs, func(i, j int) bool { return dsoIDs[i] < dsoIDs[j] })
	var kernel *symbolize.Kernel
	modules := map[string]int32{}
	var codeBytes uint64
	for _, d := range dsoIDs {
		locs := byDSO[d]
		dso := &p.DSOs[d]
		info := b.dsoInfo[d]
		switch {
		case dso.Kind == model.DSOKernel:
			if kernel == nil {
				var err error
				kernel, err = symbolize.LoadKallsyms()
				if err != nil {
					p.Meta.Warnings = append(p.Meta.Warnings, "kernel frames unnamed: "+err.Error())
					continue
				}
				dso.BuildID = symbolize.KernelBuildID()
			}
			for _, li := range locs {
				l := &p.Locs[li]
				owner := d
				if mod := kernel.Module(l.Addr); mod != "" {
					id, ok := modules[mod]
					if !ok {
						id = int32(len(p.DSOs))
						p.DSOs = append(p.DSOs, model.DSO{Name: "[" + mod + "]", Kind: model.DSOModule})
						modules[mod] = id
						dso = &p.DSOs[d]
					}
					owner = id
					l.DSO = id
				}
				if fr, ok := kernel.Lookup(l.Addr); ok {
					l.Func = addFunc(owner, fr)
				}
			}
		case info.anon:
			pm, err := symbolize.LoadPerfMap(int(info.pid))
			if err != nil {
				continue
			}
			dso.Name = fmt.Sprintf("/tmp/perf-%d.map", info.pid)
			dso.Kind = model.DSOJIT
			for _, li := range locs {
				l := &p.Locs[li]
				if fr, ok := pm.Lookup(l.Addr); ok {
					l.Func = addFunc(d, fr)
				}
			}
		case dso.Kind == model.DSOVDSO:
			v, _, err := symbolize.VDSO()
			if err != nil {
				continue
			}
			dso.BuildID = v.BuildID
			for _, li := range locs {
				l := &p.Locs[li]
				l.Addr = v.FileOffsetToAddr(l.Addr)
				if fr, ok := v.Lookup(l.Addr); ok {
					l.Func = addFunc(d, fr)
				}
			}
		case dso.Kind == model.DSOUser:
			e, err := openObject(info)
			if err != nil {
				p.Meta.Warnings = append(p.Meta.Warnings, fmt.Sprintf("%s: frames unnamed: %v", info.path, err))
				continue
			}
			dso.BuildID = e.BuildID
			if info.buildID != "" && e.BuildID != "" && info.buildID != e.BuildID {
				p.Meta.Warnings = append(p.Meta.Warnings, fmt.Sprintf("%s changed on disk during recording (build-id %s, mapped %s): frames unnamed", info.path, e.BuildID, info.buildID))
				dso.BuildID = info.buildID
				continue
			}
			sampled := map[int32]bool{}
			for _, li := range locs {
				l := &p.Locs[li]
				l.Addr = e.FileOffsetToAddr(l.Addr)
				fr, ok := e.Lookup(l.Addr)
				if !ok {
					continue
				}
				if fr.Func != "" {
					l.Func = addFunc(d, fr)
					sampled[l.Func] = true
				}
				if fr.File != "" {
					l.File = addFile(fr.File)
					l.Line = int32(fr.Line)
				}
			}
			// Keep the code and line rows of sampled functions, so
			// annotate works without the binary.
			ids := make([]int32, 0, len(sampled))
			for id := range sampled {
				ids = append(ids, id)
			}
			sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
			for _, id := range ids {
				f := p.Funcs[id]
				if f.Size == 0 || f.Size > maxCodePerFunc || codeBytes+f.Size > maxCodeTotal {
					continue
				}
				b, err := e.Code(f.Start, f.Size)
				if err != nil {
					continue
				}
				c := model.Code{Func: id, Arch: e.Arch(), Bytes: b}
				for _, r := range e.Lines(f.Start, f.Start+f.Size) {
					c.Lines = append(c.Lines, model.LineRow{Addr: r.Addr, File: addFile(r.File), Line: int32(r.Line)})
				}
				p.Code = append(p.Code, c)
				codeBytes += f.Size
			}
		}
	}
	return p
}

// Code kept per recording for annotate: enough for hot loops, bounded so a
// profile of a huge binary stays small.
const (
	maxCodePerFunc = 256 << 10
	maxCodeTotal   = 16 << 20
)

// openObject opens a mapped file, through the mapping process's root first
// so binaries inside containers are found.
func openObject(info dsoInfo) (*symbolize.ELF, error) {
	path := strings.TrimSuffix(info.path, " (deleted)")
	root := fmt.Sprintf("/proc/%d/root", info.pid)
	if _, err := os.Stat(root + path); err == nil && info.pid != 0 {
		if e, err := symbolize.OpenELF(path, symbolize.Options{Root: root}); err == nil {
			return e, nil
		}
	}
	return symbolize.OpenELF(path, symbolize.Options{})
}
