package python

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"
)

// fakeMem is a process's memory for the reader: one region from base,
// anything outside it unreadable (like /proc/PID/mem's holes).
type fakeMem struct {
	base uint64
	b    []byte
}

func (m *fakeMem) ReadAt(p []byte, off int64) (int, error) {
	a := uint64(off)
	if a < m.base || a+uint64(len(p)) > m.base+uint64(len(m.b)) {
		return 0, fmt.Errorf("no memory at %#x", a)
	}
	return copy(p, m.b[a-m.base:]), nil
}

func (m *fakeMem) word(addr uint64, off uint16, v uint64) {
	binary.LittleEndian.PutUint64(m.b[addr-m.base+uint64(off):], v)
}

// object writes an object header: its reference count and type.
func (m *fakeMem) object(addr, refs, typ uint64) {
	m.word(addr, 0, refs)
	m.word(addr, 8, typ)
}

// str writes a compact ASCII str object (kind 1, compact, ascii).
func (m *fakeMem) str(l Layout, types ObjTypes, addr uint64, s string) {
	m.object(addr, 1, types.Str)
	m.word(addr, l.UnicodeLength, uint64(len(s)))
	binary.LittleEndian.PutUint32(m.b[addr-m.base+uint64(l.UnicodeState):], 1<<2|1<<5|1<<6)
	copy(m.b[addr-m.base+uint64(l.UnicodeASCII):], s+"\x00")
}

// code writes a code object naming name (its name and qualname) and file,
// with an empty line table.
func (m *fakeMem) code(l Layout, types ObjTypes, addr, name, file, table uint64) {
	m.object(addr, 2, types.Code)
	m.word(addr, l.CodeName, name)
	if l.CodeQualname != None {
		m.word(addr, l.CodeQualname, name)
	}
	m.word(addr, l.CodeFilename, file)
	m.word(addr, l.CodeLinetable, table)
	m.word(addr, l.CodeFirstLine, 7)
	m.object(table, 1, types.Bytes)
	m.word(table, l.BytesSize, 0)
}

// docstring is what a 3.10 frame was named in CI: the str that took the
// memory of a module's freed top-level code object.
const docstring = "The abstract base class for all I/O classes."

// TestReaderRefusesReplacedCode: a code object the interpreter freed,
// its memory taken by a str (the docstring CI saw) or not yet reused
// (its count now the allocator's free-list link, its name's memory a
// docstring), is never named with another object's text: the frame is
// ErrCodeGone, whether the reader had it cached or meets it first then;
// a new code object at the address is read again. 3.10's layout and
// 3.11's and 3.12's (qualname, another str header).
func TestReaderRefusesReplacedCode(t *testing.T) {
	types := ObjTypes{Code: 0x5555_0000_1000, Str: 0x5555_0000_2000, Bytes: 0x5555_0000_3000}
	for _, minor := range []int{10, 11, 12} {
		t.Run(fmt.Sprintf("3.%d", minor), func(t *testing.T) {
			l, _ := Known(minor)
			const base = 0x7f00_0000_0000
			mem := &fakeMem{base: base, b: make([]byte, 1<<16)}
			codeAt, nameAt, fileAt, tableAt, otherAt := uint64(base+0x1000), uint64(base+0x2000), uint64(base+0x3000), uint64(base+0x4000), uint64(base+0x5000)
			mem.str(l, types, nameAt, "load_py")
			mem.str(l, types, fileAt, "/tmp/m.py")
			mem.code(l, types, codeAt, nameAt, fileAt, tableAt)
			opens := 0
			open := func(pid int) (*Proc, io.ReaderAt, error) {
				opens++
				return &Proc{Layout: l, Types: types}, mem, nil
			}
			r := NewReaderWith(open)
			v := Encode(codeAt, Tag(nameAt, fileAt), 0)
			if fr, err := r.Frame(1, v); err != nil || fr.Func != "load_py" || fr.File != "/tmp/m.py" {
				t.Fatalf("the live code object: %+v %v", fr, err)
			}
			age := func(r *Reader) {
				for _, ce := range r.codes {
					ce.checked = time.Time{}
				}
			}
			gone := func(what string, r *Reader) {
				t.Helper()
				fr, err := r.Frame(1, v)
				if !errors.Is(err, ErrCodeGone) {
					t.Errorf("%s: named %q (%v), want ErrCodeGone", what, fr.Func, err)
				}
			}

			// Freed, and a str took its memory: the words past the str's
			// text still point to the old names, whose memory now holds
			// the docstring.
			mem.str(l, types, codeAt, docstring)
			mem.str(l, types, nameAt, docstring)
			age(r)
			gone("a str at the cached code object's address", r)
			gone("a str at the address, read first now", NewReaderWith(open))

			// Freed, not reused: pymalloc's link (or 0) in the count,
			// the type word left as it was.
			for _, link := range []uint64{0, base + 0x1100} {
				mem.code(l, types, codeAt, nameAt, fileAt, tableAt)
				mem.word(codeAt, 0, link)
				gone(fmt.Sprintf("a freed code object (count %#x)", link), NewReaderWith(open))
			}

			// A live code object whose name is not a live str.
			mem.code(l, types, codeAt, otherAt, fileAt, tableAt)
			mem.object(otherAt, 1, 0x5555_0000_4000)
			gone("a name that is no str", NewReaderWith(open))

			// Another code object at the address (naming other objects),
			// read after the old one was named: a sample of the old one
			// is not given its name, one of its own is.
			newName, newFile := uint64(base+0x6000), uint64(base+0x6100)
			for newFile != base+0x7000 && Tag(newName, newFile) == Tag(nameAt, fileAt) {
				newFile += 0x10
			}
			mem.str(l, types, newName, "other_py")
			mem.str(l, types, newFile, "/tmp/other.py")
			mem.code(l, types, codeAt, newName, newFile, tableAt+0x100)
			fresh := NewReaderWith(open)
			for _, r := range []*Reader{r, fresh} {
				if fr, err := r.Frame(1, v); !errors.Is(err, ErrCodeGone) {
					t.Errorf("a sample of the old code object, another at its address: named %q (%v), want ErrCodeGone", fr.Func, err)
				}
				if fr, err := r.Frame(1, Encode(codeAt, Tag(newName, newFile), 0)); err != nil || fr.Func != "other_py" {
					t.Errorf("a sample of the new code object at the address: %+v %v, want other_py", fr, err)
				}
			}

			// No type addresses (symbols missing): nothing is named.
			noTypes := NewReaderWith(func(int) (*Proc, io.ReaderAt, error) { return &Proc{Layout: l}, mem, nil })
			if fr, err := noTypes.Frame(1, Encode(codeAt, Tag(newName, newFile), 0)); err == nil {
				t.Errorf("without the type objects: named %q", fr.Func)
			}
		})
	}
}
