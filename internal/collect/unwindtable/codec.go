package unwindtable

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The encoded form of a Table, for the on-disk cache (internal/collect/
// diskcache), which adds the version check of its container and a
// checksum around it. Rows take 2–4 bytes instead of RowSize: each pc as
// the uvarint distance from the previous row's, each rule as a uvarint
// index into the table's own list of distinct rules.
//
//	u8 codecVersion, u8 arch, uvarint base
//	uvarint n, n × (uvarint vaddr, off, size)        executable segments
//	stats: uvarint × 12 (SynthPLT last), uvarint length + bytes of ParseError
//	uvarint n, n × RuleSize bytes                    distinct rules
//	uvarint n, n × (uvarint pc delta, uvarint rule)  rows
const codecVersion = 1

// MarshalBinary encodes the table (see codecVersion).
func (t *Table) MarshalBinary() ([]byte, error) {
	index := map[Rule]uint64{}
	var rules []Rule
	for _, r := range t.Rows {
		if _, ok := index[r.Rule]; !ok {
			index[r.Rule] = uint64(len(rules))
			rules = append(rules, r.Rule)
		}
	}
	b := make([]byte, 0, 64+len(rules)*RuleSize+len(t.Rows)*3)
	b = append(b, codecVersion, byte(t.Arch))
	b = binary.AppendUvarint(b, t.Base)
	b = binary.AppendUvarint(b, uint64(len(t.Exec)))
	for _, s := range t.Exec {
		b = binary.AppendUvarint(b, s.Vaddr)
		b = binary.AppendUvarint(b, s.Off)
		b = binary.AppendUvarint(b, s.Size)
	}
	for _, v := range statInts(&t.Stats) {
		b = binary.AppendUvarint(b, uint64(*v))
	}
	synth := uint64(0)
	if t.Stats.SynthPLT {
		synth = 1
	}
	b = binary.AppendUvarint(b, synth)
	b = binary.AppendUvarint(b, uint64(len(t.Stats.ParseError)))
	b = append(b, t.Stats.ParseError...)
	b = binary.AppendUvarint(b, uint64(len(rules)))
	for _, r := range rules {
		b = r.Encode(b)
	}
	b = binary.AppendUvarint(b, uint64(len(t.Rows)))
	prev := uint32(0)
	for _, r := range t.Rows {
		b = binary.AppendUvarint(b, uint64(r.PC-prev))
		b = binary.AppendUvarint(b, index[r.Rule])
		prev = r.PC
	}
	return b, nil
}

// statInts are the counters of s in their encoded order.
func statInts(s *Stats) []*int {
	return []*int{&s.CIEs, &s.FDEs, &s.DebugFrameFDEs, &s.SkippedFDEs, &s.BadFDEs, &s.RawRows,
		&s.Unsupported, &s.Signal, &s.Stop, &s.GoFuncs, &s.GoTopFrames}
}

// ErrBadTable says encoded table bytes are not a table this sonde wrote.
var ErrBadTable = errors.New("not an encoded unwind table")

// UnmarshalTable decodes a table written by MarshalBinary. Every count is
// bounded by the bytes left and every row checked (pcs increasing, rule
// indexes and kinds valid), so corrupt input is an error, never a panic
// or a huge allocation.
func UnmarshalTable(b []byte) (*Table, error) {
	d := decoder{b: b}
	if len(b) < 2 || b[0] != codecVersion {
		return nil, fmt.Errorf("%w: version %d", ErrBadTable, firstByte(b))
	}
	t := &Table{Arch: Arch(b[1])}
	d.b = b[2:]
	if t.Arch != ArchX86_64 && t.Arch != ArchARM64 {
		return nil, fmt.Errorf("%w: architecture %d", ErrBadTable, t.Arch)
	}
	t.Base = d.uvarint()
	n := d.count(3)
	for i := 0; i < n; i++ {
		t.Exec = append(t.Exec, Segment{Vaddr: d.uvarint(), Off: d.uvarint(), Size: d.uvarint()})
	}
	for _, v := range statInts(&t.Stats) {
		*v = int(min(d.uvarint(), 1<<31))
	}
	t.Stats.SynthPLT = d.uvarint() != 0
	t.Stats.ParseError = string(d.bytes(d.count(1)))
	rules := make([]Rule, d.count(RuleSize))
	for i := range rules {
		if r := d.bytes(RuleSize); r != nil {
			rules[i] = DecodeRule(r)
		}
		if rules[i].Kind > KindFPSwitch {
			d.fail("rule kind %d", rules[i].Kind)
		}
	}
	t.Rows = make([]Row, d.count(2))
	if d.err != nil {
		return nil, d.err
	}
	if err := decodeRows(&d, t.Rows, rules); err != nil {
		return nil, err
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d bytes after the rows", len(d.b))
	}
	if d.err == nil && len(t.Rows) == 0 {
		d.fail("no rows")
	}
	if d.err != nil {
		return nil, d.err
	}
	return t, nil
}

// decodeRows fills rows from d: the hot loop of a warm start (python3's
// 64,575 rows), so one-byte uvarints, most of them, are read inline.
func decodeRows(d *decoder, rows []Row, rules []Rule) error {
	b := d.b
	pc := uint64(0)
	for i := range rows {
		var delta, ri uint64
		if len(b) >= 2 && b[0] < 0x80 && b[1] < 0x80 {
			delta, ri = uint64(b[0]), uint64(b[1])
			b = b[2:]
		} else {
			d.b = b
			delta, ri = d.uvarint(), d.uvarint()
			if d.err != nil {
				return d.err
			}
			b = d.b
		}
		if i > 0 && delta == 0 {
			d.fail("row %d repeats a pc", i)
		}
		if pc += delta; pc >= 1<<32 {
			d.fail("row %d past 32-bit pcs", i)
		}
		if ri >= uint64(len(rules)) {
			d.fail("row %d names rule %d of %d", i, ri, len(rules))
		}
		if d.err != nil {
			return d.err
		}
		rows[i] = Row{PC: uint32(pc), Rule: rules[ri]}
	}
	d.b = b
	return nil
}

func firstByte(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	return int(b[0])
}

// decoder reads uvarints and byte strings; the first failure sticks and
// every later read returns zero.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, a ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrBadTable, fmt.Sprintf(format, a...))
	}
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("truncated")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a count of items taking at least size bytes each, refusing
// more than the bytes left could hold.
func (d *decoder) count(size int) int {
	n := d.uvarint()
	if n > uint64(len(d.b)/size) {
		d.fail("%d items in %d bytes", n, len(d.b))
		return 0
	}
	return int(n)
}

func (d *decoder) bytes(n int) []byte {
	if d.err != nil || n > len(d.b) {
		d.fail("truncated")
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}
