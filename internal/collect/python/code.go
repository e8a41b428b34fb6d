package python

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/sonde-dev/sonde/internal/collect/procfs"
)

// A walked Python frame (PY_FRAME_MARK in sonde_python.h): bit 63 set,
// bit 62 clear, the instruction index + 1 in bits 48..61, the code
// object's address in bits 4..47 (objects are 16-byte aligned), its tag
// (Tag) in bits 0..3.
const (
	frameMark       = 1 << 63
	frameIndexShift = 48
	frameAddrMask   = 1<<48 - 16
	frameTagMask    = 15
)

// pidIndex in the index field marks the value a stack with Python frames
// ends with: its process id (PY_PID_INDEX).
const pidIndex = 0x3fff

// IsFrame says whether a walked pc is a Python frame (or the process id
// that ends a stack holding them: see Pid).
func IsFrame(v uint64) bool { return v>>62 == 2 }

// Pid is the process id a stack with Python frames ends with, when v is
// that value.
func Pid(v uint64) (int, bool) {
	if IsFrame(v) && v>>frameIndexShift&0x3fff == pidIndex {
		return int(uint32(v)), true
	}
	return 0, false
}

// StackPid is the process of a walked stack that holds Python frames
// (its last value), or 0.
func StackPid(pcs []uint64) int {
	if len(pcs) == 0 {
		return 0
	}
	pid, _ := Pid(pcs[len(pcs)-1])
	return pid
}

// Decode splits a Python frame into its code object's address, its tag
// and its instruction index in code units (-1: unknown).
func Decode(v uint64) (code, tag uint64, index int) {
	return v & frameAddrMask, v & frameTagMask, int(v>>frameIndexShift&0x3fff) - 1
}

// Encode is the walker's encoding (for tests): tag is Tag of the code
// object's name and file objects.
func Encode(code, tag uint64, index int) uint64 {
	return frameMark | uint64(index+1)<<frameIndexShift | code&frameAddrMask | tag&frameTagMask
}

// Tag is a code object's tag (py_tag in sonde_python.h): the addresses of
// its name (co_name) and file (co_filename) objects folded to 4 bits. The
// walker takes it with the sample; a frame is named from the object at its
// address only if that object's tag is the same, so a code object freed
// after the sample and another allocated there before the name was read
// is, 15 times in 16, not given the newcomer's name.
func Tag(name, file uint64) uint64 {
	t := name ^ file
	t ^= t >> 32
	t ^= t >> 16
	t ^= t >> 8
	t ^= t >> 4
	return t & frameTagMask
}

// Frame is a named Python frame.
type Frame struct {
	Func string // co_qualname (3.11+) or co_name
	File string // co_filename
	Line int    // 0: unknown
}

// Reader names Python frames by reading code objects from the processes'
// memory, caching each by its address and a check of its header (the
// type and the name, file and line-table objects it points to), so a
// code object freed and another allocated at its address is read again,
// not misnamed. Only a live object of the interpreter's code type is
// read, and only live str and bytes objects it points to: memory that
// held a code object the interpreter freed (a module's top-level code,
// freed once the import ran) gives ErrCodeGone, never the text of what
// lies there now.
type Reader struct {
	mu    sync.Mutex
	procs map[int]*procEntry
	codes map[codeKey]*codeEntry
	// ReadMaps reads a process's mappings (tests and exited processes
	// give others); nil: /proc.
	ReadMaps func(pid int) ([]procfs.Mapping, error)
	// open finds the interpreter of pid and opens its memory; nil: from
	// /proc (NewReaderWith gives another).
	open func(pid int) (*Proc, io.ReaderAt, error)
}

type procEntry struct {
	p   *Proc
	err error
	mem io.ReaderAt // nil once the process is gone
}

// ErrCodeGone: the walked address no longer holds a live code object (it
// was freed, or another object lies there now) or one of the objects it
// names is not a live str or bytes object, so the frame is not named.
var ErrCodeGone = errors.New("the code object was freed or replaced before its name was read")

type codeKey struct {
	pid  int
	addr uint64
}

type codeEntry struct {
	check   [40]byte // the header words the check compares
	tag     uint64   // Tag of the name and file words in check
	checked time.Time
	name    string
	file    string
	first   int
	table   []byte
	err     error
}

var errGone = errors.New("the process ended before its code object was read")

// recheck is how long a code object's cached reading is trusted before
// its header is compared again.
const recheck = 50 * time.Millisecond

// NewReader returns an empty reader.
func NewReader() *Reader {
	return &Reader{procs: map[int]*procEntry{}, codes: map[codeKey]*codeEntry{}}
}

// NewReaderWith returns a reader whose processes are opened by open: their
// interpreter and memory (tests give a fake memory; the memory is closed
// when the process is gone if it is an io.Closer).
func NewReaderWith(open func(pid int) (*Proc, io.ReaderAt, error)) *Reader {
	r := NewReader()
	r.open = open
	return r
}

// Observe names the Python frames of a walked stack now, while its
// process runs (the stack's last value names the process): Frame then
// finds them after the process is gone.
func (r *Reader) Observe(pcs []uint64) {
	pid := StackPid(pcs)
	if pid == 0 {
		return
	}
	for _, v := range pcs[:len(pcs)-1] {
		if IsFrame(v) {
			r.Frame(pid, v)
		}
	}
}

// Frame names the walked Python frame v of process pid: from the cache
// when its check still holds or the process is gone, else from the
// process's memory.
func (r *Reader) Frame(pid int, v uint64) (Frame, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	addr, tag, index := Decode(v)
	k := codeKey{pid, addr}
	ce := r.codes[k]
	pe := r.proc(pid)
	if pe.p == nil {
		return Frame{}, pe.err
	}
	if pe.mem == nil {
		// Gone: what was read while it ran is all there is.
		if ce == nil {
			return Frame{}, errGone
		}
	} else if ce == nil || ce.err != nil || ce.tag != tag || time.Since(ce.checked) > recheck {
		var head [40]byte
		ok := pe.check(addr, &head) == nil
		if ce == nil || (ok && head != ce.check) {
			ce = pe.read(addr)
			r.codes[k] = ce
		}
		if ok {
			ce.checked = time.Now()
		}
	}
	if ce.err != nil {
		return Frame{}, ce.err
	}
	if ce.tag != tag {
		// The sampled code object is gone; another lies at its address.
		return Frame{}, ErrCodeGone
	}
	fr := Frame{Func: ce.name, File: ce.file}
	if index >= 0 {
		if pe.p.Minor >= 11 {
			fr.Line = LineOf311(ce.table, ce.first, index)
		} else {
			fr.Line = LineOf310(ce.table, ce.first, index*2)
		}
	}
	return fr, nil
}

// Execed tells the reader that pid has a new image: it is found again
// on its next frame. Code objects read from the old image stay, each
// checked against the new memory before it is used again.
func (r *Reader) Execed(pid int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if pe := r.procs[pid]; pe != nil {
		closeMem(pe)
	}
	delete(r.procs, pid)
	for k, ce := range r.codes {
		if k.pid == pid {
			ce.checked = time.Time{} // checked on its next use, however recent its reading
		}
	}
}

func closeMem(pe *procEntry) {
	if c, ok := pe.mem.(io.Closer); ok {
		c.Close()
	}
	pe.mem = nil
}

func (r *Reader) proc(pid int) *procEntry {
	if pe := r.procs[pid]; pe != nil {
		return pe
	}
	pe := &procEntry{}
	r.procs[pid] = pe
	open := r.open
	if open == nil {
		open = r.openProc
	}
	p, mem, err := open(pid)
	if err == nil {
		pe.p, pe.mem = p, mem
	}
	pe.err = err
	return pe
}

// openProc finds the interpreter in pid's mappings and opens its memory.
func (r *Reader) openProc(pid int) (*Proc, io.ReaderAt, error) {
	read := r.ReadMaps
	if read == nil {
		read = procfs.ReadMaps
	}
	ms, err := read(pid)
	if err != nil {
		return nil, nil, err
	}
	p, err := Find(pid, ms)
	if err != nil {
		return nil, nil, err
	}
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		return nil, nil, err
	}
	return p, mem, nil
}

// Gone tells the reader that pid exited: its cached names stay, its
// memory is not read again (a new process may get the pid: Forget).
func (r *Reader) Gone(pid int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if pe := r.procs[pid]; pe != nil {
		closeMem(pe)
	}
}

// checkOffsets are the code object's header words compared by the check:
// its type and the objects it names.
func (pe *procEntry) checkOffsets() [5]uint16 {
	l := pe.p.Layout
	q := l.CodeQualname
	if q == None {
		q = l.CodeName
	}
	return [5]uint16{8, l.CodeFilename, l.CodeName, q, l.CodeLinetable}
}

func (pe *procEntry) check(addr uint64, out *[40]byte) error {
	for i, off := range pe.checkOffsets() {
		if _, err := pe.mem.ReadAt(out[i*8:i*8+8], int64(addr+uint64(off))); err != nil {
			return err
		}
	}
	return nil
}

// maxRefcnt bounds the reference count of a live object. Immortal objects
// (3.12+) hold about 2^32; a block CPython's allocator has freed keeps
// its type word, but its first word becomes the free list's link: 0 or
// an address in an arena (mmap'd, far above 2^40).
const maxRefcnt = 1 << 40

// live says whether addr holds a live object of type typ (an address
// from Proc.Types): its type word is typ and its reference count one a
// live object can have. glibc's free overwrites the type word of the
// objects CPython gives it (over 512 bytes), pymalloc's the count.
func (pe *procEntry) live(addr, typ uint64) error {
	if typ == 0 {
		return errors.New("the interpreter's type objects were not found (no PyCode_Type, PyUnicode_Type or PyBytes_Type symbol): names cannot be checked")
	}
	var h [16]byte
	if _, err := pe.mem.ReadAt(h[:], int64(addr)); err != nil {
		return err
	}
	refs, t := binary.LittleEndian.Uint64(h[:8]), binary.LittleEndian.Uint64(h[8:])
	if t != typ || refs == 0 || refs >= maxRefcnt {
		return ErrCodeGone
	}
	return nil
}

// read reads the code object at addr: its names, first line and line
// table; ErrCodeGone unless it is a live code object, naming live objects,
// from its first read to its last.
func (pe *procEntry) read(addr uint64) *codeEntry {
	ce := &codeEntry{checked: time.Now()}
	if ce.err = pe.check(addr, &ce.check); ce.err != nil {
		return ce
	}
	le := binary.LittleEndian
	ce.tag = Tag(le.Uint64(ce.check[16:]), le.Uint64(ce.check[8:]))
	if ce.err = pe.live(addr, pe.p.Types.Code); ce.err != nil {
		return ce
	}
	ce.err = pe.fields(addr, ce)
	// The process runs on: the object may have been freed while it was
	// read (its names with it).
	var again [40]byte
	if ce.err == nil && (pe.check(addr, &again) != nil || again != ce.check || pe.live(addr, pe.p.Types.Code) != nil) {
		ce.err = ErrCodeGone
	}
	if ce.err != nil {
		ce.name, ce.file, ce.table = "", "", nil
	}
	return ce
}

// fields reads what names the code object at addr into ce.
func (pe *procEntry) fields(addr uint64, ce *codeEntry) error {
	l := pe.p.Layout
	word := func(off uint16) uint64 {
		var b [8]byte
		if _, err := pe.mem.ReadAt(b[:], int64(addr+uint64(off))); err != nil && ce.err == nil {
			ce.err = err
		}
		return binary.LittleEndian.Uint64(b[:])
	}
	nameAt := l.CodeName
	if l.CodeQualname != None {
		nameAt = l.CodeQualname
	}
	name, file, table := word(nameAt), word(l.CodeFilename), word(l.CodeLinetable)
	ce.first = int(int32(word(l.CodeFirstLine)))
	if ce.err != nil {
		return ce.err
	}
	var err error
	if ce.name, err = pe.str(name); err != nil {
		return err
	}
	ce.file, _ = pe.str(file)
	ce.table, _ = pe.bytesObj(table)
	return nil
}

const maxString = 4096

// str reads a str object (compact: its characters follow its header).
func (pe *procEntry) str(addr uint64) (string, error) {
	if err := pe.live(addr, pe.p.Types.Str); err != nil {
		return "", err
	}
	l := pe.p.Layout
	var hdr [8]byte
	if _, err := pe.mem.ReadAt(hdr[:], int64(addr+uint64(l.UnicodeLength))); err != nil {
		return "", err
	}
	n := binary.LittleEndian.Uint64(hdr[:])
	if _, err := pe.mem.ReadAt(hdr[:4], int64(addr+uint64(l.UnicodeState))); err != nil {
		return "", err
	}
	state := binary.LittleEndian.Uint32(hdr[:4])
	kind, compact, ascii := int(state>>2&7), state>>5&1 == 1, state>>6&1 == 1
	if !compact || kind < 1 || kind > 4 || kind == 3 {
		return "", errors.New("not a compact str object")
	}
	if n > maxString {
		n = maxString
	}
	data := addr + uint64(l.UnicodeCompact)
	if ascii {
		data = addr + uint64(l.UnicodeASCII)
	}
	b := make([]byte, int(n)*kind)
	if _, err := pe.mem.ReadAt(b, int64(data)); err != nil {
		return "", err
	}
	if kind == 1 {
		if ascii {
			return string(b), nil
		}
		rs := make([]rune, n)
		for i, c := range b {
			rs[i] = rune(c)
		}
		return string(rs), nil
	}
	rs := make([]rune, n)
	for i := range rs {
		if kind == 2 {
			rs[i] = rune(binary.LittleEndian.Uint16(b[i*2:]))
		} else {
			rs[i] = rune(binary.LittleEndian.Uint32(b[i*4:]))
		}
	}
	return string(rs), nil
}

const maxTable = 1 << 20

// bytesObj reads a bytes object's contents.
func (pe *procEntry) bytesObj(addr uint64) ([]byte, error) {
	if err := pe.live(addr, pe.p.Types.Bytes); err != nil {
		return nil, err
	}
	l := pe.p.Layout
	var hdr [8]byte
	if _, err := pe.mem.ReadAt(hdr[:], int64(addr+uint64(l.BytesSize))); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint64(hdr[:])
	if n > maxTable {
		return nil, fmt.Errorf("a line table of %d bytes", n)
	}
	b := make([]byte, n)
	_, err := pe.mem.ReadAt(b, int64(addr+uint64(l.BytesData)))
	return bytes.Clone(b), err
}
