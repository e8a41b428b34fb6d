// Package model is sonde's in-memory profile: samples that point at
// deduplicated stacks, stacks made of locations, locations resolved to
// functions and source lines inside objects (DSOs). Sources fill it, the
// data file stores it, and every view reads it.
package model

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math/bits"

	"github.com/sonde-dev/sonde/internal/model/stackstat"
)

// DSOKind says what kind of object a DSO is; views colour and mark frames by it.
type DSOKind uint8

const (
	DSOUser    DSOKind = iota // an ELF executable or shared library
	DSOKernel                 // [kernel.kallsyms]
	DSOModule                 // a kernel module
	DSOJIT                    // a JIT perf map
	DSOVDSO                   // [vdso]
	DSOUnknown                // anonymous memory without a map
)

// IsKernel reports kernel-side objects.
func (k DSOKind) IsKernel() bool { return k == DSOKernel || k == DSOModule }

func (k DSOKind) String() string {
	switch k {
	case DSOKernel:
		return "kernel"
	case DSOModule:
		return "module"
	case DSOJIT:
		return "jit"
	case DSOVDSO:
		return "vdso"
	case DSOUnknown:
		return "unknown"
	}
	return "user"
}

// Field describes one field of a tracepoint's raw record (tracefs format).
type Field struct {
	Name   string
	Type   string
	Offset int32
	Size   int32
	Signed bool
	Kind   uint8 // tracefs.FieldKind
}

// EventInfo describes one recorded event.
type EventInfo struct {
	Name   string
	Kind   string // software, hardware, hardware-cache, tracepoint
	Freq   uint64
	Period uint64
	Filter string
	Fields []Field // tracepoints only
}

// Meta describes the recording.
type Meta struct {
	Events       []EventInfo // every recorded event; Sample.Event indexes it
	Event        string
	Freq         uint64 // samples/s when sampling by frequency
	Period       uint64 // events per sample when sampling by period
	Callchain    bool
	Target       string   // "system-wide", "pid 123", "command", "cpus 0-1"
	Command      []string // the recorded command line, if any
	Hostname     string
	Kernel       string
	Arch         string
	StartUnixNS  int64
	DurationNS   uint64
	Lost         uint64 // samples the kernel dropped (ring full)
	Throttled    uint64 // throttle events (the kernel lowered the rate)
	SondeVersion string
	ExitCode     int
	Unwinder     string
	// Warnings say what a reader had to assume or skip; one starting with
	// CutWarning means the file ended early and the figures cover what it
	// held.
	Warnings []string
	// Unit of sample periods when they are not event counts: "ns" for
	// blocked time (offcpu, wakeup). Views weigh stacks by period then.
	Unit string
	// UserStacks says how complete the user stacks sonde's BPF unwinder
	// walked are (nil: frame pointers, or no stacks).
	UserStacks *stackstat.Completeness
	// Unsymbolized marks a recording cut before its final chunk: locations
	// still hold recorded addresses (file offsets for mapped files) and
	// objects are named by path and build-id only.
	Unsymbolized bool
}

// Thread is a (pid, tid, comm) triple; a thread that execs gets a new one.
type Thread struct {
	Pid, Tid int32
	Comm     string
	Cgroup   string // its process's cgroup path (v2, else name=systemd's); "" unknown
}

// Intern is key's index in *table: the one ids remembers, or, the first
// time key is seen, the index of value appended to the table.
func Intern[K comparable, V any](ids map[K]int32, table *[]V, key K, value V) int32 {
	if id, ok := ids[key]; ok {
		return id
	}
	id := int32(len(*table))
	ids[key] = id
	*table = append(*table, value)
	return id
}

// Threads interns threads into a profile's Threads table.
type Threads map[Thread]int32

// ID is t's index in p.Threads, appending t the first time it is seen.
func (ts Threads) ID(p *Profile, t Thread) int32 {
	return Intern(ts, &p.Threads, t, t)
}

// Stacks interns stacks (location ids, leaf first) into a profile's Stacks
// table. A stack is known by a 128-bit keyed hash of its ids, not by the
// ids themselves, so the index costs about 40 bytes a stack however deep
// it is: a recording that writes its stacks as it goes can then forget
// them (Forget) and stay flat. Two stacks sharing an id would need both
// 64-bit hashes to collide at once: for a million stacks, odds below
// 1 in 10^26.
type Stacks struct {
	ids    map[stackKey]int32
	seeds  [2]maphash.Seed
	key    []byte
	leaves []uint64 // bit i: location i is the leaf of some stack
}

type stackKey [2]uint64

// ID is locs' index in p.Stacks, appending a copy of locs the first time.
func (s *Stacks) ID(p *Profile, locs []int32) int32 {
	if s.ids == nil {
		s.ids = map[stackKey]int32{}
		s.seeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}
	}
	s.key = s.key[:0]
	for _, id := range locs {
		s.key = binary.LittleEndian.AppendUint32(s.key, uint32(id))
	}
	k := stackKey{maphash.Bytes(s.seeds[0], s.key), maphash.Bytes(s.seeds[1], s.key)}
	if id, ok := s.ids[k]; ok {
		return id
	}
	id := p.StackBase + int32(len(p.Stacks))
	s.ids[k] = id
	p.Stacks = append(p.Stacks, append([]int32(nil), locs...))
	if len(locs) > 0 && locs[0] >= 0 {
		w := int(locs[0]) / 64
		for len(s.leaves) <= w {
			s.leaves = append(s.leaves, 0)
		}
		s.leaves[w] |= 1 << (uint(locs[0]) % 64)
	}
	return id
}

// Leaves are the locations some stack stopped in: those of every stack
// interned, forgotten ones too.
func (s *Stacks) Leaves() map[int32]bool {
	m := map[int32]bool{}
	for w, word := range s.leaves {
		for ; word != 0; word &= word - 1 {
			m[int32(w*64+bits.TrailingZeros64(word))] = true
		}
	}
	return m
}

// Forget drops every stack in p.Stacks so far (they are written out):
// p.StackBase moves past them, and a stack seen again keeps its id, until
// the index passes maxForgotten stacks: then it starts anew, and a stack
// seen again is added again (readers sum samples by their locations, not
// by stack id).
func (s *Stacks) Forget(p *Profile) {
	clear(p.Stacks)
	p.StackBase += int32(len(p.Stacks))
	p.Stacks = p.Stacks[:0]
	if len(s.ids) > maxForgotten {
		clear(s.ids)
	}
}

// maxForgotten bounds the index of a recording's stacks, about 40 bytes
// a stack: a system-wide recording beside builds met 5,000 new stacks a
// second.
const maxForgotten = 256 << 10

// DSO is a loaded object.
type DSO struct {
	Name    string // path, or [kernel.kallsyms], [module], [vdso], [jit]
	BuildID string
	Kind    DSOKind
}

// Func is a named function inside a DSO.
type Func struct {
	Name  string
	DSO   int32
	Start uint64 // address in the object (ELF virtual address, kernel address)
	Size  uint64
}

// Loc is one resolved frame address.
type Loc struct {
	DSO  int32  // index into DSOs, -1 when the address is in no known mapping
	Addr uint64 // address in the object (ELF vaddr); raw address when DSO < 0
	Func int32  // index into Funcs, -1 when no symbol covers Addr
	File int32  // index into Files, -1 without line info
	Line int32
}

// Sample is one recorded sample.
type Sample struct {
	Time   uint64 // CLOCK_MONOTONIC ns
	Thread int32
	CPU    uint32
	Stack  int32
	Period uint64 // event count this sample stands for (ns for cpu-clock)
	Event  uint16 // index into Meta.Events
	Raw    []byte // tracepoint payload (common fields first), nil otherwise
}

// LineRow maps an instruction address to a source line.
type LineRow struct {
	Addr uint64
	File int32 // index into Files
	Line int32
}

// Code is the machine code of one sampled function, kept in the data file
// so annotate works after the binary is gone.
type Code struct {
	Func  int32  // index into Funcs
	Arch  string // "amd64", "arm64"
	Bytes []byte // from Funcs[Func].Start
	Lines []LineRow
}

// Profile is a whole recording.
type Profile struct {
	Meta    Meta
	Threads []Thread
	DSOs    []DSO
	Funcs   []Func
	Files   []string
	Locs    []Loc
	Stacks  [][]int32 // location ids, leaf first
	// StackBase is the id of Stacks[0]: 0 but in a recording that drops
	// the stacks it has written (Stacks.Forget); no reader sees one.
	StackBase int32
	Samples   []Sample
	Code      []Code
	// Groups, when set, stands in for Samples: readers that only aggregate
	// (report, flame graph, pprof) load a file this way in a fraction of the
	// memory. Never stored.
	Groups []SampleGroup
}

// SampleGroup is every sample of one thread, stack and CPU.
type SampleGroup struct {
	Thread int32
	Stack  int32
	CPU    uint32
	Event  uint16
	Extra  string // values of requested tracepoint fields, NUL-separated
	Count  uint64
	Period uint64
}

// GroupKey identifies a SampleGroup.
type GroupKey struct {
	Thread, Stack int32
	CPU           uint32
	Event         uint16
	Extra         string
}

// Grouper accumulates samples into groups.
type Grouper struct {
	index  map[GroupKey]int
	Groups []SampleGroup
	// Extra, when set, computes the Extra key of a sample (tracepoint fields).
	Extra func(s *Sample) string
}

// Add counts one sample.
func (g *Grouper) Add(s Sample) {
	if g.index == nil {
		g.index = map[GroupKey]int{}
	}
	k := GroupKey{Thread: s.Thread, Stack: s.Stack, CPU: s.CPU, Event: s.Event}
	if g.Extra != nil {
		k.Extra = g.Extra(&s)
	}
	i, ok := g.index[k]
	if !ok {
		i = len(g.Groups)
		g.index[k] = i
		g.Groups = append(g.Groups, SampleGroup{Thread: s.Thread, Stack: s.Stack, CPU: s.CPU, Event: s.Event, Extra: k.Extra})
	}
	g.Groups[i].Count++
	g.Groups[i].Period += s.Period
}

// SampleGroups returns Groups, or aggregates Samples when the profile was
// loaded whole.
func (p *Profile) SampleGroups() []SampleGroup {
	if p.Groups != nil {
		return p.Groups
	}
	var g Grouper
	for _, s := range p.Samples {
		g.Add(s)
	}
	if g.Groups == nil {
		return []SampleGroup{}
	}
	return g.Groups
}

// SampleCount is the number of samples, loaded whole or grouped.
func (p *Profile) SampleCount() uint64 {
	if p.Groups != nil {
		var n uint64
		for _, g := range p.Groups {
			n += g.Count
		}
		return n
	}
	return uint64(len(p.Samples))
}

// Validate checks that every index points inside its table, so views can
// index without checks.
func (p *Profile) Validate() error {
	for i, f := range p.Funcs {
		if f.DSO < 0 || int(f.DSO) >= len(p.DSOs) {
			return fmt.Errorf("function %d: bad object index %d", i, f.DSO)
		}
	}
	for i, l := range p.Locs {
		if l.DSO < -1 || int(l.DSO) >= len(p.DSOs) {
			return fmt.Errorf("location %d: bad object index %d", i, l.DSO)
		}
		if l.Func < -1 || int(l.Func) >= len(p.Funcs) {
			return fmt.Errorf("location %d: bad function index %d", i, l.Func)
		}
		if l.File < -1 || int(l.File) >= len(p.Files) {
			return fmt.Errorf("location %d: bad file index %d", i, l.File)
		}
	}
	for i, s := range p.Stacks {
		for _, id := range s {
			if id < 0 || int(id) >= len(p.Locs) {
				return fmt.Errorf("stack %d: bad location index %d", i, id)
			}
		}
	}
	for i, s := range p.Samples {
		if s.Thread < 0 || int(s.Thread) >= len(p.Threads) {
			return fmt.Errorf("sample %d: bad thread index %d", i, s.Thread)
		}
		if s.Stack < 0 || int(s.Stack) >= len(p.Stacks) {
			return fmt.Errorf("sample %d: bad stack index %d", i, s.Stack)
		}
	}
	for i, c := range p.Code {
		if c.Func < 0 || int(c.Func) >= len(p.Funcs) {
			return fmt.Errorf("code %d: bad function index %d", i, c.Func)
		}
		for _, r := range c.Lines {
			if r.File < 0 || int(r.File) >= len(p.Files) {
				return fmt.Errorf("code %d: bad file index %d", i, r.File)
			}
		}
	}
	for i, g := range p.Groups {
		if g.Thread < 0 || int(g.Thread) >= len(p.Threads) || g.Stack < 0 || int(g.Stack) >= len(p.Stacks) {
			return fmt.Errorf("sample group %d: bad index", i)
		}
	}
	if len(p.Meta.Events) > 0 {
		for i, s := range p.Samples {
			if int(s.Event) >= len(p.Meta.Events) {
				return fmt.Errorf("sample %d: bad event index %d", i, s.Event)
			}
		}
	}
	return nil
}

// FrameName is how views print a location: the function name, or
// dso+0xoffset when no symbol covers it (never a bare address).
func (p *Profile) FrameName(loc int32) string {
	l := p.Locs[loc]
	if l.Func >= 0 {
		return p.Funcs[l.Func].Name
	}
	if l.DSO >= 0 {
		return UnnamedFrame(p.DSOs[l.DSO].Name, l.Addr)
	}
	return UnnamedFrame("[unknown]", l.Addr)
}

// UnnamedFrame is how a frame no symbol covers is printed, in recordings
// and live views alike: object+0xaddress.
func UnnamedFrame(dso string, addr uint64) string {
	return fmt.Sprintf("%s+0x%x", baseName(dso), addr)
}

// DSOName is the short name of a location's object.
func (p *Profile) DSOName(loc int32) string {
	l := p.Locs[loc]
	if l.DSO < 0 {
		return "[unknown]"
	}
	return baseName(p.DSOs[l.DSO].Name)
}

// Kind is the kind of a location's object.
func (p *Profile) Kind(loc int32) DSOKind {
	l := p.Locs[loc]
	if l.DSO < 0 {
		return DSOUnknown
	}
	return p.DSOs[l.DSO].Kind
}

// SrcLine gives file:line of a location; without line info (the kernel,
// binaries without DWARF) function+0xoffset, as perf names such rows; else
// dso+0xaddr.
func (p *Profile) SrcLine(loc int32) string {
	l := p.Locs[loc]
	if l.File >= 0 {
		return fmt.Sprintf("%s:%d", p.Files[l.File], l.Line)
	}
	if l.Func >= 0 {
		f := p.Funcs[l.Func]
		if f.Start == 0 || l.Addr < f.Start {
			return f.Name // a synthetic frame, or no start known
		}
		return fmt.Sprintf("%s+0x%x", f.Name, l.Addr-f.Start)
	}
	if l.DSO >= 0 {
		return fmt.Sprintf("%s+0x%x", baseName(p.DSOs[l.DSO].Name), l.Addr)
	}
	return fmt.Sprintf("[unknown]+0x%x", l.Addr)
}

func baseName(s string) string {
	if len(s) > 0 && s[0] == '[' {
		return s
	}
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return s[i+1:]
		}
	}
	return s
}

// BaseName is the last path element (object names in reports).
func BaseName(s string) string { return baseName(s) }

// TotalPeriod sums the period of all samples, loaded whole or grouped.
func (p *Profile) TotalPeriod() uint64 {
	var t uint64
	if p.Groups != nil {
		for _, g := range p.Groups {
			t += g.Period
		}
		return t
	}
	for _, s := range p.Samples {
		t += s.Period
	}
	return t
}

// CutWarning starts the warning every reader (sonde's data files, perf.data
// files and pipe streams) adds to a recording that ends early: everything
// complete before the cut was read.
const CutWarning = "the recording was cut"
