package unwindtable

import (
	"encoding/binary"
	"fmt"
	"testing"
)

// TestPrograms runs hand-written CFA programs through the interpreter and the
// row compiler: the opcodes and rule shapes the system libraries tested
// against readelf do not happen to contain.
func TestPrograms(t *testing.T) {
	x86CIE := []byte{0x0c, 7, 8, 0x90, 1} // def_cfa rsp+8; rip at cfa-8
	arm64CIE := []byte{0x0c, 31, 0}       // def_cfa sp+0; x30 has no rule
	for _, tc := range []struct {
		name  string
		arm64 bool
		prog  []byte
		want  []string // one per row, from pc 0x1000, code alignment 1 (x86) or 4 (arm64)
	}{
		{"x86 push rbp; mov rbp, rsp", false,
			[]byte{0x41, 0x0e, 16, 0x86, 2, 0x43, 0x0d, 6},
			[]string{"0x1000 sp cfa=1 fp=0 ra=-1", "0x1001 sp cfa=2 fp=-2 ra=-1", "0x1004 fp cfa=2 fp=-2 ra=-1"}},
		{"x86 restore and restore_extended", false,
			[]byte{0x86, 2, 0x41, 0xc6, 0x41, 0x05, 6, 3, 0x41, 0x06, 6},
			[]string{"0x1000 sp cfa=1 fp=-2 ra=-1", "0x1001 sp cfa=1 fp=0 ra=-1", "0x1002 sp cfa=1 fp=-3 ra=-1", "0x1003 sp cfa=1 fp=0 ra=-1"}},
		{"x86 undefined rip is the outermost frame", false,
			[]byte{0x07, 16},
			[]string{"0x1000 stop cfa=0 fp=0 ra=0"}},
		{"x86 CFA from rdi", false,
			[]byte{0x0c, 5, 0},
			[]string{"0x1000 unsupported cfa=0 fp=0 ra=0"}},
		{"x86 CFA offset not a multiple of 8", false,
			[]byte{0x0e, 12},
			[]string{"0x1000 unsupported cfa=0 fp=0 ra=0"}},
		{"x86 DRAP", false,
			[]byte{0x0f, 3, 0x76, 0x78, 0x06, 0x86, 2},
			[]string{"0x1000 fp-deref cfa=-1 fp=-2 ra=-1"}},
		{"x86 rbp as val_offset is not a save slot", false,
			[]byte{0x14, 6, 2},
			[]string{"0x1000 sp cfa=1 fp=0 ra=-1 flags=0x8"}},
		{"x86 rbp kept in rbp, same_value", false,
			[]byte{0x09, 6, 6, 0x41, 0x08, 6},
			[]string{"0x1000 sp cfa=1 fp=0 ra=-1", "0x1001 sp cfa=1 fp=0 ra=-1"}}, // the table builder merges these
		{"x86 sf forms, args_size, advance_loc1/2/4", false,
			// GNU_negative_offset_extended negates the factored offset: with
			// data alignment -8 it saves above the CFA (readelf agrees).
			[]byte{0x2e, 16, 0x13, 0x7e, 0x02, 1, 0x11, 6, 0x02, 0x03, 1, 0, 0x12, 7, 0x7d, 0x04, 1, 0, 0, 0, 0x2f, 6, 3},
			[]string{"0x1000 sp cfa=2 fp=0 ra=-1", "0x1001 sp cfa=2 fp=-2 ra=-1", "0x1002 sp cfa=3 fp=-2 ra=-1", "0x1003 sp cfa=3 fp=3 ra=-1"}},
		{"x86 remember/restore_state around an epilogue", false,
			[]byte{0x41, 0x0e, 16, 0x0a, 0x41, 0x0e, 8, 0x41, 0x0b},
			[]string{"0x1000 sp cfa=1 fp=0 ra=-1", "0x1001 sp cfa=2 fp=0 ra=-1", "0x1002 sp cfa=1 fp=0 ra=-1", "0x1003 sp cfa=2 fp=0 ra=-1"}},
		{"arm64 frame record", true,
			[]byte{0x41, 0x0e, 16, 0x9d, 2, 0x9e, 1, 0x41, 0x0c, 29, 16},
			[]string{"0x1000 sp cfa=0 fp=0 ra=0 flags=0x1", "0x1004 sp cfa=2 fp=-2 ra=-1", "0x1008 fp cfa=2 fp=-2 ra=-1"}},
		{"arm64 pointer authentication", true,
			[]byte{0x2d, 0x41, 0x0e, 16, 0x9d, 2, 0x9e, 1, 0x41, 0x2d},
			[]string{"0x1000 sp cfa=0 fp=0 ra=0 flags=0x5", "0x1004 sp cfa=2 fp=-2 ra=-1 flags=0x4", "0x1008 sp cfa=2 fp=-2 ra=-1"}},
		{"arm64 return address moved to x16", true,
			[]byte{0x09, 30, 16},
			[]string{"0x1000 unsupported cfa=0 fp=0 ra=0"}},
		{"arm64 undefined x30", true,
			[]byte{0x07, 30},
			[]string{"0x1000 stop cfa=0 fp=0 ra=0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cie := &CIE{CodeAlign: 1, DataAlign: -8, RAColumn: 16, Initial: x86CIE}
			ar := regsX86_64
			if tc.arm64 {
				cie = &CIE{CodeAlign: 4, DataAlign: -8, RAColumn: 30, Initial: arm64CIE}
				ar = regsARM64
			}
			fde := &FDE{CIE: cie, Begin: 0x1000, End: 0x1100, Instructions: tc.prog}
			sec := &Section{Order: binary.LittleEndian, PtrSize: 8}
			rows, err := run(fde, sec, regs{sp: ar.sp, fp: ar.fp, ra: cie.RAColumn}, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rows {
				s := fmtRule(r.pc, rowFor(&r.st, cie, ar))
				if f := rowFor(&r.st, cie, ar).Flags; f != 0 {
					s += fmt.Sprintf(" flags=%#x", f)
				}
				got = append(got, s)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("rows %q, want %q", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("row %d: %s, want %s", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// TestProgramErrors: malformed programs fail with one line and no panic.
func TestProgramErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		prog []byte
	}{
		{"restore_state without remember", []byte{0x0b}},
		{"unknown opcode", []byte{0x3f}},
		{"truncated operand", []byte{0x0c, 7}},
		{"location moves backwards", []byte{0x41, 0x01, 0, 0, 0, 0, 0, 0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cie := &CIE{CodeAlign: 1, DataAlign: -8, RAColumn: 16, FDEEncoding: peAbsptr}
			fde := &FDE{CIE: cie, Begin: 0x1000, End: 0x1100, Instructions: tc.prog}
			_, err := run(fde, &Section{Order: binary.LittleEndian, PtrSize: 8}, regs{sp: 7, fp: 6, ra: 16}, nil)
			if err == nil {
				t.Fatal("no error")
			}
			t.Log(err)
		})
	}
}
