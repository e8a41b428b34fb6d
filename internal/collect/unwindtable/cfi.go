package unwindtable

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// SectionKind says which of the two DWARF call-frame sections a byte slice holds;
// they differ in how a CIE is recognised and how an FDE points at its CIE.
type SectionKind uint8

const (
	EHFrame    SectionKind = iota // .eh_frame: loaded, pointer encodings from the CIE augmentation
	DebugFrame                    // .debug_frame: not loaded, absolute addresses of AddrSize bytes
)

// Section describes where a call-frame section lives, which its pointer encodings need.
type Section struct {
	Kind  SectionKind
	Order binary.ByteOrder
	// Addr is the section's virtual address (the base of DW_EH_PE_pcrel).
	Addr uint64
	// PtrSize is the size of an address in the object: 8 for ELFCLASS64, 4 for ELFCLASS32.
	PtrSize int
	// TextAddr and DataAddr are the bases of DW_EH_PE_textrel and DW_EH_PE_datarel.
	TextAddr, DataAddr uint64
}

// CIE is a Common Information Entry: what every FDE pointing at it shares.
type CIE struct {
	Offset       uint64 // offset of the entry in its section
	Version      uint8
	Augmentation string
	CodeAlign    uint64
	DataAlign    int64
	RAColumn     uint64 // DWARF register number of the return address column
	FDEEncoding  uint8  // DW_EH_PE_* of the FDE's pc_begin and pc_range
	Signal       bool   // 'S': FDEs describe signal trampolines
	AddrSize     uint8
	Initial      []byte // initial CFA instructions
	initialOff   uint64 // section offset of Initial[0], for pc-relative DW_CFA_set_loc
}

// FDE is a Frame Description Entry: the CFA program of one pc range.
type FDE struct {
	Offset       uint64
	CIE          *CIE
	Begin, End   uint64 // [Begin, End) in the object's virtual addresses
	Instructions []byte
	instOff      uint64 // section offset of Instructions[0]
}

// DW_EH_PE_* pointer encodings (LSB Core, "DWARF Exception Header Encoding").
const (
	peAbsptr  = 0x00
	peULEB128 = 0x01
	peUdata2  = 0x02
	peUdata4  = 0x03
	peUdata8  = 0x04
	peSLEB128 = 0x09
	peSdata2  = 0x0a
	peSdata4  = 0x0b
	peSdata8  = 0x0c

	pePCRel   = 0x10
	peTextRel = 0x20
	peDataRel = 0x30
	peFuncRel = 0x40
	peAligned = 0x50

	peIndirect = 0x80
	peOmit     = 0xff
)

var errShort = errors.New("truncated")

// buf reads DWARF data with bounds checks; the first failure sticks in err
// so callers check once per entry.
type buf struct {
	b     []byte
	off   int
	order binary.ByteOrder
	err   error
}

func (r *buf) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *buf) need(n int) bool {
	if r.err != nil {
		return false
	}
	if n < 0 || len(r.b)-r.off < n {
		r.fail(errShort)
		return false
	}
	return true
}

// noField is what field returns past the end: zeros, so a truncated
// entry decodes to zeros and err says why.
var noField [8]byte

// field is the next n (at most 8) bytes, consumed.
func (r *buf) field(n int) []byte {
	if !r.need(n) {
		return noField[:n]
	}
	v := r.b[r.off : r.off+n]
	r.off += n
	return v
}

func (r *buf) u8() uint8   { return r.field(1)[0] }
func (r *buf) u16() uint16 { return r.order.Uint16(r.field(2)) }
func (r *buf) u32() uint32 { return r.order.Uint32(r.field(4)) }
func (r *buf) u64() uint64 { return r.order.Uint64(r.field(8)) }

func (r *buf) bytes(n uint64) []byte {
	if n > uint64(len(r.b)) || !r.need(int(n)) {
		r.fail(errShort)
		return nil
	}
	v := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return v
}

// leb reads an LEB128 number's 7-bit groups, low first, into v; shift is
// how many bits they held and last the final byte, whose 0x40 bit is a
// signed number's sign. Zeros when the data ends first.
func (r *buf) leb() (v uint64, shift uint, last uint8) {
	for {
		c := r.u8()
		if r.err != nil {
			return 0, 0, 0
		}
		if shift < 64 {
			v |= uint64(c&0x7f) << shift
		}
		shift += 7
		if c&0x80 == 0 {
			return v, shift, c
		}
	}
}

func (r *buf) uleb() uint64 {
	v, _, _ := r.leb()
	return v
}

func (r *buf) sleb() int64 {
	v, shift, last := r.leb()
	if shift < 64 && last&0x40 != 0 {
		v |= ^uint64(0) << shift // sign-extend
	}
	return int64(v)
}

func (r *buf) cstring() string {
	for i := r.off; i < len(r.b); i++ {
		if r.b[i] == 0 {
			s := string(r.b[r.off:i])
			r.off = i + 1
			return s
		}
	}
	r.fail(errShort)
	return ""
}

// pointer decodes one DW_EH_PE_* encoded value. secAddr is the section's virtual
// address (for pcrel); funcBase is the FDE's pc_begin (for funcrel).
// Indirect pointers are returned as the address of the pointer: the only place
// they occur in practice is the personality routine, which unwinding ignores.
func (r *buf) pointer(enc uint8, s *Section, funcBase uint64) uint64 {
	if enc == peOmit {
		return 0
	}
	pos := s.Addr + uint64(r.off)
	if enc&0x70 == peAligned {
		if a := r.off % s.PtrSize; a != 0 {
			r.bytes(uint64(s.PtrSize - a))
		}
		pos = s.Addr + uint64(r.off)
	}
	var v uint64
	switch enc & 0x0f {
	case peAbsptr:
		if s.PtrSize == 4 {
			v = uint64(r.u32())
		} else {
			v = r.u64()
		}
	case peULEB128:
		v = r.uleb()
	case peUdata2:
		v = uint64(r.u16())
	case peUdata4:
		v = uint64(r.u32())
	case peUdata8:
		v = r.u64()
	case peSLEB128:
		v = uint64(r.sleb())
	case peSdata2:
		v = uint64(int64(int16(r.u16())))
	case peSdata4:
		v = uint64(int64(int32(r.u32())))
	case peSdata8:
		v = r.u64()
	default:
		r.fail(fmt.Errorf("unknown pointer encoding %#x", enc))
		return 0
	}
	switch enc & 0x70 {
	case 0, peAligned:
	case pePCRel:
		v += pos
	case peTextRel:
		v += s.TextAddr
	case peDataRel:
		v += s.DataAddr
	case peFuncRel:
		v += funcBase
	default:
		r.fail(fmt.Errorf("unknown pointer application %#x", enc))
	}
	if s.PtrSize == 4 {
		v &= 0xffffffff
	}
	return v
}

// Frames is the parsed content of one call-frame section.
type Frames struct {
	CIEs []*CIE
	FDEs []FDE
}

// ParseFrames decodes every CIE and FDE of an .eh_frame or .debug_frame section.
// A structural error (an entry running past the section, a dangling CIE pointer,
// an unknown CIE version) stops the parse: the FDEs read before it are returned
// with the error, so a caller may still use them.
func ParseFrames(data []byte, s Section) (*Frames, error) {
	if s.Order == nil {
		s.Order = binary.LittleEndian
	}
	if s.PtrSize != 4 && s.PtrSize != 8 {
		return nil, fmt.Errorf("parsing call frames: pointer size %d", s.PtrSize)
	}
	out := &Frames{}
	cies := map[uint64]*CIE{}
	r := &buf{b: data, order: s.Order}
	for r.off < len(data) {
		start := r.off
		length := uint64(r.u32())
		dwarf64 := false
		if length == 0xffffffff {
			length = r.u64()
			dwarf64 = true
		}
		if r.err != nil {
			return out, fmt.Errorf("parsing call frames at %#x: length: %w", start, r.err)
		}
		if length == 0 {
			if s.Kind == EHFrame {
				break // terminator
			}
			continue
		}
		idPos := r.off
		if length > uint64(len(data)-r.off) {
			return out, fmt.Errorf("parsing call frames at %#x: entry length %#x runs past the section", start, length)
		}
		end := r.off + int(length)
		e := &buf{b: data[:end], off: r.off, order: s.Order}
		var id uint64
		if dwarf64 {
			id = e.u64()
		} else {
			id = uint64(e.u32())
		}
		isCIE := id == 0
		if s.Kind == DebugFrame {
			isCIE = (!dwarf64 && id == 0xffffffff) || (dwarf64 && id == ^uint64(0))
		}
		if isCIE {
			c, err := parseCIE(e, uint64(start), &s)
			if err != nil {
				return out, fmt.Errorf("parsing CIE at %#x: %w", start, err)
			}
			cies[c.Offset] = c
			out.CIEs = append(out.CIEs, c)
		} else {
			cieOff := id
			if s.Kind == EHFrame {
				cieOff = uint64(idPos) - id
			}
			c := cies[cieOff]
			if c == nil {
				// A CIE may follow its FDE (allowed, never seen from GNU tools): parse it on demand.
				var err error
				c, err = cieAt(data, cieOff, &s)
				if err != nil {
					return out, fmt.Errorf("parsing FDE at %#x: CIE at %#x: %w", start, cieOff, err)
				}
				cies[cieOff] = c
				out.CIEs = append(out.CIEs, c)
			}
			f, err := parseFDE(e, uint64(start), c, &s)
			if err != nil {
				return out, fmt.Errorf("parsing FDE at %#x: %w", start, err)
			}
			out.FDEs = append(out.FDEs, f)
		}
		r.off = end
	}
	return out, nil
}

func cieAt(data []byte, off uint64, s *Section) (*CIE, error) {
	if off >= uint64(len(data)) {
		return nil, errors.New("outside the section")
	}
	r := &buf{b: data, off: int(off), order: s.Order}
	length := uint64(r.u32())
	dwarf64 := length == 0xffffffff
	if dwarf64 {
		length = r.u64()
	}
	if r.err != nil || length > uint64(len(data)-r.off) || length == 0 {
		return nil, errors.New("bad length")
	}
	e := &buf{b: data[:r.off+int(length)], off: r.off, order: s.Order}
	var id uint64
	if dwarf64 {
		id = e.u64()
	} else {
		id = uint64(e.u32())
	}
	want := uint64(0)
	if s.Kind == DebugFrame {
		want = 0xffffffff
		if dwarf64 {
			want = ^uint64(0)
		}
	}
	if id != want {
		return nil, errors.New("not a CIE")
	}
	return parseCIE(e, off, s)
}

func parseCIE(r *buf, off uint64, s *Section) (*CIE, error) {
	c := &CIE{Offset: off, AddrSize: uint8(s.PtrSize), FDEEncoding: peAbsptr}
	c.Version = r.u8()
	switch c.Version {
	case 1, 3, 4:
	default:
		if r.err == nil {
			return nil, fmt.Errorf("unsupported CIE version %d", c.Version)
		}
	}
	c.Augmentation = r.cstring()
	if c.Version >= 4 {
		c.AddrSize = r.u8()
		if seg := r.u8(); seg != 0 && r.err == nil {
			return nil, fmt.Errorf("segmented addresses (segment size %d)", seg)
		}
		if c.AddrSize != 4 && c.AddrSize != 8 && r.err == nil {
			return nil, fmt.Errorf("address size %d", c.AddrSize)
		}
	}
	if len(c.Augmentation) >= 2 && c.Augmentation[:2] == "eh" {
		// GCC 2.x "eh" augmentation: a pointer to exception tables follows.
		r.bytes(uint64(s.PtrSize))
	}
	c.CodeAlign = r.uleb()
	c.DataAlign = r.sleb()
	if c.Version == 1 {
		c.RAColumn = uint64(r.u8())
	} else {
		c.RAColumn = r.uleb()
	}
	if len(c.Augmentation) > 0 && c.Augmentation[0] == 'z' {
		n := r.uleb()
		aug := &buf{b: r.bytes(n), order: s.Order}
		// pcrel inside the augmentation data is relative to its own position.
		as := *s
		as.Addr = s.Addr + uint64(r.off) - n
	loop:
		for _, ch := range c.Augmentation[1:] {
			switch ch {
			case 'R':
				c.FDEEncoding = aug.u8()
			case 'L':
				aug.u8() // LSDA encoding: the FDE's augmentation length lets us skip the LSDA pointer
			case 'P':
				enc := aug.u8()
				aug.pointer(enc&^peIndirect, &as, 0)
			case 'S':
				c.Signal = true
			case 'B', 'G':
				// AArch64 PAC B-key, MTE tagged frames: nothing to read.
			default:
				break loop // unknown: the 'z' length still lets us skip the rest
			}
		}
		if aug.err != nil && r.err == nil {
			return nil, fmt.Errorf("augmentation %q: %w", c.Augmentation, aug.err)
		}
	} else {
		for _, ch := range c.Augmentation {
			if ch == 'S' {
				c.Signal = true
			}
		}
	}
	c.Initial = r.b[min(r.off, len(r.b)):]
	c.initialOff = uint64(r.off)
	if r.err != nil {
		return nil, r.err
	}
	return c, nil
}

func parseFDE(r *buf, off uint64, c *CIE, s *Section) (FDE, error) {
	f := FDE{Offset: off, CIE: c}
	if s.Kind == DebugFrame {
		ds := *s
		ds.PtrSize = int(c.AddrSize)
		f.Begin = r.pointer(peAbsptr, &ds, 0)
		f.End = f.Begin + r.pointer(peAbsptr, &ds, 0)
	} else {
		f.Begin = r.pointer(c.FDEEncoding&^peIndirect, s, 0)
		f.End = f.Begin + r.pointer(c.FDEEncoding&0x0f, s, 0)
		if len(c.Augmentation) > 0 && c.Augmentation[0] == 'z' {
			r.bytes(r.uleb())
		}
	}
	if r.err != nil {
		return f, r.err
	}
	f.Instructions = r.b[r.off:]
	f.instOff = uint64(r.off)
	return f, nil
}
