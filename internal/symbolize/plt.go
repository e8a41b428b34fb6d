package symbolize

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// A call into a shared library goes through a PLT stub of the caller,
// which no symbol table names: a sample there would show as the object
// plus an offset. perf (dso__synthesize_plt_symbols) and objdump name
// each stub after the symbol of its relocation, "memcmp@plt"; sonde
// reads the same relocations and lays the stubs out by the same rules.

// pltSymbols returns "name@plt" symbols for the PLT stubs of f (x86-64
// and arm64) that no symbol of real covers, and ".plt" for the lazy
// binder's stub, each sized to its entry.
func pltSymbols(f *elf.File, real SymbolTable) []Symbol {
	if f.Class != elf.ELFCLASS64 {
		return nil
	}
	var syn []Symbol
	switch f.Machine {
	case elf.EM_X86_64:
		syn = pltEntries(f, real, x86PLTLayout, uint32(elf.R_X86_64_JMP_SLOT), uint32(elf.R_X86_64_IRELATIVE))
		syn = append(syn, x86PLTGot(f)...)
	case elf.EM_AARCH64:
		syn = pltEntries(f, real, arm64PLTLayout, uint32(elf.R_AARCH64_JUMP_SLOT), uint32(elf.R_AARCH64_IRELATIVE))
	}
	return uncovered(syn, real)
}

// pltLayout says where a PLT's stubs are: an optional header (the lazy
// binder's stub, named ".plt"), then one entry per jump slot.
type pltLayout struct {
	header     Symbol
	first, end uint64 // first entry; end of the section holding the entries
	entry      uint64 // entry size
}

// pltEntries names the entries of .plt (or .plt.sec) in the order of
// the GOT slots of .rela.plt's jump-slot and IRELATIVE relocations: each
// entry jumps through the next slot, whatever order the relocations are
// written in (x86 linkers put IFUNC ones last). Other relocations in
// .rela.plt (lazy TLS descriptors) have no entry of their own.
func pltEntries(f *elf.File, real SymbolTable, layout func(*elf.File, uint64) (pltLayout, bool), slot, irel uint32) []Symbol {
	rs := f.Section(".rela.plt")
	if rs == nil {
		return nil
	}
	rels, err := readRela64(f, rs)
	if err != nil {
		return nil
	}
	rels = slices.DeleteFunc(rels, func(r elf.Rela64) bool {
		t := elf.R_TYPE64(r.Info)
		return t != slot && t != irel
	})
	sort.SliceStable(rels, func(i, j int) bool { return rels[i].Off < rels[j].Off })
	l, ok := layout(f, uint64(len(rels)))
	if !ok {
		return nil
	}
	var out []Symbol
	if l.header.Size > 0 {
		out = append(out, l.header)
	}
	names := relocNamer(f, rs.Link, real)
	for i, r := range rels {
		start := l.first + uint64(i)*l.entry
		if start+l.entry > l.end {
			break
		}
		out = append(out, Symbol{Name: names(r), Start: start, Size: l.entry})
	}
	return out
}

// x86PLTLayout lays out x86-64 PLTs as ld and lld write them. With IBT
// (.plt.sec) the calls go to .plt.sec, and .plt holds only the lazy
// binding stubs, all of it named ".plt" as perf does. Otherwise a .plt
// exactly as long as its entries has no header (static executables,
// some -z now links); a longer one starts with the binder's stub.
func x86PLTLayout(f *elf.File, n uint64) (pltLayout, bool) {
	plt := f.Section(".plt")
	if plt == nil || plt.Type != elf.SHT_PROGBITS {
		return pltLayout{}, false
	}
	if sec := f.Section(".plt.sec"); sec != nil && sec.Type == elf.SHT_PROGBITS {
		return pltLayout{
			header: Symbol{Name: ".plt", Start: plt.Addr, Size: plt.Size},
			first:  sec.Addr, end: sec.Addr + sec.Size, entry: x86PLTEntrySize(sec),
		}, true
	}
	es := x86PLTEntrySize(plt)
	l := pltLayout{first: plt.Addr, end: plt.Addr + plt.Size, entry: es}
	if n*es != plt.Size {
		l.header = Symbol{Name: ".plt", Start: plt.Addr, Size: es}
		l.first += es
	}
	return l, true
}

// x86PLTEntrySize is the section's entry size when the linker recorded
// one (16, or 8 for IBT-less non-lazy stubs); else, as perf assumes,
// 8-byte alignment means 8-byte entries.
func x86PLTEntrySize(s *elf.Section) uint64 {
	if s.Entsize == 8 || s.Entsize == 16 {
		return s.Entsize
	}
	if s.Addralign == 8 {
		return 8
	}
	return 16
}

// arm64PLTLayout lays out an arm64 .plt (see arm64PLTShape).
func arm64PLTLayout(f *elf.File, n uint64) (pltLayout, bool) {
	plt := f.Section(".plt")
	if plt == nil || plt.Type != elf.SHT_PROGBITS {
		return pltLayout{}, false
	}
	header, entry := arm64PLTShape(plt.Size, n)
	l := pltLayout{first: plt.Addr + header, end: plt.Addr + plt.Size, entry: entry}
	if header > 0 {
		l.header = Symbol{Name: ".plt", Start: plt.Addr, Size: header}
	}
	return l, true
}

// arm64PLTShape returns the header and entry sizes of an arm64 .plt of
// size bytes with n entries: a 32-byte header for lazy binding (none in
// a static executable), then 16-byte entries, or 24-byte ones where BTI
// or PAC adds an instruction. ld records no entry size, so the shape
// that makes the section add up wins; a 32-byte header and 16-byte
// entries are the default (a lazy TLS descriptor stub may follow them).
func arm64PLTShape(size, n uint64) (header, entry uint64) {
	for _, es := range []uint64{16, 24} {
		switch size {
		case 32 + n*es:
			return 32, es
		case n * es:
			return 0, es
		}
	}
	return 32, 16
}

// x86PLTGot names the stubs of .plt.got, which ld writes for functions
// that are both called and address-taken (every PIE's __cxa_finalize):
// they jump through a GOT slot that .rela.dyn fills, so each stub's slot
// is read from its jmp instruction.
func x86PLTGot(f *elf.File) []Symbol {
	sec := f.Section(".plt.got")
	rs := f.Section(".rela.dyn")
	if sec == nil || rs == nil || sec.Type != elf.SHT_PROGBITS || sec.Entsize == 0 {
		return nil
	}
	code, err := sec.Data()
	if err != nil {
		return nil
	}
	rels, err := readRela64(f, rs)
	if err != nil {
		return nil
	}
	bySlot := map[uint64]elf.Rela64{}
	for _, r := range rels {
		if elf.R_SYM64(r.Info) != 0 {
			bySlot[r.Off] = r
		}
	}
	names := relocNamer(f, rs.Link, nil)
	var out []Symbol
	for off := uint64(0); off+sec.Entsize <= uint64(len(code)); off += sec.Entsize {
		slot, ok := x86JmpSlot(code[off:off+sec.Entsize], sec.Addr+off)
		if r, found := bySlot[slot]; ok && found {
			out = append(out, Symbol{Name: names(r), Start: sec.Addr + off, Size: sec.Entsize})
		}
	}
	return out
}

var endbr64 = []byte{0xf3, 0x0f, 0x1e, 0xfa}

// x86JmpSlot decodes the "jmp *disp(%rip)" a stub at addr starts with
// (after an endbr64 and a bnd prefix, which IBT and MPX stubs have) into
// the address of the GOT slot it jumps through.
func x86JmpSlot(b []byte, addr uint64) (uint64, bool) {
	n := 0
	if bytes.HasPrefix(b, endbr64) {
		n = len(endbr64)
	}
	if n < len(b) && b[n] == 0xf2 {
		n++
	}
	if n+6 > len(b) || b[n] != 0xff || b[n+1] != 0x25 {
		return 0, false
	}
	disp := int32(binary.LittleEndian.Uint32(b[n+2:]))
	return addr + uint64(n+6) + uint64(int64(disp)), true
}

// relocNamer returns how a relocation's stub is named: after its symbol
// in the symbol table the relocation section links to; an IRELATIVE one
// has none, and is named after the IFUNC whose resolver is at its addend
// (perf's choice), or else as objdump does ("*ABS*+0x…@plt").
func relocNamer(f *elf.File, link uint32, real SymbolTable) func(elf.Rela64) string {
	var syms, all []elf.Symbol
	var loaded, loadedAll bool
	return func(r elf.Rela64) string {
		if i := elf.R_SYM64(r.Info); i != 0 {
			if !loaded {
				syms, loaded = linkedSymbols(f, link), true
			}
			if int(i) <= len(syms) && syms[i-1].Name != "" {
				return syms[i-1].Name + "@plt"
			}
		}
		if !loadedAll {
			all, loadedAll = ifuncSymbols(f), true
		}
		addr := uint64(r.Addend)
		if name := ifuncName(all, addr); name != "" {
			return name + "@plt"
		}
		if s, ok := real.Find(addr, false); ok && s.Start == addr {
			return s.Name + "@plt"
		}
		return fmt.Sprintf("*ABS*+0x%x@plt", addr)
	}
}

// ifuncSymbols reads the IFUNC symbols of both symbol tables: a static
// executable has them in .symtab, a library exports them in .dynsym.
func ifuncSymbols(f *elf.File) []elf.Symbol {
	var out []elf.Symbol
	for _, read := range []func() ([]elf.Symbol, error){f.Symbols, f.DynamicSymbols} {
		ss, _ := read()
		for _, s := range ss {
			if elf.ST_TYPE(s.Info) == elf.STT_GNU_IFUNC && s.Name != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// ifuncName names the IFUNC at addr. Its aliases (memcmp and bcmp, strchr
// and index) are chosen between as perf does: not weak, then global,
// then fewer leading underscores, then the longer name.
func ifuncName(syms []elf.Symbol, addr uint64) string {
	var best *elf.Symbol
	for i := range syms {
		if s := &syms[i]; s.Value == addr && (best == nil || betterAlias(s, best)) {
			best = s
		}
	}
	if best == nil {
		return ""
	}
	return best.Name
}

// betterSizedAlias chooses between two names of one function as perf
// does (sized, then not weak, then global, then fewer leading
// underscores, then the longer name; a tie keeps the first), except that
// fewer leading underscores come first: poll, not its global twin __poll,
// and pthread_mutex_lock, not __pthread_mutex_lock (the names callers
// write). Version suffixes are already gone (readFuncs).
func betterSizedAlias(a, b *elf.Symbol) bool {
	if (a.Size == 0) != (b.Size == 0) {
		return a.Size != 0
	}
	if au, bu := underscores(a.Name), underscores(b.Name); au != bu {
		return au < bu
	}
	return betterAlias(a, b)
}

func underscores(s string) int { return len(s) - len(strings.TrimLeft(s, "_")) }

func betterAlias(a, b *elf.Symbol) bool {
	ab, bb := elf.ST_BIND(a.Info), elf.ST_BIND(b.Info)
	if (ab == elf.STB_WEAK) != (bb == elf.STB_WEAK) {
		return bb == elf.STB_WEAK
	}
	if (ab == elf.STB_GLOBAL) != (bb == elf.STB_GLOBAL) {
		return ab == elf.STB_GLOBAL
	}
	if au, bu := underscores(a.Name), underscores(b.Name); au != bu {
		return au < bu
	}
	return len(a.Name) > len(b.Name)
}

// linkedSymbols reads the symbol table a relocation section links to:
// .dynsym, or .symtab in a static executable. debug/elf leaves out the
// null symbol 0, so relocation symbol i is element i-1.
func linkedSymbols(f *elf.File, link uint32) []elf.Symbol {
	if link == 0 || int(link) >= len(f.Sections) {
		return nil
	}
	var syms []elf.Symbol
	switch f.Sections[link].Type {
	case elf.SHT_DYNSYM:
		syms, _ = f.DynamicSymbols()
	case elf.SHT_SYMTAB:
		syms, _ = f.Symbols()
	}
	return syms
}

// readRela64 decodes a SHT_RELA section of a 64-bit object.
func readRela64(f *elf.File, s *elf.Section) ([]elf.Rela64, error) {
	const size = 24
	if s.Type != elf.SHT_RELA || (s.Entsize != 0 && s.Entsize != size) {
		return nil, fmt.Errorf("%s is not a 64-bit rela section", s.Name)
	}
	data, err := s.Data()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", s.Name, err)
	}
	rels := make([]elf.Rela64, len(data)/size)
	for i := range rels {
		b := data[i*size:]
		rels[i] = elf.Rela64{
			Off:    f.ByteOrder.Uint64(b),
			Info:   f.ByteOrder.Uint64(b[8:]),
			Addend: int64(f.ByteOrder.Uint64(b[16:])),
		}
	}
	return rels, nil
}

// uncovered keeps the synthesized symbols whose range holds no real
// symbol: a symbol table's own name for a stub wins.
func uncovered(syn []Symbol, real SymbolTable) []Symbol {
	out := syn[:0]
	for _, s := range syn {
		if _, ok := real.Find(s.Start, false); ok {
			continue
		}
		i := sort.Search(len(real), func(i int) bool { return real[i].Start >= s.Start })
		if i < len(real) && real[i].Start < s.Start+s.Size {
			continue
		}
		out = append(out, s)
	}
	return out
}
