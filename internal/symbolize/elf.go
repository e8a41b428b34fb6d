// Package symbolize turns addresses into function names and source lines:
// ELF symbol tables (and separate debug files), DWARF line tables, C++ and
// Rust demangling, the kernel's kallsyms, JIT perf maps and the vDSO. Each
// source of names is a Resolver; a Symbolizer tries them in order, and one
// pass (Symbolizer.Profile for recordings, Live for live views) names every
// frame, so every part of sonde names frames the same way.
package symbolize

import (
	"bytes"
	"cmp"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"unsafe"

	"github.com/ianlancetaylor/demangle"
)

// Frame is what an address resolves to.
type Frame struct {
	Func      string // demangled function name; "" when unknown
	FuncStart uint64 // address of the function in the object
	FuncSize  uint64
	File      string // source file, "" without line info
	Line      int
	Module    string // kernel module owning a kernel address; "" for vmlinux and user objects
}

// Symbols names the addresses of one opened object (an ELF file, the
// kernel, a JIT map), in the object's own address space.
type Symbols interface {
	Lookup(addr uint64) (Frame, bool)
}

// Symbol is one function symbol.
type Symbol struct {
	Name  string
	Start uint64
	Size  uint64
}

// SymbolTable is a sorted list of functions with nearest-below lookup.
type SymbolTable []Symbol

// NewSymbolTable sorts syms and removes exact duplicates.
func NewSymbolTable(syms []Symbol) SymbolTable {
	sort.Slice(syms, func(i, j int) bool {
		if syms[i].Start != syms[j].Start {
			return syms[i].Start < syms[j].Start
		}
		// Prefer sized, global-looking names for aliases at the same address.
		if (syms[i].Size == 0) != (syms[j].Size == 0) {
			return syms[i].Size != 0
		}
		return len(syms[i].Name) < len(syms[j].Name)
	})
	out := syms[:0]
	for i, s := range syms {
		if i > 0 && s.Start == out[len(out)-1].Start {
			continue
		}
		out = append(out, s)
	}
	if cap(out) > len(out)+len(out)/8 {
		// Grown by append and thinned by deduplication: tables are kept
		// (live views, the agent), the spare capacity need not be.
		out = slices.Clone(out)
	}
	return SymbolTable(out)
}

// Find returns the symbol containing addr. Symbols without a size extend to the
// next symbol (as kallsyms entries do) when sizeless is true.
func (t SymbolTable) Find(addr uint64, sizeless bool) (Symbol, bool) {
	i := sort.Search(len(t), func(i int) bool { return t[i].Start > addr }) - 1
	if i < 0 {
		return Symbol{}, false
	}
	s := t[i]
	if s.Size > 0 {
		if addr < s.Start+s.Size {
			return s, true
		}
		return Symbol{}, false
	}
	if sizeless {
		return s, true
	}
	return Symbol{}, false
}

// ELF is an executable or shared library opened for symbolization.
type ELF struct {
	Path    string
	BuildID string
	Type    elf.Type
	Machine elf.Machine
	full    string // the path opened (through a root prefix)
	ident   fileIdent
	loads   []elf.ProgHeader
	syms    SymbolTable
	lines   *lineTable
	dwarf   *dwarf.Data
	// goLines: a Go binary's own functions are positioned from its
	// pclntab; DWARF is read only for its other code (cgo's C), on the
	// first address the pclntab does not cover (lazyDWARF).
	goLines   *goLineTable
	lazyDWARF bool
}

// Options tune where OpenELF looks for debug information.
type Options struct {
	Root string // prefix for paths of processes in other mount namespaces (/proc/PID/root)
	// Via opens the file when its own path no longer does (a descriptor
	// held open, a deleted file's mapping); the path still names it, for
	// its debug files and what is said about it.
	Via      string
	DebugDir string // default /usr/lib/debug
	// NoLines skips DWARF: function names only. Reading a line table
	// inflates compressed .debug_* sections and keeps a row per
	// instruction range, far more than the symbol table costs.
	NoLines bool
}

// OpenELF loads path's symbols, build-id and, when present, DWARF line info,
// looking into separate debug files for what the binary lacks.
func OpenELF(path string, o Options) (*ELF, error) {
	if o.DebugDir == "" {
		o.DebugDir = "/usr/lib/debug"
	}
	full := path
	if o.Root != "" {
		full = filepath.Join(o.Root, path)
	}
	if o.Via != "" {
		full = o.Via
	}
	f, err := elf.Open(full)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	defer f.Close()
	e := &ELF{Path: path, Type: f.Type, Machine: f.Machine, full: full, ident: identOf(full)}
	e.BuildID = buildID(f)
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			e.loads = append(e.loads, p.ProgHeader)
		}
	}
	funcs := readFuncs(f)
	hasSymtab := f.Section(".symtab") != nil
	var d *dwarf.Data
	if !o.NoLines {
		if e.goLines = newGoLineTable(f); e.goLines == nil {
			d, _ = lineDWARF(f, full)
		}
	}
	if !hasSymtab || (d == nil && e.goLines == nil && !o.NoLines) {
		dbg := findDebugFile(f, path, e.BuildID, o)
		if dbg == "" {
			dbg = fetchDebugFile(e.BuildID, path)
		}
		if dbg != "" {
			if df, err := elf.Open(dbg); err == nil {
				if !hasSymtab {
					funcs = append(funcs, readFuncs(df)...)
					hasSymtab = df.Section(".symtab") != nil
				}
				if d == nil && e.goLines == nil && !o.NoLines {
					d, _ = lineDWARF(df, dbg)
				}
				df.Close()
			}
		}
	}
	if !hasSymtab {
		// MiniDebugInfo (Fedora, CentOS): the static functions' symbols,
		// xz-compressed in .gnu_debugdata; a stripped Go binary still names
		// its functions in its pclntab (what a debug file's .symtab gives).
		funcs = append(funcs, miniDebugInfo(f)...)
		funcs = append(funcs, goFuncSymbols(f)...)
	}
	e.syms = NewSymbolTable(oneNamePerAddress(funcs))
	// PLT stubs come from the binary itself: a debug file's .plt is empty.
	if plt := pltSymbols(f, e.syms); len(plt) > 0 {
		e.syms = NewSymbolTable(append(e.syms, plt...))
	}
	e.dwarf = d
	e.lazyDWARF = e.goLines != nil
	return e, nil
}

// loadLazyDWARF reads the binary's own DWARF the first time code outside
// its Go functions asks for a line.
func (e *ELF) loadLazyDWARF() {
	if !e.lazyDWARF {
		return
	}
	e.lazyDWARF = false
	if f, err := elf.Open(e.full); err == nil {
		e.dwarf, _ = lineDWARF(f, e.full)
		f.Close()
	}
}

// readFuncs reads the functions of .symtab and .dynsym.
func readFuncs(f *elf.File) []elf.Symbol {
	var funcs []elf.Symbol
	add := func(ss []elf.Symbol) {
		for _, s := range ss {
			if elf.ST_TYPE(s.Info) != elf.STT_FUNC && elf.ST_TYPE(s.Info) != elf.STT_GNU_IFUNC {
				continue
			}
			if s.Value == 0 || s.Section == elf.SHN_UNDEF {
				continue
			}
			// .symtab names carry their version (pthread_mutex_lock@@GLIBC_2.2.5);
			// .dynsym's, as debug/elf reads them, do not.
			if i := strings.IndexByte(s.Name, '@'); i > 0 {
				s.Name = s.Name[:i]
			}
			funcs = append(funcs, s)
		}
	}
	if ss, err := f.Symbols(); err == nil {
		add(ss)
	}
	if ss, err := f.DynamicSymbols(); err == nil {
		add(ss)
	}
	sizeSizeless(f, funcs)
	return funcs
}

// sizeSizeless gives a function symbol of size 0 (crti.o's _init and
// _fini, hand-written assembly) the bytes up to the next function or the
// end of its section, as perf does: a sample in _init then reads _init,
// where it read first+0x1000.
func sizeSizeless(f *elf.File, funcs []elf.Symbol) {
	starts := make([]uint64, 0, len(funcs))
	for _, s := range funcs {
		starts = append(starts, s.Value)
	}
	slices.Sort(starts)
	for i := range funcs {
		s := &funcs[i]
		if s.Size != 0 || int(s.Section) >= len(f.Sections) || s.Section >= elf.SHN_LORESERVE {
			continue
		}
		sec := f.Sections[s.Section]
		end := sec.Addr + sec.Size
		if s.Value < sec.Addr || s.Value >= end {
			continue
		}
		if j, _ := slices.BinarySearch(starts, s.Value+1); j < len(starts) {
			end = min(end, starts[j])
		}
		s.Size = end - s.Value
	}
}

// oneNamePerAddress keeps one name per address: of aliases (memcpy and
// __memcpy_avx_unaligned_erms) the one perf reports, so the two tools
// name the same samples alike.
func oneNamePerAddress(funcs []elf.Symbol) []Symbol {
	sort.SliceStable(funcs, func(i, j int) bool { return funcs[i].Value < funcs[j].Value })
	out := make([]Symbol, 0, len(funcs))
	for i := 0; i < len(funcs); {
		best := &funcs[i]
		j := i + 1
		for ; j < len(funcs) && funcs[j].Value == best.Value; j++ {
			if betterSizedAlias(&funcs[j], best) {
				best = &funcs[j]
			}
		}
		out = append(out, Symbol{Name: best.Name, Start: best.Value, Size: best.Size})
		i = j
	}
	return out
}

func buildID(f *elf.File) string {
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOTE {
			continue
		}
		data, err := s.Data()
		if err != nil {
			continue
		}
		if id := parseBuildIDNote(data, f.ByteOrder); id != "" {
			return id
		}
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		data := make([]byte, p.Filesz)
		if _, err := p.ReadAt(data, 0); err != nil {
			continue
		}
		if id := parseBuildIDNote(data, f.ByteOrder); id != "" {
			return id
		}
	}
	return ""
}

// parseBuildIDNote finds an NT_GNU_BUILD_ID note in a note section.
func parseBuildIDNote(data []byte, bo binary.ByteOrder) string {
	for len(data) >= 12 {
		namesz := bo.Uint32(data[0:])
		descsz := bo.Uint32(data[4:])
		typ := bo.Uint32(data[8:])
		nameEnd := 12 + align4(uint64(namesz))
		descEnd := nameEnd + align4(uint64(descsz))
		if descEnd > uint64(len(data)) {
			return ""
		}
		name := data[12 : 12+namesz]
		if typ == 3 && bytes.Equal(bytes.TrimRight(name, "\x00"), []byte("GNU")) {
			return hex.EncodeToString(data[nameEnd : nameEnd+uint64(descsz)])
		}
		data = data[descEnd:]
	}
	return ""
}

func align4(n uint64) uint64 { return (n + 3) &^ 3 }

// FileOffsetToAddr converts an offset in the file (from a mapping) into the
// ELF virtual address that symbols use.
func (e *ELF) FileOffsetToAddr(off uint64) uint64 {
	for _, p := range e.loads {
		if p.Flags&elf.PF_X != 0 && off >= p.Off && off < p.Off+p.Filesz {
			return off - p.Off + p.Vaddr
		}
	}
	for _, p := range e.loads {
		if off >= p.Off && off < p.Off+p.Memsz {
			return off - p.Off + p.Vaddr
		}
	}
	return off
}

// Lookup resolves an ELF virtual address.
func (e *ELF) Lookup(addr uint64) (Frame, bool) {
	var fr Frame
	s, ok := e.syms.Find(addr, false)
	if n, nok := e.syms.Find(addr+1, false); !ok && nok && n.Start == addr+1 {
		// A return address one before a function, in the padding after
		// another: a signal handler's return to the restorer (Go's
		// runtime.sigreturn__sigaction, glibc's __restore_rt), which no
		// call precedes, looked up at return address − 1 like any other.
		s, ok = n, true
	}
	if ok {
		fr.Func = Demangle(s.Name)
		fr.FuncStart, fr.FuncSize = s.Start, s.Size
	}
	if file, line, lok := e.Line(addr); lok {
		fr.File, fr.Line = file, line
		ok = true
	}
	return fr, ok
}

// Line returns the source position of addr from DWARF (or a Go
// binary's pclntab), if any.
func (e *ELF) Line(addr uint64) (string, int, bool) {
	if e.goLines != nil && e.goLines.covers(addr) {
		return e.goLines.line(addr)
	}
	t := e.lineTable()
	if t == nil {
		return "", 0, false
	}
	return t.find(addr)
}

// fileIdent tells one version of a file from another at the same path
// (a binary replaced by a deploy).
type fileIdent struct {
	dev, ino  uint64
	size      int64
	mtimeNano int64
}

func identOf(path string) fileIdent {
	st, err := os.Stat(path)
	if err != nil {
		return fileIdent{}
	}
	id := fileIdent{size: st.Size(), mtimeNano: st.ModTime().UnixNano()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		id.dev, id.ino = uint64(sys.Dev), uint64(sys.Ino)
	}
	return id
}

// Changed reports whether the file opened is now another one (replaced
// on disk); a file that cannot be reached any more has not changed.
func (e *ELF) Changed() bool {
	if e.full == "" || e.ident == (fileIdent{}) {
		return false
	}
	now := identOf(e.full)
	return now != (fileIdent{}) && now != e.ident
}

// Footprint estimates the bytes e keeps: its symbols and, once built, its
// line table.
func (e *ELF) Footprint() int64 {
	n := int64(len(e.syms)) * int64(unsafe.Sizeof(Symbol{}))
	for _, s := range e.syms {
		n += int64(len(s.Name))
	}
	if e.goLines != nil {
		n += int64(len(e.goLines.data))
	}
	if e.lines != nil {
		n += int64(len(e.lines.rows)) * int64(unsafe.Sizeof(lineRow{}))
		for _, f := range e.lines.files {
			n += int64(len(f)) + 16
		}
	}
	return n
}

// lineTable builds the line table on first use and lets the DWARF data
// (inflated debug sections) go: the table is all that is read from it.
func (e *ELF) lineTable() *lineTable {
	if e.lines == nil {
		e.loadLazyDWARF()
	}
	if e.lines == nil && e.dwarf != nil {
		e.lines = buildLineTable(e.dwarf)
		e.dwarf = nil
	}
	return e.lines
}

// HasDWARF says whether line information is available.
func (e *ELF) HasDWARF() bool { return e.dwarf != nil || e.lines != nil || e.goLines != nil }

// Symbols returns the function symbols.
func (e *ELF) Symbols() SymbolTable { return e.syms }

type lineRow struct {
	addr uint64
	file int32 // index into files; -1 marks an end of sequence
	line int32
}

type lineTable struct {
	rows  []lineRow
	files []string
}

// PrepareLines builds the line table of a one-time use from the compile
// units that cover addrs (object addresses) only, and lets the DWARF data
// go: a process's symbols named once at the end of a run ask for the
// lines of a few units of a large binary (a Go program is a unit per
// package), where reading every unit's line program was most of the time
// a recording took to finish. Line and Lines then know only those units
// (and the functions in them), so it is for an object named once and
// dropped, never for one kept to name later addresses.
func (e *ELF) PrepareLines(addrs []uint64) {
	if e.goLines != nil {
		// The pclntab has the Go functions' lines: DWARF only for the rest.
		var rest []uint64
		for _, a := range addrs {
			if !e.goLines.covers(a) {
				rest = append(rest, a)
			}
		}
		if len(rest) == 0 {
			return
		}
		addrs = rest
		e.loadLazyDWARF()
	}
	if e.lines != nil || e.dwarf == nil {
		return
	}
	e.lines = buildLineTableFor(e.dwarf, addrs)
	e.dwarf = nil
}

func buildLineTable(d *dwarf.Data) *lineTable { return buildLineTableFor(d, nil) }

// buildLineTableFor reads the line programs of the units covering addrs
// (sorted or not); nil reads every unit. A unit whose ranges cannot be
// read is read whatever the addresses.
func buildLineTableFor(d *dwarf.Data, addrs []uint64) *lineTable {
	if addrs != nil {
		addrs = slices.Clone(addrs)
		slices.Sort(addrs)
	}
	covers := func(cu *dwarf.Entry) bool {
		if addrs == nil {
			return true
		}
		rs, err := d.Ranges(cu)
		if err != nil || len(rs) == 0 {
			return true
		}
		for _, r := range rs {
			i, _ := slices.BinarySearch(addrs, r[0])
			if i < len(addrs) && addrs[i] < r[1] {
				return true
			}
		}
		return false
	}
	t := &lineTable{}
	fileIdx := map[string]int32{}
	r := d.Reader()
	for {
		cu, err := r.Next()
		if err != nil || cu == nil {
			break
		}
		if cu.Tag != dwarf.TagCompileUnit || !covers(cu) {
			r.SkipChildren()
			continue
		}
		lr, err := d.LineReader(cu)
		r.SkipChildren()
		if err != nil || lr == nil {
			continue
		}
		var le dwarf.LineEntry
		for {
			// A damaged line program ends this unit, not the whole table.
			if err := lr.Next(&le); err != nil {
				break
			}
			if le.EndSequence {
				t.rows = append(t.rows, lineRow{addr: le.Address, file: -1})
				continue
			}
			name := ""
			if le.File != nil {
				name = le.File.Name
			}
			idx, ok := fileIdx[name]
			if !ok {
				idx = int32(len(t.files))
				t.files = append(t.files, name)
				fileIdx[name] = idx
			}
			t.rows = append(t.rows, lineRow{addr: le.Address, file: idx, line: int32(le.Line)})
		}
	}
	slices.SortStableFunc(t.rows, func(a, b lineRow) int { return cmp.Compare(a.addr, b.addr) })
	return t
}

func (t *lineTable) find(addr uint64) (string, int, bool) {
	i := sort.Search(len(t.rows), func(i int) bool { return t.rows[i].addr > addr }) - 1
	if i < 0 {
		return "", 0, false
	}
	// Rows may share an address (one sequence's end and the next one's
	// start): a real row among them wins.
	for j := i; j >= 0 && t.rows[j].addr == t.rows[i].addr; j-- {
		if t.rows[j].file >= 0 {
			i = j
			break
		}
	}
	if t.rows[i].file < 0 || t.rows[i].line == 0 {
		return "", 0, false
	}
	return t.files[t.rows[i].file], int(t.rows[i].line), true
}

// Demangle turns C++ and Rust symbol names into readable ones; other names
// are returned unchanged. A PLT stub's name ("_Znwm@plt") is its
// function's, demangled, with "@plt" kept.
func Demangle(name string) string {
	if base, ok := strings.CutSuffix(name, "@plt"); ok && base != "" {
		return Demangle(base) + "@plt"
	}
	if s, ok := demangleRustLegacy(name); ok {
		return s
	}
	if strings.HasPrefix(name, "_Z") || strings.HasPrefix(name, "_R") || strings.HasPrefix(name, "__Z") {
		// NoRust: a legacy Rust name sonde did not take is read as C++,
		// as c++filt does, not by the module's legacy Rust reader.
		return demangle.Filter(name, demangle.NoClones, demangle.NoRust)
	}
	return name
}

// Arch names the object's architecture as GOARCH does ("" if unknown).
func (e *ELF) Arch() string {
	switch e.Machine {
	case elf.EM_X86_64:
		return "amd64"
	case elf.EM_AARCH64:
		return "arm64"
	case elf.EM_386:
		return "386"
	case elf.EM_ARM:
		return "arm"
	}
	return ""
}

// Code reads size bytes of machine code at the virtual address start.
func (e *ELF) Code(start, size uint64) ([]byte, error) {
	f, err := elf.Open(e.full)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_EXECINSTR == 0 || s.Type != elf.SHT_PROGBITS {
			continue
		}
		if start >= s.Addr && start+size <= s.Addr+s.Size {
			b := make([]byte, size)
			if _, err := s.ReadAt(b, int64(start-s.Addr)); err != nil {
				return nil, err
			}
			return b, nil
		}
	}
	return nil, fmt.Errorf("0x%x+%d is in no code section", start, size)
}

// LineRow is an instruction address and its source position.
type LineRow struct {
	Addr uint64
	File string
	Line int
}

// Lines returns the DWARF line rows in [start, end) (a Go function's
// from the pclntab).
func (e *ELF) Lines(start, end uint64) []LineRow {
	if e.goLines != nil && e.goLines.covers(start) {
		return e.goLines.rows(start, end)
	}
	t := e.lineTable()
	if t == nil {
		return nil
	}
	i := sort.Search(len(t.rows), func(i int) bool { return t.rows[i].addr >= start })
	var out []LineRow
	for ; i < len(t.rows) && t.rows[i].addr < end; i++ {
		r := t.rows[i]
		if r.file < 0 || r.line == 0 {
			continue
		}
		out = append(out, LineRow{Addr: r.addr, File: t.files[r.file], Line: int(r.line)})
	}
	return out
}
