// Package python finds CPython interpreters in processes and reads what
// sonde's BPF walker (bpf/include/sonde_python.h) needs to take their
// Python frames: where the runtime state lies, the interpreter loop's
// code, and the version's structure layout. It also turns the walker's
// Python frames (code object address, instruction index) into function,
// file and line by reading the process's memory. Docs: docs/interpreters.md.
package python

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// Styles of marking the frames one eval-loop invocation runs (enum
// py_style in sonde_python.h).
const (
	StyleFrameObject = 0 // 3.10: one frame object per invocation
	StyleIsEntry     = 1 // 3.11: is_entry on the invocation's first frame
	StyleCStack      = 2 // 3.12, 3.13: a shim frame owned by the C stack
)

// How a thread state names its thread (enum py_tid).
const (
	TidNative  = 0 // native_thread_id: the kernel's thread id
	TidPthread = 1 // thread_id: pthread_self, the x86-64 fsbase
)

// None is an offset a version does not have (PY_NONE).
const None = 0xffff

// Layout is where a CPython version keeps what the walker and the
// symbolizer read, in bytes from the start of each structure.
type Layout struct {
	Minor int // 3.Minor
	Style uint8
	Tid   uint8

	RuntimeInterpHead uint16 // _PyRuntime.interpreters.head
	InterpThreadsHead uint16 // PyInterpreterState: first thread state
	TstateNext        uint16
	TstateTid         uint16 // native_thread_id (3.11+), thread_id (3.10)
	TstateFrame       uint16 // current frame (3.10, 3.13+) or the _PyCFrame holding it
	CFrameFrame       uint16 // _PyCFrame.current_frame (3.11, 3.12), else None
	FramePrevious     uint16
	FrameCode         uint16
	FrameInstr        uint16 // prev_instr/instr_ptr (3.11+), f_lasti (3.10)
	FrameOwner        uint16 // owner (3.12+), is_entry (3.11), else None
	CodeAdaptive      uint16 // co_code_adaptive (3.11+), else None

	CodeFilename, CodeName, CodeQualname uint16 // CodeQualname None before 3.11
	CodeFirstLine, CodeLinetable         uint16
	BytesSize, BytesData                 uint16
	UnicodeState, UnicodeLength          uint16
	UnicodeASCII, UnicodeCompact         uint16 // sizeof PyASCIIObject, PyCompactUnicodeObject
}

// known are the layouts of 3.10–3.12 on 64-bit Linux, read from each
// version's headers (testdata/pyoffsets.c prints them;
// TestOffsetsMatchHeaders compares).
var known = map[int]Layout{
	10: {Minor: 10, Style: StyleFrameObject, Tid: TidPthread,
		RuntimeInterpHead: 32, InterpThreadsHead: 8, TstateNext: 8, TstateTid: 176, TstateFrame: 24, CFrameFrame: None,
		FramePrevious: 24, FrameCode: 32, FrameInstr: 96, FrameOwner: None, CodeAdaptive: None,
		CodeFilename: 104, CodeName: 112, CodeQualname: None, CodeFirstLine: 40, CodeLinetable: 120,
		BytesSize: 16, BytesData: 32, UnicodeState: 32, UnicodeLength: 16, UnicodeASCII: 48, UnicodeCompact: 72},
	11: {Minor: 11, Style: StyleIsEntry, Tid: TidNative,
		RuntimeInterpHead: 40, InterpThreadsHead: 16, TstateNext: 8, TstateTid: 160, TstateFrame: 56, CFrameFrame: 8,
		FramePrevious: 48, FrameCode: 32, FrameInstr: 56, FrameOwner: 68, CodeAdaptive: 184,
		CodeFilename: 112, CodeName: 120, CodeQualname: 128, CodeFirstLine: 72, CodeLinetable: 136,
		BytesSize: 16, BytesData: 32, UnicodeState: 32, UnicodeLength: 16, UnicodeASCII: 48, UnicodeCompact: 72},
	12: {Minor: 12, Style: StyleCStack, Tid: TidNative,
		RuntimeInterpHead: 40, InterpThreadsHead: 72, TstateNext: 8, TstateTid: 144, TstateFrame: 56, CFrameFrame: 0,
		FramePrevious: 8, FrameCode: 0, FrameInstr: 56, FrameOwner: 70, CodeAdaptive: 192,
		CodeFilename: 112, CodeName: 120, CodeQualname: 128, CodeFirstLine: 68, CodeLinetable: 136,
		BytesSize: 16, BytesData: 32, UnicodeState: 32, UnicodeLength: 16, UnicodeASCII: 40, UnicodeCompact: 56},
}

// Known is the table's layout for 3.minor (3.10–3.12).
func Known(minor int) (Layout, bool) {
	l, ok := known[minor]
	return l, ok
}

// DebugCookie starts _Py_DebugOffsets, the first field of _PyRuntime from
// 3.13 on.
const DebugCookie = "xdebugpy"

// debugOffsets313Size is how much of 3.13's _Py_DebugOffsets is read:
// through the unicode object's offsets.
const debugOffsets313Size = 568

var (
	// ErrFreeThreaded: a free-threaded build (3.13t), whose frames and
	// thread states sonde does not walk yet.
	ErrFreeThreaded = errors.New("free-threaded CPython builds are not supported yet")
	// ErrNoCookie: the bytes do not start with _Py_DebugOffsets.
	ErrNoCookie = errors.New("no _Py_DebugOffsets cookie")
)

// ParseDebugOffsets reads the layout from _Py_DebugOffsets (b: the first
// bytes of _PyRuntime). Its own layout changes between minor versions, so
// only versions whose struct sonde knows (3.13) are read; others get one
// error saying so.
func ParseDebugOffsets(b []byte) (Layout, error) {
	if len(b) < 24 || !bytes.Equal(b[:8], []byte(DebugCookie)) {
		return Layout{}, ErrNoCookie
	}
	le := binary.LittleEndian
	hex := le.Uint64(b[8:])
	major, minor := int(hex>>24&0xff), int(hex>>16&0xff)
	if major != 3 || minor != 13 {
		return Layout{}, fmt.Errorf("CPython %d.%d's _Py_DebugOffsets (version %#x) is not one sonde can read (3.13 only)", major, minor, hex)
	}
	if len(b) < debugOffsets313Size {
		return Layout{}, fmt.Errorf("_Py_DebugOffsets: %d bytes, want %d", len(b), debugOffsets313Size)
	}
	if le.Uint64(b[16:]) != 0 {
		return Layout{}, ErrFreeThreaded
	}
	// u reads field i of the struct (each is a uint64) as an offset;
	// anything beyond 64 KiB is not a layout sonde can follow.
	var bad error
	u := func(off int) uint16 {
		v := le.Uint64(b[off:])
		if v >= None {
			bad = fmt.Errorf("_Py_DebugOffsets: offset %d at byte %d is out of range", v, off)
		}
		return uint16(v)
	}
	// Sections of 3.13's struct: runtime_state at 24, interpreter_state at
	// 48, thread_state at 152, interpreter_frame at 224, code_object at
	// 272, bytes_object at 512, unicode_object at 536; each starts with
	// its structure's size.
	l := Layout{Minor: 13, Style: StyleCStack, Tid: TidNative,
		RuntimeInterpHead: u(24 + 16),
		InterpThreadsHead: u(48 + 24),
		TstateNext:        u(152 + 16),
		TstateFrame:       u(152 + 32),
		TstateTid:         u(152 + 48),
		CFrameFrame:       None,
		FramePrevious:     u(224 + 8),
		FrameCode:         u(224 + 16),
		FrameInstr:        u(224 + 24),
		FrameOwner:        u(224 + 40),
		CodeFilename:      u(272 + 8),
		CodeName:          u(272 + 16),
		CodeQualname:      u(272 + 24),
		CodeLinetable:     u(272 + 32),
		CodeFirstLine:     u(272 + 40),
		CodeAdaptive:      u(272 + 72),
		BytesSize:         u(512 + 8),
		BytesData:         u(512 + 16),
		UnicodeState:      u(536 + 8),
		UnicodeLength:     u(536 + 16),
		UnicodeASCII:      u(536 + 24),
	}
	// PyCompactUnicodeObject adds utf8_length and utf8 to PyASCIIObject.
	l.UnicodeCompact = l.UnicodeASCII + 16
	return l, bad
}
