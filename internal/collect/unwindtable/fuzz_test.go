package unwindtable

import (
	"debug/elf"
	"encoding/binary"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary bytes to the CIE/FDE parser and the CFA program
// interpreter: no input may panic, hang or produce a multi-line error.
// mode: bit 0 .debug_frame, bit 1 32-bit pointers, bit 2 arm64 registers.
func FuzzParse(f *testing.F) {
	for _, path := range []string{libcX86, "/usr/aarch64-linux-gnu/lib/libc.so.6"} {
		ef, err := elf.Open(path)
		if err != nil {
			continue
		}
		s := ef.Section(".eh_frame")
		data, err := s.Data()
		ef.Close()
		if err != nil || len(data) < 0x600 {
			continue
		}
		mode := byte(0)
		if ef.Machine == elf.EM_AARCH64 {
			mode = 4
		}
		f.Add(data[:0x600], mode)
	}
	// A hand-made .debug_frame: a DWARF 4 CIE and one FDE with remember/restore.
	var df []byte
	le := binary.LittleEndian
	cie := []byte{0xff, 0xff, 0xff, 0xff, 4, 0, 8, 0, 1, 0x78, 16, 0x0c, 7, 8, 0x90, 1}
	df = le.AppendUint32(df, uint32(len(cie)))
	df = append(df, cie...)
	fde := le.AppendUint32(nil, 0)
	fde = le.AppendUint64(fde, 0x1000)
	fde = le.AppendUint64(fde, 0x40)
	fde = append(fde, 0x41, 0x0e, 16, 0x86, 2, 0x0a, 0x42, 0x0e, 32, 0x0b, 0x43, 0xc6, 0x2e, 8, 0x00)
	df = le.AppendUint32(df, uint32(len(fde)))
	df = append(df, fde...)
	f.Add(df, byte(1))
	f.Fuzz(func(t *testing.T, data []byte, mode byte) {
		sec := Section{Kind: EHFrame, Order: binary.LittleEndian, PtrSize: 8, Addr: 0x10000}
		ar := regsX86_64
		if mode&1 != 0 {
			sec.Kind = DebugFrame
		}
		if mode&2 != 0 {
			sec.PtrSize = 4
		}
		if mode&4 != 0 {
			ar = regsARM64
		}
		fr, err := ParseFrames(data, sec)
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Fatalf("multi-line error: %q", err)
		}
		if fr == nil {
			return
		}
		for i := range fr.FDEs {
			fd := &fr.FDEs[i]
			rows, err := run(fd, &sec, regs{sp: ar.sp, fp: ar.fp, ra: fd.CIE.RAColumn}, nil)
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error: %q", err)
			}
			for j := range rows {
				r := rowFor(&rows[j].st, fd.CIE, ar)
				if r.Kind > KindUnsupported {
					t.Fatalf("kind %d", r.Kind)
				}
				if j > 0 && rows[j].pc <= rows[j-1].pc {
					t.Fatalf("rows out of order: %#x after %#x", rows[j].pc, rows[j-1].pc)
				}
			}
		}
	})
}
