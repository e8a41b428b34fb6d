// Package unwindtable compiles the DWARF call-frame information of an ELF file
// (.eh_frame, and .debug_frame where present) into compact sorted rows a BPF
// stack walker can binary-search: for each pc range, how to find the CFA and
// where the return address and the caller's frame pointer are.
package unwindtable

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"slices"
)

// Arch is the instruction set a table unwinds.
type Arch uint8

const (
	ArchX86_64 Arch = iota + 1
	ArchARM64
)

func (a Arch) String() string {
	switch a {
	case ArchX86_64:
		return "x86-64"
	case ArchARM64:
		return "arm64"
	}
	return "arch?"
}

// Table is the unwind table of one ELF file.
type Table struct {
	Arch Arch
	// Base is the virtual address Row.PC counts from: 0 when every pc fits in 32
	// bits (shared objects, PIE and classic executables), so PCs are the file's
	// own addresses; otherwise the lowest pc covered.
	Base uint64
	// Rows are sorted by PC; consecutive rows differ in rule. The last row is
	// KindNone, ending the coverage of the last FDE.
	Rows []Row
	// Exec are the file's executable PT_LOAD segments, so a loader can turn a
	// mapping's file offset into the virtual addresses rows use without
	// reopening the file.
	Exec  []Segment
	Stats Stats
}

// Segment is an executable PT_LOAD segment: Size bytes at file offset Off are
// mapped at virtual address Vaddr.
type Segment struct {
	Vaddr, Off, Size uint64
}

// Stats says what went into a table and what could not be represented.
type Stats struct {
	CIEs, FDEs     int  // entries parsed from .eh_frame and .debug_frame
	DebugFrameFDEs int  // FDEs taken from .debug_frame (not covered by .eh_frame)
	SkippedFDEs    int  // empty, outside executable segments, or overlapping an earlier FDE
	BadFDEs        int  // FDEs whose CFA program failed; their range is KindUnsupported
	RawRows        int  // rows before merging consecutive identical rules
	Unsupported    int  // rows of KindUnsupported
	Signal, Stop   int  // rows of KindSignal and KindStop
	SynthPLT       bool // arm64 .plt rows made from the stub layout (ld writes no FDE for it)
	GoFuncs        int  // Go functions, walked by frame pointers (gocode.go)
	GoTopFrames    int  // of which the runtime's top frames, where walks stop
	ParseError     string
}

// Bytes is the size of the encoded rows.
func (t *Table) Bytes() int { return len(t.Rows) * RowSize }

// Lookup returns the row covering the virtual address pc. Pcs before the first
// row get a KindNone row.
func (t *Table) Lookup(pc uint64) Row {
	if pc < t.Base || pc-t.Base >= 1<<32 {
		return Row{Rule: Rule{Kind: KindNone}}
	}
	rel := uint32(pc - t.Base)
	i, found := slices.BinarySearchFunc(t.Rows, rel, func(r Row, pc uint32) int {
		switch {
		case r.PC < pc:
			return -1
		case r.PC > pc:
			return 1
		}
		return 0
	})
	if !found {
		if i == 0 {
			return Row{Rule: Rule{Kind: KindNone}}
		}
		i--
	}
	return t.Rows[i]
}

// Encode returns the rows in their wire form (Row.Encode), ready for a BPF map.
func (t *Table) Encode() []byte {
	b := make([]byte, 0, t.Bytes())
	for _, r := range t.Rows {
		b = r.Encode(b)
	}
	return b
}

// ErrNoUnwindInfo says a file has neither .eh_frame nor .debug_frame.
var ErrNoUnwindInfo = errors.New("no .eh_frame or .debug_frame")

// Build reads an ELF file and compiles its unwind table.
func Build(r io.ReaderAt) (*Table, error) {
	f, err := elf.NewFile(r)
	if err != nil {
		return nil, fmt.Errorf("reading ELF: %w", err)
	}
	defer f.Close()
	return BuildELF(f)
}

// BuildELF compiles the unwind table of an opened ELF file.
func BuildELF(f *elf.File) (*Table, error) {
	t := &Table{}
	ar, err := t.setArch(f.Machine)
	if err != nil {
		return nil, err
	}
	all, err := readFrames(f, &t.Stats)
	if err != nil && !errors.Is(err, ErrNoUnwindInfo) {
		return nil, err // without frame sections, Go code still has its rows
	}
	kept := t.keepLoaded(f, all)
	if len(kept) == 0 {
		return nil, ErrNoUnwindInfo
	}
	if err := t.setBase(kept); err != nil {
		return nil, err
	}
	b := &builder{t: t}
	b.compile(kept, ar)
	t.countKinds()
	t.Rows = slices.Clone(t.Rows) // drop the spare capacity: tables live as long as the cache holds them
	return t, nil
}

// setArch sets t.Arch from the ELF machine and returns its register numbers.
func (t *Table) setArch(m elf.Machine) (archRegs, error) {
	switch m {
	case elf.EM_X86_64:
		t.Arch = ArchX86_64
		return regsX86_64, nil
	case elf.EM_AARCH64:
		t.Arch = ArchARM64
		return regsARM64, nil
	}
	return archRegs{}, fmt.Errorf("building unwind table: unsupported machine %v", m)
}

// fdeSource is one FDE to compile and the section it came from.
type fdeSource struct {
	fde   FDE
	sec   *Section
	prio  int         // -1: Go code (frame pointers) wins over 0: .eh_frame, over 1: .debug_frame for the same pcs, 2: synthesized
	synth []synthRule // rows made by sonde where the linker wrote no FDE
}

// frameReader collects the FDEs of the frame sections of one file.
type frameReader struct {
	sec   Section // what the sections share: byte order, pointer size, text and data bases
	stats *Stats
	all   []fdeSource
	errs  []error
	found bool // a frame section exists, even one that parses to nothing
}

// readFrames parses .eh_frame and .debug_frame. A parse error is noted in
// stats.ParseError and fails the build only when no FDE was recovered.
func readFrames(f *elf.File, stats *Stats) ([]fdeSource, error) {
	r := frameReader{sec: Section{Order: f.ByteOrder, PtrSize: ptrSize(f)}, stats: stats}
	if s := f.Section(".text"); s != nil {
		r.sec.TextAddr = s.Addr
	}
	if s := f.Section(".got"); s != nil {
		r.sec.DataAddr = s.Addr
	}
	if s := f.Section(".eh_frame"); s != nil && s.Type != elf.SHT_NOBITS {
		data, err := s.Data()
		if err != nil {
			return nil, fmt.Errorf("reading .eh_frame: %w", err)
		}
		r.add(EHFrame, data, s.Addr, 0)
	} else if data, addr, ok := ehFrameFromHeader(f); ok {
		// No section headers (or a stripped-down header table): the loader's own
		// route through PT_GNU_EH_FRAME still finds .eh_frame.
		r.add(EHFrame, data, addr, 0)
	}
	if s := f.Section(".debug_frame"); s != nil && s.Type != elf.SHT_NOBITS {
		data, err := s.Data()
		if err != nil {
			return nil, fmt.Errorf("reading .debug_frame: %w", err)
		}
		r.add(DebugFrame, data, 0, 1)
	}
	if !r.found {
		return nil, ErrNoUnwindInfo
	}
	if len(r.errs) > 0 {
		// One line per error, one line in all: errors.Join would add newlines.
		msg := r.errs[0].Error()
		for _, e := range r.errs[1:] {
			msg += "; " + e.Error()
		}
		stats.ParseError = msg
		if len(r.all) == 0 {
			return nil, fmt.Errorf("building unwind table: %w", r.errs[0])
		}
	}
	return r.all, nil
}

// ptrSize is the size of an address in f.
func ptrSize(f *elf.File) int {
	if f.Class == elf.ELFCLASS32 {
		return 4
	}
	return 8
}

// add parses one frame section. Its FDEs share one copy of the section
// description, the one that carries this section's kind and address.
func (r *frameReader) add(kind SectionKind, data []byte, addr uint64, prio int) {
	r.found = true
	s := r.sec
	s.Kind, s.Addr = kind, addr
	fr, err := ParseFrames(data, s)
	if err != nil {
		r.errs = append(r.errs, err)
	}
	if fr == nil {
		return
	}
	r.stats.CIEs += len(fr.CIEs)
	r.stats.FDEs += len(fr.FDEs)
	for _, fd := range fr.FDEs {
		r.all = append(r.all, fdeSource{fde: fd, sec: &s, prio: prio})
	}
}

// keepLoaded records the executable segments in t.Exec and returns, in
// compile order, the FDEs that describe loaded code: .debug_frame of discarded
// sections and FDEs of non-allocated code point elsewhere (often at 0). On
// arm64 the .plt, for which the linker writes no FDE, gets synthesized rows.
func (t *Table) keepLoaded(f *elf.File, all []fdeSource) []fdeSource {
	var exec [][2]uint64
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			exec = append(exec, [2]uint64{p.Vaddr, p.Vaddr + p.Memsz})
			t.Exec = append(t.Exec, Segment{Vaddr: p.Vaddr, Off: p.Off, Size: p.Filesz})
		}
	}
	kept := all[:0]
	for _, s := range all {
		if s.fde.End <= s.fde.Begin || !inSegments(exec, s.fde.Begin, s.fde.End) {
			t.Stats.SkippedFDEs++
			continue
		}
		kept = append(kept, s)
	}
	kept = append(kept, goSources(f, &t.Stats)...)
	if t.Arch == ArchARM64 {
		if b, e, rules, ok := arm64PLT(f); ok && !overlapsAny(kept, b, e, func(s fdeSource) (uint64, uint64) { return s.fde.Begin, s.fde.End }) {
			kept = append(kept, fdeSource{fde: FDE{Begin: b, End: e}, prio: 2, synth: rules})
			t.Stats.SynthPLT = true
		}
	}
	slices.SortFunc(kept, compareSources)
	return kept
}

// inSegments says whether [b, e) lies inside one of the segments exec.
func inSegments(exec [][2]uint64, b, e uint64) bool {
	if len(exec) == 0 {
		return true // no program headers (relocatable or odd file): trust the FDEs
	}
	for _, x := range exec {
		if b >= x[0] && e <= x[1] {
			return true
		}
	}
	return false
}

// compareSources orders FDEs by start; at one start the higher priority
// (.eh_frame, then .debug_frame, then synthesized rows) and then the longer
// FDE come first, since the first FDE to reach a pc keeps it.
func compareSources(a, b fdeSource) int {
	switch {
	case a.fde.Begin != b.fde.Begin:
		if a.fde.Begin < b.fde.Begin {
			return -1
		}
		return 1
	case a.prio != b.prio:
		return a.prio - b.prio
	case a.fde.End != b.fde.End:
		if a.fde.End > b.fde.End {
			return -1
		}
		return 1
	}
	return 0
}

// setBase moves Base off 0 when pcs reach past 32 bits, so that row offsets
// from it still fit.
func (t *Table) setBase(kept []fdeSource) error {
	maxEnd := uint64(0)
	for _, s := range kept {
		maxEnd = max(maxEnd, s.fde.End)
	}
	if maxEnd > 1<<32 {
		t.Base = kept[0].fde.Begin
		if maxEnd-t.Base > 1<<32 {
			return fmt.Errorf("building unwind table: code spans %#x bytes, more than 32-bit row offsets reach", maxEnd-t.Base)
		}
	}
	return nil
}

// countKinds counts the rows that stop or divert the walker.
func (t *Table) countKinds() {
	for _, r := range t.Rows {
		switch r.Kind {
		case KindUnsupported:
			t.Stats.Unsupported++
		case KindSignal:
			t.Stats.Signal++
		case KindStop:
			t.Stats.Stop++
		}
	}
}

// builder appends rows in pc order, merging a row into the previous one when
// it unwinds the same way and replacing an empty predecessor at the same pc.
type builder struct {
	t       *Table
	scratch []stateRow // the CFA table of the last FDE run, reused for the next
}

// compile appends the rows of the sorted FDEs. covered is the end of the pcs
// described so far: an FDE overlapping them keeps only what lies beyond, and
// a gap between FDEs gets a KindNone row.
func (b *builder) compile(kept []fdeSource, ar archRegs) {
	t := b.t
	// Compilers emit about six rows per FDE; one allocation in the common case.
	t.Rows = make([]Row, 0, 8*len(kept))
	covered := uint64(0)
	for _, s := range kept {
		begin := s.fde.Begin
		if begin < covered {
			if s.fde.End <= covered {
				t.Stats.SkippedFDEs++
				continue
			}
			begin = covered // partial overlap: the earlier FDE keeps its pcs
		}
		if s.prio == 1 {
			t.Stats.DebugFrameFDEs++
		}
		if begin > covered && covered != 0 {
			b.add(covered, Rule{Kind: KindNone})
		}
		if s.synth != nil {
			b.addSynth(s.synth, begin)
		} else {
			b.addFDE(&s.fde, s.sec, begin, ar)
		}
		covered = s.fde.End
	}
	b.add(covered, Rule{Kind: KindNone})
}

// addSynth appends the synthesized rows from begin on.
func (b *builder) addSynth(rules []synthRule, begin uint64) {
	for _, r := range rules {
		if r.pc >= begin {
			b.add(r.pc, r.rule)
		}
	}
}

// addFDE runs the CFA program of fd and appends its rows from begin on. A
// program that fails leaves its whole range KindUnsupported.
func (b *builder) addFDE(fd *FDE, sec *Section, begin uint64, ar archRegs) {
	rows, err := run(fd, sec, regs{sp: ar.sp, fp: ar.fp, ra: fd.CIE.RAColumn}, b.scratch)
	b.scratch = rows
	if err != nil {
		b.t.Stats.BadFDEs++
		b.add(begin, Rule{Kind: KindUnsupported})
		return
	}
	for i, sr := range rows {
		start, end := sr.pc, fd.End
		if i+1 < len(rows) {
			end = min(end, rows[i+1].pc)
		}
		start = max(start, begin)
		if start >= end {
			continue
		}
		b.add(start, rowFor(&sr.st, fd.CIE, ar))
	}
}

func (b *builder) add(pc uint64, rule Rule) {
	b.t.Stats.RawRows++
	r := Row{PC: uint32(pc - b.t.Base), Rule: rule}
	rows := b.t.Rows
	if n := len(rows); n > 0 {
		if rows[n-1].PC == r.PC {
			rows = rows[:n-1]
		}
	}
	if n := len(rows); n > 0 && rows[n-1].Rule == r.Rule {
		b.t.Rows = rows
		return
	}
	b.t.Rows = append(rows, r)
}

// ehFrameFromHeader finds .eh_frame through PT_GNU_EH_FRAME when the section
// headers do not name it. The header gives the start of .eh_frame; its end is
// the end of the segment that holds it (parsing stops at the zero terminator).
func ehFrameFromHeader(f *elf.File) ([]byte, uint64, bool) {
	var hdr *elf.Prog
	for _, p := range f.Progs {
		if p.Type == elf.PT_GNU_EH_FRAME {
			hdr = p
		}
	}
	if hdr == nil || hdr.Filesz < 8 {
		return nil, 0, false
	}
	h := make([]byte, 8+8)
	n, _ := hdr.ReadAt(h, 0)
	if n < 8 || h[0] != 1 {
		return nil, 0, false
	}
	s := Section{Order: f.ByteOrder, PtrSize: ptrSize(f), Addr: hdr.Vaddr, DataAddr: hdr.Vaddr}
	r := &buf{b: h[:n], off: 4, order: f.ByteOrder}
	ehAddr := r.pointer(h[1], &s, 0)
	if r.err != nil {
		return nil, 0, false
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD || ehAddr < p.Vaddr || ehAddr >= p.Vaddr+p.Filesz {
			continue
		}
		n := p.Vaddr + p.Filesz - ehAddr
		if n > 1<<30 {
			return nil, 0, false // not a plausible .eh_frame: refuse the allocation
		}
		data := make([]byte, n)
		if n, err := p.ReadAt(data, int64(ehAddr-p.Vaddr)); err != nil && n < len(data) {
			return nil, 0, false
		}
		return data, ehAddr, true
	}
	return nil, 0, false
}

type synthRule struct {
	pc   uint64
	rule Rule
}

func overlapsAny[T any](xs []T, b, e uint64, span func(T) (uint64, uint64)) bool {
	for _, x := range xs {
		if xb, xe := span(x); xb < e && b < xe {
			return true
		}
	}
	return false
}

// AArch64 instructions that identify the PLT header GNU ld writes.
const (
	arm64StpX16X30 = 0xa9bf7bf0 // stp x16, x30, [sp, #-16]!
	arm64BTIC      = 0xd503245f // bti c
	arm64PLT0Size  = 32
)

// arm64PLT describes the .plt of an arm64 file, for which GNU ld emits no
// unwind information. Every stub after the 32-byte header only loads a GOT
// entry and branches: SP is untouched and the return address is in x30. The
// header (reached on lazy binding) first pushes x16 and x30, then jumps to the
// resolver, which has its own FDE. The header is recognised by its first
// instructions; an unknown layout gets no rows.
func arm64PLT(f *elf.File) (begin, end uint64, rules []synthRule, ok bool) {
	s := f.Section(".plt")
	if s == nil || s.Type != elf.SHT_PROGBITS || s.Size < arm64PLT0Size {
		return 0, 0, nil, false
	}
	head := make([]byte, 8)
	if _, err := s.ReadAt(head, 0); err != nil {
		return 0, 0, nil, false
	}
	w0, w1 := f.ByteOrder.Uint32(head), f.ByteOrder.Uint32(head[4:])
	var pushed uint64 // address of the first instruction after the push
	switch {
	case w0 == arm64StpX16X30:
		pushed = s.Addr + 4
	case w0 == arm64BTIC && w1 == arm64StpX16X30:
		pushed = s.Addr + 8
	default:
		return 0, 0, nil, false
	}
	inLR := Rule{Kind: KindSP, Flags: FlagRAInLR}
	return s.Addr, s.Addr + s.Size, []synthRule{
		{s.Addr, inLR},
		{pushed, Rule{Kind: KindSP, CFA: 2, RA: -1}},
		{s.Addr + arm64PLT0Size, inLR},
	}, true
}
