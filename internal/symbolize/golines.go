package symbolize

import (
	"debug/elf"
	"encoding/binary"
	"sort"
)

// goLineTable answers source positions of a Go binary's own functions
// from its pclntab, which the runtime keeps for its tracebacks (so no
// strip removes it) and which is not compressed: naming a Go program's
// frames with lines then inflates no DWARF, where its zlib-compressed
// .debug_line and .debug_info were most of a recording's finish. The
// pclntab's line and file tables are what the linker wrote DWARF's line
// program from: the same positions, the innermost of inlined code.
// Layouts of Go 1.18 and later (little-endian); nil for others, which
// keep DWARF.
type goLineTable struct {
	data                     []byte
	text                     uint64 // .text's address: the functions' entries are offsets from it
	minLC                    uint64 // instruction size quantum
	nfunc                    int
	functab, funcdata, cutab []byte
	filetab, pctab           []byte
}

func newGoLineTable(f *elf.File) *goLineTable {
	pcln, text := f.Section(".gopclntab"), f.Section(".text")
	if pcln == nil || text == nil || pcln.Type == elf.SHT_NOBITS {
		return nil
	}
	data, err := pcln.Data()
	if err != nil || len(data) < 8 {
		return nil
	}
	magic := binary.LittleEndian.Uint32(data)
	ptr := int(data[7])
	if (magic != 0xfffffff0 && magic != 0xfffffff1) || data[4] != 0 || data[5] != 0 || (ptr != 4 && ptr != 8) {
		return nil
	}
	word := func(i int) uint64 {
		o := 8 + i*ptr
		if o+ptr > len(data) {
			return ^uint64(0)
		}
		if ptr == 4 {
			return uint64(binary.LittleEndian.Uint32(data[o:]))
		}
		return binary.LittleEndian.Uint64(data[o:])
	}
	from := func(i int) []byte {
		if o := word(i); o < uint64(len(data)) {
			return data[o:]
		}
		return nil
	}
	g := &goLineTable{data: data, text: text.Addr, minLC: uint64(data[6]), nfunc: int(word(0)),
		cutab: from(4), filetab: from(5), pctab: from(6), funcdata: from(7)}
	g.functab = g.funcdata
	if g.minLC == 0 || g.funcdata == nil || g.nfunc <= 0 || len(g.functab) < (2*g.nfunc+1)*4 {
		return nil
	}
	return g
}

// entry is the address of function i (i ≤ nfunc: the last is the end).
func (g *goLineTable) entry(i int) uint64 {
	return g.text + uint64(binary.LittleEndian.Uint32(g.functab[8*i:]))
}

// fn is the _func record of the function holding pc, with its entry.
func (g *goLineTable) fn(pc uint64) (rec []byte, entry uint64, ok bool) {
	if pc < g.entry(0) || pc >= g.entry(g.nfunc) {
		return nil, 0, false
	}
	i := sort.Search(g.nfunc, func(i int) bool { return g.entry(i) > pc }) - 1
	off := uint64(binary.LittleEndian.Uint32(g.functab[8*i+4:]))
	if off+36 > uint64(len(g.funcdata)) {
		return nil, 0, false
	}
	return g.funcdata[off:], g.entry(i), true
}

// field is the nth uint32 of a _func record: 5 pcfile, 6 pcln, 8 cuOffset.
func field(rec []byte, n int) uint32 { return binary.LittleEndian.Uint32(rec[4*n:]) }

// span is a run of PCs [start, end) sharing one value of a pc-value table.
type span struct {
	start, end uint64
	val        int32
}

// spans decodes pc-value table off of the function at entry, up to limit
// (the runtime's pcvalue: zig-zag value deltas and PC deltas in
// instruction quanta, from value -1, ending at a zero value delta).
func (g *goLineTable) spans(off uint32, entry, limit uint64) []span {
	if off == 0 || uint64(off) >= uint64(len(g.pctab)) {
		return nil
	}
	p := g.pctab[off:]
	pc, val := entry, int32(-1)
	var out []span
	for first := true; pc < limit; first = false {
		uv, n := binary.Uvarint(p)
		if n <= 0 || (uv == 0 && !first) {
			break
		}
		p = p[n:]
		if uv&1 != 0 {
			uv = ^(uv >> 1)
		} else {
			uv >>= 1
		}
		d, n := binary.Uvarint(p)
		if n <= 0 {
			break
		}
		p = p[n:]
		val += int32(uv)
		next := pc + d*g.minLC
		out = append(out, span{pc, next, val})
		pc = next
	}
	return out
}

// file names file number fileno of the compile unit at cu.
func (g *goLineTable) file(cu uint32, fileno int32) (string, bool) {
	i := (uint64(cu) + uint64(fileno)) * 4
	if fileno < 0 || i+4 > uint64(len(g.cutab)) {
		return "", false
	}
	off := binary.LittleEndian.Uint32(g.cutab[i:])
	if off == ^uint32(0) || uint64(off) >= uint64(len(g.filetab)) {
		return "", false
	}
	s := g.filetab[off:]
	for j, c := range s {
		if c == 0 {
			return string(s[:j]), true
		}
	}
	return "", false
}

// covers says whether pc is in one of the binary's Go functions.
func (g *goLineTable) covers(pc uint64) bool {
	_, _, ok := g.fn(pc)
	return ok
}

// line is the source position of pc.
func (g *goLineTable) line(pc uint64) (string, int, bool) {
	rows := g.rows(pc, pc+1)
	if len(rows) == 0 {
		return "", 0, false
	}
	return rows[0].File, rows[0].Line, true
}

// rows are the positions of [start, end) within start's function, a row
// where the position changes (the first at start).
func (g *goLineTable) rows(start, end uint64) []LineRow {
	rec, entry, ok := g.fn(start)
	if !ok {
		return nil
	}
	files := g.spans(field(rec, 5), entry, end)
	lines := g.spans(field(rec, 6), entry, end)
	cu := field(rec, 8)
	var out []LineRow
	fi, li := 0, 0
	for pc := start; pc < end && fi < len(files) && li < len(lines); {
		for fi < len(files) && files[fi].end <= pc {
			fi++
		}
		for li < len(lines) && lines[li].end <= pc {
			li++
		}
		if fi == len(files) || li == len(lines) || files[fi].start > pc || lines[li].start > pc {
			break
		}
		name, ok := g.file(cu, files[fi].val)
		if ok && lines[li].val > 0 {
			if n := len(out); n == 0 || out[n-1].File != name || out[n-1].Line != int(lines[li].val) {
				out = append(out, LineRow{Addr: pc, File: name, Line: int(lines[li].val)})
			}
		}
		pc = min(files[fi].end, lines[li].end)
	}
	return out
}
