package datafile

import (
	"encoding/binary"
	"errors"
	"math"
)

type enc struct{ b []byte }

func (e *enc) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) varint(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *enc) str(s string) {
	e.uvarint(uint64(len(s)))
	e.b = append(e.b, s...)
}
func (e *enc) strs(ss []string) { list(e, ss, e.str) }

// list writes a counted list: its length, then each element with put.
func list[T any](e *enc, xs []T, put func(T)) {
	e.uvarint(uint64(len(xs)))
	for _, x := range xs {
		put(x)
	}
}
func (e *enc) bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

var (
	errShort    = errors.New("unexpected end of section")
	errOverflow = errors.New("value out of range")
)

// dec reads a section; the first error sticks and later reads return zero.
type dec struct {
	b   []byte
	err error
}

func (d *dec) fail(err error) {
	if d.err == nil {
		d.err = err
	}
	d.b = nil
}

func (d *dec) uvarint() uint64 { return decVarint(d, binary.Uvarint) }
func (d *dec) varint() int64   { return decVarint(d, binary.Varint) }

// decVarint reads one varint with read; the first error sticks.
func decVarint[T uint64 | int64](d *dec, read func([]byte) (T, int)) T {
	if d.err != nil {
		return 0
	}
	v, n := read(d.b)
	if n <= 0 {
		d.fail(errShort)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) u32() uint32 {
	v := d.uvarint()
	if v > math.MaxUint32 {
		d.fail(errOverflow)
		return 0
	}
	return uint32(v)
}

func (d *dec) i32() int32 {
	v := d.varint()
	if v > math.MaxInt32 || v < math.MinInt32 {
		d.fail(errOverflow)
		return 0
	}
	return int32(v)
}

func (d *dec) bool() bool {
	if d.err != nil {
		return false
	}
	if len(d.b) < 1 {
		d.fail(errShort)
		return false
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v != 0
}

func (d *dec) str() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.fail(errShort)
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// strs reads a counted list of strings (nil when empty).
func (d *dec) strs() []string {
	var ss []string
	for n := d.count(1); len(ss) < n; {
		ss = append(ss, d.str())
	}
	return ss
}

// count reads an element count and checks that the section can hold that
// many elements of at least minSize bytes each.
func (d *dec) count(minSize int) int {
	n := d.uvarint()
	if d.err != nil {
		return 0
	}
	if n > uint64(len(d.b)/minSize) {
		d.fail(errShort)
		return 0
	}
	return int(n)
}

// bytes reads a length-prefixed byte string (copied).
func (d *dec) bytes() []byte { return d.bytesView(true) }

// bytesView reads a length-prefixed byte string, copied or as a view into
// the section buffer.
func (d *dec) bytesView(copied bool) []byte {
	n := d.uvarint()
	if d.err != nil || n == 0 {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail(errShort)
		return nil
	}
	b := d.b[:n:n]
	if copied {
		b = append([]byte(nil), b...)
	}
	d.b = d.b[n:]
	return b
}
