// Package funcexit finds where a function returns, so its exit can be
// measured with uprobes on those instructions instead of a uretprobe.
//
// A uretprobe replaces the return address on the stack with a trampoline.
// Go moves goroutine stacks and walks them (for growth, GC and panics); a
// foreign return address there makes the runtime abort the program
// ("unexpected return pc"). A uprobe on a return instruction changes no
// memory the program can see, so it is safe wherever an entry uprobe is.
//
// The instructions are found by decoding the function linearly from its
// symbol. A uprobe placed anywhere but on an instruction boundary would
// corrupt the traced program, so any doubt (an undecodable byte, a symbol
// without size) refuses the function with the reason rather than guessing.
package funcexit

import (
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/x86/x86asm"
)

// Site is one way out of a function.
type Site struct {
	Offset uint64 // from the function's first byte
	Kind   Kind
}

// Kind says how a site leaves the function.
type Kind int

const (
	// Return is a return instruction (ret on x86-64, RET on arm64).
	Return Kind = iota
	// TailCall is a direct jump or branch to another function: the
	// function's own time ends there, but its caller's call does not.
	TailCall
)

// Exits lists the exits of a function.
type Exits struct {
	Sites []Site
	// Indirect counts indirect jumps (jump tables, or tail calls through a
	// register): they cannot be told apart without the data they read.
	Indirect int
	Size     uint64
}

// IsGo reports whether the binary at r was built by the Go toolchain (it
// carries Go build information).
func IsGo(r io.ReaderAt) bool {
	_, err := buildinfo.Read(r)
	return err == nil
}

// ErrNoSize is returned for symbols whose size the symbol table does not
// give: without it the function's end is unknown.
var ErrNoSize = errors.New("the symbol table gives no size for it")

// Find decodes the function named sym in f and lists its exits.
func Find(f *elf.File, sym string) (*Exits, error) {
	s, err := lookup(f, sym)
	if err != nil {
		return nil, err
	}
	if s.Size == 0 {
		return nil, fmt.Errorf("finding the exits of %s: %w", sym, ErrNoSize)
	}
	code, err := readCode(f, s.Value, s.Size)
	if err != nil {
		return nil, fmt.Errorf("reading the code of %s: %w", sym, err)
	}
	var ex *Exits
	switch f.Machine {
	case elf.EM_X86_64:
		ex, err = decodeX86(code)
	case elf.EM_AARCH64:
		ex, err = decodeARM64(code)
	default:
		return nil, fmt.Errorf("finding the exits of %s: no decoder for %s code", sym, f.Machine)
	}
	if err != nil {
		return nil, fmt.Errorf("decoding %s: %w", sym, err)
	}
	if len(ex.Sites) == 0 {
		return nil, fmt.Errorf("%s has no return instruction (it never returns, or leaves only through jumps sonde cannot follow)", sym)
	}
	return ex, nil
}

// Returns is Find keeping only return instructions; a tail call is an
// error naming its offset, because timing would end before the callee's work.
func Returns(f *elf.File, sym string) ([]uint64, error) {
	ex, err := Find(f, sym)
	if err != nil {
		return nil, err
	}
	var offs []uint64
	for _, s := range ex.Sites {
		if s.Kind == TailCall {
			return nil, fmt.Errorf("%s leaves through a tail call at +%#x: its exit cannot be timed there; measure the function it jumps to", sym, s.Offset)
		}
		offs = append(offs, s.Offset)
	}
	return offs, nil
}

func lookup(f *elf.File, name string) (elf.Symbol, error) {
	for _, get := range []func() ([]elf.Symbol, error){f.Symbols, f.DynamicSymbols} {
		syms, _ := get()
		for _, s := range syms {
			if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 {
				continue
			}
			if s.Name == name || strings.SplitN(s.Name, "@", 2)[0] == name {
				return s, nil
			}
		}
	}
	return elf.Symbol{}, fmt.Errorf("no function %q in the symbol table", name)
}

func readCode(f *elf.File, addr, size uint64) ([]byte, error) {
	for _, sec := range f.Sections {
		if sec.Type != elf.SHT_PROGBITS || sec.Flags&elf.SHF_EXECINSTR == 0 {
			continue
		}
		if addr < sec.Addr || addr+size > sec.Addr+sec.Size {
			continue
		}
		b := make([]byte, size)
		if _, err := sec.ReadAt(b, int64(addr-sec.Addr)); err != nil {
			return nil, err
		}
		return b, nil
	}
	return nil, fmt.Errorf("no executable section holds %#x-%#x", addr, addr+size)
}

func decodeX86(code []byte) (*Exits, error) {
	ex := &Exits{Size: uint64(len(code))}
	for off := 0; off < len(code); {
		inst, err := x86asm.Decode(code[off:], 64)
		if err == nil && inst.Op == 0 {
			// x86asm returns a bare prefix for a cut instruction.
			err = errors.New("incomplete instruction")
		}
		if err != nil {
			if isPadding(code[off:]) {
				break
			}
			return nil, fmt.Errorf("cannot decode the instruction at +%#x (%x): %w", off, head(code[off:]), err)
		}
		switch inst.Op {
		case x86asm.RET:
			ex.Sites = append(ex.Sites, Site{Offset: uint64(off), Kind: Return})
		case x86asm.JMP:
			switch a := inst.Args[0].(type) {
			case x86asm.Rel:
				t := int64(off+inst.Len) + int64(a)
				if t < 0 || t >= int64(len(code)) {
					ex.Sites = append(ex.Sites, Site{Offset: uint64(off), Kind: TailCall})
				}
			default:
				ex.Indirect++
			}
		}
		off += inst.Len
	}
	return ex, nil
}

// isPadding reports whether the rest of a function is alignment filler
// (int3 or zero bytes some linkers leave inside the symbol's size).
func isPadding(b []byte) bool {
	for _, c := range b {
		if c != 0xcc && c != 0 {
			return false
		}
	}
	return true
}

func decodeARM64(code []byte) (*Exits, error) {
	ex := &Exits{Size: uint64(len(code))}
	if len(code)%4 != 0 {
		return nil, fmt.Errorf("size %d is not a whole number of instructions", len(code))
	}
	for off := 0; off < len(code); off += 4 {
		inst, err := arm64asm.Decode(code[off:])
		if err != nil {
			// Go's arm64 literal pools and padding words sit inside the
			// symbol; a word that is no instruction is not an exit.
			continue
		}
		switch inst.Op {
		case arm64asm.RET:
			ex.Sites = append(ex.Sites, Site{Offset: uint64(off), Kind: Return})
		case arm64asm.B:
			if a, ok := inst.Args[0].(arm64asm.PCRel); ok {
				t := int64(off) + int64(a)
				if t < 0 || t >= int64(len(code)) {
					ex.Sites = append(ex.Sites, Site{Offset: uint64(off), Kind: TailCall})
				}
			}
		case arm64asm.BR:
			ex.Indirect++
		}
	}
	return ex, nil
}

func head(b []byte) []byte {
	if len(b) > 8 {
		return b[:8]
	}
	return b
}
