package perfdata

import (
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/sonde-dev/sonde/internal/model"
)

// Options say where to look for what a recording needs to be named.
type Options struct {
	// BuildIDDir is perf's build-id cache; "" means $PERF_BUILDID_DIR,
	// else ~/.debug.
	BuildIDDir string
	// DebugDir holds separate debug files; "" means /usr/lib/debug.
	DebugDir string
	// SymFS is prepended to object paths (like perf report --symfs), for
	// recordings of another machine's file system.
	SymFS string
	// Kallsyms is a kallsyms file of the recorded kernel. Without it the
	// running kernel's is used when its build-id matches the recording's,
	// else the copy in the build-id cache.
	Kallsyms string
}

// Unmatched is an object whose frames stay unnamed, and why.
type Unmatched struct {
	Name    string
	BuildID string
	Reason  string
	Samples uint64 // samples with at least one frame in it
}

// Result is what an import learned besides the profile.
type Result struct {
	File      *File
	Unmatched []Unmatched
}

// Open reads a perf.data file into sonde's model, symbolized, with the
// default search paths. Objects that could not be named are listed in the
// profile's warnings.
func Open(path string) (*model.Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening perf.data: %w", err)
	}
	defer f.Close()
	p, _, err := Convert(f, Options{})
	return p, err
}

// Convert reads perf.data from r and builds a symbolized profile.
func Convert(r io.Reader, o Options) (*model.Profile, *Result, error) {
	return convert(r, o, true)
}

// convert reads and converts; without symbols it leaves every location
// unnamed and touches no file of this machine (for fuzzing).
func convert(r io.Reader, o Options, symbols bool) (*model.Profile, *Result, error) {
	c := newConverter()
	f, err := Read(r, c.record)
	if err != nil {
		return nil, nil, err
	}
	if f.Stats.Samples == 0 && compressed(f) > 0 {
		return nil, nil, errCompressed
	}
	res := &Result{File: f}
	p := c.finish(f, o, res, symbols)
	if err := p.Validate(); err != nil {
		return nil, nil, fmt.Errorf("converting perf.data: %w", err)
	}
	return p, res, nil
}

// converter follows the recording's processes through its side-band
// records and turns samples into deduplicated stacks.
type converter struct {
	prof     model.Profile
	procs    map[uint32]*process
	comms    map[uint32]string
	threads  model.Threads
	dsos     map[string]int32
	dsoInfo  []dsoInfo
	rawLocs  map[rawLoc]int32
	stacks   model.Stacks
	frames   []int32
	kernel   int32  // index of [kernel.kallsyms], -1 before the first kernel frame
	kernRef  string // the symbol the kernel map is relative to ("_text")
	kernAddr uint64 // its address in the recording
	attrHits map[int]uint64
	dwarf    bool // user stacks need DWARF unwinding sonde does not do here
	// ksyms is kernel code named by KSYMBOL records (BPF programs,
	// trampolines), sorted by start: kallsyms read later may miss it.
	ksyms []ksym
}

type ksym struct {
	start, end uint64
	loc        int32 // a location per program; samples in it share it
	name       string
}

type rawLoc struct {
	dso  int32
	addr uint64 // file offset for file-backed objects, address otherwise
}

type dsoInfo struct {
	path    string
	pid     uint32
	buildID string
	anon    bool
	named   bool // its locations are named already (KSYMBOL code)
}

type mapping struct {
	start, end, pgoff uint64
	dso               int32
}

type process struct {
	maps []mapping // sorted by start, non-overlapping
}

func newConverter() *converter {
	return &converter{
		procs: map[uint32]*process{}, comms: map[uint32]string{}, threads: model.Threads{},
		dsos: map[string]int32{}, rawLocs: map[rawLoc]int32{},
		kernel: -1, attrHits: map[int]uint64{},
	}
}

func (c *converter) record(r *Record) error {
	switch r.Type {
	case RecordSample:
		c.sample(r)
	case RecordMmap, RecordMmap2:
		c.mmap(r)
	case RecordKsymbol:
		c.ksymbol(r.Ksymbol)
	case RecordComm:
		c.comms[r.Comm.Tid] = r.Comm.Comm
		if r.Comm.Exec {
			// exec replaces the address space.
			c.procs[r.Comm.Pid] = &process{}
		}
	case RecordFork:
		t := r.Task
		if name, ok := c.comms[t.Ptid]; ok {
			c.comms[t.Tid] = name
		}
		if t.Pid != t.Ppid {
			child := &process{}
			if parent := c.procs[t.Ppid]; parent != nil {
				child.maps = append([]mapping(nil), parent.maps...)
			}
			c.procs[t.Pid] = child
		}
	}
	return nil
}

// ksymbol registers or drops a piece of kernel code named outside kallsyms.
func (c *converter) ksymbol(k Ksymbol) {
	i := sort.Search(len(c.ksyms), func(i int) bool { return c.ksyms[i].start >= k.Addr })
	if k.Unregister {
		if i < len(c.ksyms) && c.ksyms[i].start == k.Addr {
			c.ksyms = append(c.ksyms[:i], c.ksyms[i+1:]...)
		}
		return
	}
	if k.Len == 0 || k.Name == "" {
		return
	}
	e := ksym{start: k.Addr, end: k.Addr + uint64(k.Len), loc: -1, name: k.Name}
	if i < len(c.ksyms) && c.ksyms[i].start == k.Addr {
		c.ksyms[i] = e
		return
	}
	c.ksyms = append(c.ksyms, ksym{})
	copy(c.ksyms[i+1:], c.ksyms[i:])
	c.ksyms[i] = e
}

// ksymLoc names a kernel address inside a KSYMBOL's code as perf does: the
// program is both the object and the function.
func (c *converter) ksymLoc(addr uint64) (int32, bool) {
	i := sort.Search(len(c.ksyms), func(i int) bool { return c.ksyms[i].end > addr })
	if i == len(c.ksyms) || c.ksyms[i].start > addr {
		return 0, false
	}
	k := &c.ksyms[i]
	if k.loc < 0 {
		dso := int32(len(c.prof.DSOs))
		c.prof.DSOs = append(c.prof.DSOs, model.DSO{Name: k.name, Kind: model.DSOModule})
		c.dsoInfo = append(c.dsoInfo, dsoInfo{path: k.name, named: true})
		fn := int32(len(c.prof.Funcs))
		c.prof.Funcs = append(c.prof.Funcs, model.Func{Name: k.name, DSO: dso, Start: k.start, Size: k.end - k.start})
		k.loc = int32(len(c.prof.Locs))
		c.prof.Locs = append(c.prof.Locs, model.Loc{DSO: dso, Addr: k.start, Func: fn, File: -1})
	}
	return k.loc, true
}

func (c *converter) proc(pid uint32) *process {
	p := c.procs[pid]
	if p == nil {
		p = &process{}
		c.procs[pid] = p
	}
	return p
}

func (c *converter) mmap(r *Record) {
	m := r.Mmap
	if m.Pid == ^uint32(0) {
		// The kernel's own map says where it was loaded (KASLR); modules
		// are named from kallsyms.
		if name, ok := strings.CutPrefix(m.Filename, "[kernel.kallsyms]"); ok && name != "" {
			c.kernRef, c.kernAddr = name, m.Pgoff
		}
		return
	}
	if m.Prot&0x4 == 0 { // PROT_EXEC: only code matters for stacks
		return
	}
	if m.Len == 0 || m.Addr+m.Len < m.Addr {
		return
	}
	p := c.proc(m.Pid)
	nm := mapping{start: m.Addr, end: m.Addr + m.Len, pgoff: m.Pgoff, dso: c.dsoFor(m.Pid, m.Filename, m.BuildID)}
	// Cut what the new mapping covers out of older ones (MAP_FIXED, dlopen).
	out := make([]mapping, 0, len(p.maps)+2)
	for _, old := range p.maps {
		if old.end <= nm.start || old.start >= nm.end {
			out = append(out, old)
			continue
		}
		if old.start < nm.start {
			out = append(out, mapping{start: old.start, end: nm.start, pgoff: old.pgoff, dso: old.dso})
		}
		if old.end > nm.end {
			out = append(out, mapping{start: nm.end, end: old.end, pgoff: old.pgoff + (nm.end - old.start), dso: old.dso})
		}
	}
	out = append(out, nm)
	sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
	p.maps = out
}

// isAnon tells anonymous executable memory (JIT code) by perf's rules; a
// memfd is a file to perf, named by its path.
func isAnon(path string) bool {
	return path == "" || path == "//anon" || strings.HasPrefix(path, "[anon") ||
		strings.HasPrefix(path, "/dev/zero") || strings.HasPrefix(path, "/anon_hugepage")
}

func (c *converter) dsoFor(pid uint32, path string, buildID []byte) int32 {
	anon := isAnon(path)
	key := path
	if anon {
		// JIT code lives in anonymous memory and is named per process.
		key = fmt.Sprintf("//anon/%d", pid)
	}
	if len(buildID) > 0 {
		key += "\x00" + hex.EncodeToString(buildID)
	}
	if id, ok := c.dsos[key]; ok {
		return id
	}
	id := int32(len(c.prof.DSOs))
	c.dsos[key] = id
	d := model.DSO{Name: path, Kind: model.DSOUser}
	switch {
	case anon:
		// perf names JIT code after the map that would name it.
		d.Name = fmt.Sprintf("/tmp/perf-%d.map", pid)
		d.Kind = model.DSOUnknown
	case path == "[vdso]":
		d.Kind = model.DSOVDSO
	case strings.HasPrefix(path, "["):
		d.Kind = model.DSOUnknown
	}
	c.prof.DSOs = append(c.prof.DSOs, d)
	c.dsoInfo = append(c.dsoInfo, dsoInfo{path: path, pid: pid, buildID: hex.EncodeToString(buildID), anon: anon})
	return id
}

func (c *converter) thread(pid, tid uint32) int32 {
	comm, ok := c.comms[tid]
	if !ok {
		// perf's names for threads it has not seen named.
		comm = fmt.Sprintf(":%d", int32(tid))
		if tid == 0 {
			comm = "swapper"
		}
		c.comms[tid] = comm
	}
	return c.threads.ID(&c.prof, model.Thread{Pid: int32(pid), Tid: int32(tid), Comm: comm})
}

// frame modes while walking a callchain.
const (
	modeUser = iota
	modeKernel
	modeOther // hypervisor and guests: kept as unknown addresses
)

func (c *converter) sample(r *Record) {
	s := &r.Sample
	c.attrHits[r.Attr]++
	c.frames = c.frames[:0]
	mode := modeOther
	switch r.CPUMode() {
	case MiscKernel:
		mode = modeKernel
	case MiscUser:
		mode = modeUser
	}
	if len(s.Callchain) == 0 {
		c.frames = append(c.frames, c.loc(s.Pid, s.IP, mode, true))
	} else {
		first, prevKernel := true, false
		for _, ip := range s.Callchain {
			if ip >= ContextMax {
				switch ip {
				case ContextKernel, ContextGuestKernel:
					mode = modeKernel
				case ContextUser, ContextGuestUser:
					mode = modeUser
				case ContextHV, ContextGuest:
					mode = modeOther
				}
				continue
			}
			// The first frame is the sampled instruction; so is the first
			// user frame after kernel ones (where the kernel was entered).
			leaf := first || (mode == modeUser && prevKernel)
			c.frames = append(c.frames, c.loc(s.Pid, ip, mode, leaf))
			first, prevKernel = false, mode == modeKernel
		}
		if len(c.frames) == 0 {
			c.frames = append(c.frames, c.loc(s.Pid, s.IP, mode, true))
		}
	}
	st := c.stacks.ID(&c.prof, c.frames)
	// Event holds the attribute index until finish renumbers events.
	c.prof.Samples = append(c.prof.Samples, model.Sample{
		Time: s.Time, Thread: c.thread(s.Pid, s.Tid), CPU: s.CPU, Stack: st,
		Period: s.Period, Event: uint16(max(r.Attr, 0)), Raw: s.Raw,
	})
}

func (c *converter) loc(pid uint32, addr uint64, mode int, leaf bool) int32 {
	if !leaf && addr > 0 {
		// A return address points after the call; the call is what ran.
		addr--
	}
	k := rawLoc{dso: -1, addr: addr}
	switch mode {
	case modeKernel:
		if id, ok := c.ksymLoc(addr); ok {
			return id
		}
		if c.kernel < 0 {
			c.kernel = int32(len(c.prof.DSOs))
			c.prof.DSOs = append(c.prof.DSOs, model.DSO{Name: "[kernel.kallsyms]", Kind: model.DSOKernel})
			c.dsoInfo = append(c.dsoInfo, dsoInfo{path: "[kernel.kallsyms]"})
		}
		k.dso = c.kernel
	case modeUser:
		p := c.proc(pid)
		i := sort.Search(len(p.maps), func(i int) bool { return p.maps[i].end > addr })
		if i < len(p.maps) && p.maps[i].start <= addr {
			m := p.maps[i]
			k.dso = m.dso
			if !c.dsoInfo[m.dso].anon {
				k.addr = addr - m.start + m.pgoff
			}
		}
	}
	return model.Intern(c.rawLocs, &c.prof.Locs, k, model.Loc{DSO: k.dso, Addr: k.addr, Func: -1, File: -1})
}

// Format is what a file holds, told from its first bytes.
type Format int

const (
	FormatOther  Format = iota // not perf's: sonde's own data, folded stacks, …
	FormatData                 // perf.data (file or pipe format)
	FormatScript               // perf script text
)

// SniffLen is how many leading bytes Sniff wants.
const SniffLen = 4096

// Sniff tells perf.data and perf script text from other inputs by their
// first bytes (up to SniffLen), so -i can take either.
func Sniff(head []byte) Format {
	switch {
	case IsPerfData(head):
		return FormatData
	case LooksLikeScript(head):
		return FormatScript
	}
	return FormatOther
}

// OpenScript reads a file of perf script text into sonde's model.
func OpenScript(path string) (*model.Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening perf script text: %w", err)
	}
	defer f.Close()
	return ScriptProfile(f)
}
