package unwindtable

import (
	"encoding/binary"
	"fmt"
	"testing"
)

func TestPointerEncodings(t *testing.T) {
	s := &Section{Order: binary.LittleEndian, PtrSize: 8, Addr: 0x1000, TextAddr: 0x20000, DataAddr: 0x30000}
	for _, tc := range []struct {
		name string
		enc  uint8
		in   []byte
		pre  int // bytes before the value (for pcrel and aligned)
		want uint64
	}{
		{"absptr", peAbsptr, []byte{1, 2, 3, 4, 5, 6, 7, 8}, 0, 0x0807060504030201},
		{"uleb128", peULEB128, []byte{0xe5, 0x8e, 0x26}, 0, 624485},
		{"udata2", peUdata2, []byte{0x34, 0x12}, 0, 0x1234},
		{"udata4", peUdata4, []byte{0x78, 0x56, 0x34, 0x12}, 0, 0x12345678},
		{"udata8", peUdata8, []byte{1, 0, 0, 0, 0, 0, 0, 0x80}, 0, 0x8000000000000001},
		{"sleb128", peSLEB128, []byte{0xc0, 0xbb, 0x78}, 0, uint64(0xffffffffffffffff - 123455)},
		{"sdata2", peSdata2, []byte{0xfe, 0xff}, 0, ^uint64(1)},
		{"sdata4", peSdata4, []byte{0xfc, 0xff, 0xff, 0xff}, 0, ^uint64(3)},
		{"sdata8", peSdata8, []byte{0xf8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 0, ^uint64(7)},
		{"pcrel sdata4", pePCRel | peSdata4, []byte{0xf0, 0xff, 0xff, 0xff}, 4, 0x1000 + 4 - 16},
		{"textrel udata4", peTextRel | peUdata4, []byte{0x10, 0, 0, 0}, 0, 0x20010},
		{"datarel sdata4", peDataRel | peSdata4, []byte{0x20, 0, 0, 0}, 0, 0x30020},
		{"funcrel uleb128", peFuncRel | peULEB128, []byte{0x08}, 0, 0x5008},
		{"aligned", peAligned | peAbsptr, []byte{0x42, 0, 0, 0, 0, 0, 0, 0}, 3, 0x42},
		{"indirect pcrel", peIndirect | pePCRel | peSdata4, []byte{8, 0, 0, 0}, 0, 0x1008},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := make([]byte, tc.pre, tc.pre+len(tc.in)+8)
			if tc.name == "aligned" {
				b = append(b, make([]byte, 8-tc.pre)...) // padding up to the 8-byte boundary
			}
			b = append(b, tc.in...)
			r := &buf{b: b, off: tc.pre, order: binary.LittleEndian}
			enc := tc.enc &^ peIndirect // callers strip indirect: the value is the pointer's address
			if got := r.pointer(enc, s, 0x5000); got != tc.want || r.err != nil {
				t.Errorf("got %#x (err %v), want %#x", got, r.err, tc.want)
			}
			if r.off != len(b) {
				t.Errorf("consumed up to %d of %d bytes", r.off, len(b))
			}
		})
	}
	r := &buf{b: []byte{1}, order: binary.LittleEndian}
	if r.pointer(0x0f, s, 0); r.err == nil {
		t.Error("encoding 0x0f accepted")
	}
}

// TestSetLocPCRel: a hand-written .eh_frame whose FDE uses DW_CFA_set_loc with
// a pc-relative operand, remember/restore_state, and a 32-bit pointer CIE
// augmentation "zR".
func TestSetLocPCRel(t *testing.T) {
	le := binary.LittleEndian
	const secAddr = 0x4000
	cie := []byte{0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 16, 1, peSdata4 | pePCRel, 0x0c, 7, 8, 0x90, 1}
	var eh []byte
	eh = le.AppendUint32(eh, uint32(len(cie)))
	eh = append(eh, cie...)
	fdeStart := len(eh)
	// FDE: length, CIE pointer, pc_begin (pcrel), pc_range, aug length, program.
	fde := le.AppendUint32(nil, uint32(fdeStart+4)) // CIE pointer: back to offset 0
	pcBeginPos := secAddr + fdeStart + 4 + 4
	fde = le.AppendUint32(fde, uint32(int32(0x1000-pcBeginPos)))
	fde = le.AppendUint32(fde, 0x40)
	fde = append(fde, 0)              // augmentation data length
	fde = append(fde, 0x41, 0x0e, 16) // advance 1; def_cfa_offset 16
	fde = append(fde, 0x86, 2)        // rbp at cfa-16
	fde = append(fde, 0x0a)           // remember_state
	setLocPos := secAddr + fdeStart + 4 + len(fde) + 1
	fde = append(fde, 0x01) // set_loc, pcrel sdata4 → 0x1010
	fde = le.AppendUint32(fde, uint32(int32(0x1010-setLocPos)))
	fde = append(fde, 0x0e, 64, 0x0b, 0x48) // def_cfa_offset 64; restore_state; advance 8
	fde = append(fde, 0xc6)                 // restore rbp
	eh = le.AppendUint32(eh, uint32(len(fde)))
	eh = append(eh, fde...)
	eh = append(eh, 0, 0, 0, 0)

	fr, err := ParseFrames(eh, Section{Kind: EHFrame, Order: le, PtrSize: 8, Addr: secAddr})
	if err != nil {
		t.Fatal(err)
	}
	if len(fr.FDEs) != 1 || fr.FDEs[0].Begin != 0x1000 || fr.FDEs[0].End != 0x1040 {
		t.Fatalf("FDEs %+v", fr.FDEs)
	}
	rows, err := run(&fr.FDEs[0], &Section{Kind: EHFrame, Order: le, PtrSize: 8, Addr: secAddr}, regs{sp: 7, fp: 6, ra: 16}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		rule := rowFor(&r.st, fr.FDEs[0].CIE, regsX86_64)
		got = append(got, fmtRule(r.pc, rule))
	}
	want := []string{
		"0x1000 sp cfa=1 fp=0 ra=-1",
		"0x1001 sp cfa=2 fp=-2 ra=-1",
		"0x1010 sp cfa=2 fp=-2 ra=-1", // restore_state brought back CFA 16 at 0x1010
		"0x1018 sp cfa=2 fp=0 ra=-1",
	}
	if len(got) != len(want) {
		t.Fatalf("rows %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d: %s, want %s", i, got[i], want[i])
		}
	}
}

func fmtRule(pc uint64, r Rule) string {
	return fmt.Sprintf("%#x %v cfa=%d fp=%d ra=%d", pc, r.Kind, r.CFA, r.FP, r.RA)
}
