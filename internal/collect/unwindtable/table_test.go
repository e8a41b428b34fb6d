package unwindtable

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

const libcX86 = "/usr/lib/x86_64-linux-gnu/libc.so.6"
const python311 = "/usr/bin/python3.11"

// TestPLT checks the rows of python3.11's lazy-binding PLT against the stub
// layout: PLT0 pushes once (CFA rsp+16), then jumps with one more word pushed
// (rsp+24); each 16-byte entry has CFA rsp+8 before its push at offset 11 and
// rsp+16 after, which is the KindPLT expression with threshold 11.
func TestPLT(t *testing.T) {
	f := testutil.OpenELF(t, python311)
	plt := f.Section(".plt")
	if plt == nil {
		t.Skip("no .plt")
	}
	tab := buildFile(t, python311)
	for _, tc := range []struct {
		pc   uint64
		want Rule
	}{
		{plt.Addr, Rule{Kind: KindSP, CFA: 2, RA: -1}},
		{plt.Addr + 5, Rule{Kind: KindSP, CFA: 2, RA: -1}},
		{plt.Addr + 6, Rule{Kind: KindSP, CFA: 3, RA: -1}},
		{plt.Addr + 16, Rule{Kind: KindPLT, CFA: 1, FP: 11, RA: -1}},
		{plt.Addr + plt.Size - 1, Rule{Kind: KindPLT, CFA: 1, FP: 11, RA: -1}},
	} {
		if got := tab.Lookup(tc.pc).Rule; got != tc.want {
			t.Errorf("pc %#x (.plt+%#x): %+v, want %+v", tc.pc, tc.pc-plt.Addr, got, tc.want)
		}
	}
}

// TestSignalFrame checks libc's __restore_rt: readelf's raw dump of the FDE
// whose CIE has the 'S' augmentation gives the SP-relative slots of the saved
// rsp, rip and rbp; the row must carry the same offsets.
func TestSignalFrame(t *testing.T) {
	tab := buildFile(t, libcX86)
	raw := string(runReadelf(t, "-wf", libcX86))
	sigCIE := regexp.MustCompile(`(?m)^([0-9a-f]+) [0-9a-f]+ 0+ CIE\n  Version: +\d+\n  Augmentation: +"zRS"`).FindStringSubmatch(raw)
	if sigCIE == nil {
		t.Fatal("no zRS CIE in libc's .eh_frame")
	}
	fde := regexp.MustCompile(`(?m)^[0-9a-f]+ [0-9a-f]+ [0-9a-f]+ FDE cie=` + sigCIE[1] + ` pc=([0-9a-f]+)\.\.([0-9a-f]+)\n((?:  .*\n)+)`).FindStringSubmatch(raw)
	if fde == nil {
		t.Fatal("no FDE of the zRS CIE")
	}
	begin, _ := strconv.ParseUint(fde[1], 16, 64)
	end, _ := strconv.ParseUint(fde[2], 16, 64)
	slot := func(re string) int16 {
		m := regexp.MustCompile(re).FindStringSubmatch(fde[3])
		if m == nil {
			t.Fatalf("%s not in %s", re, fde[3])
		}
		v, _ := strconv.Atoi(m[1])
		return int16(v / 8)
	}
	want := Rule{
		Kind:  KindSignal,
		Flags: FlagSignal,
		CFA:   slot(`DW_CFA_def_cfa_expression \(DW_OP_breg7 \(rsp\): (\d+); DW_OP_deref\)`),
		RA:    slot(`r16 \(rip\) \(DW_OP_breg7 \(rsp\): (\d+)\)`),
		FP:    slot(`r6 \(rbp\) \(DW_OP_breg7 \(rsp\): (\d+)\)`),
	}
	for _, pc := range []uint64{begin, begin + 1, end - 1} {
		if got := tab.Lookup(pc).Rule; got != want {
			t.Errorf("pc %#x: %+v, want %+v", pc, got, want)
		}
	}
	if tab.Stats.Signal != 1 {
		t.Errorf("%d signal rows, want 1", tab.Stats.Signal)
	}
}

// TestStopFrames: _start (python3's entry point) and the child side of clone
// set the return address undefined; those pcs must end the walk.
func TestStopFrames(t *testing.T) {
	py := testutil.OpenELF(t, python311)
	if r := buildFile(t, python311).Lookup(py.Entry); r.Kind != KindStop {
		t.Errorf("python3.11 _start at %#x: %+v, want a stop row", py.Entry, r)
	}
	libc := testutil.OpenELF(t, libcX86)
	syms, err := libc.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	tab := buildFile(t, libcX86)
	for _, s := range syms {
		if s.Name != "__clone" {
			continue
		}
		stops := 0
		for pc := s.Value; pc < s.Value+s.Size; pc++ {
			if tab.Lookup(pc).Kind == KindStop {
				stops++
			}
		}
		if stops == 0 || tab.Lookup(s.Value).Kind != KindSP {
			t.Errorf("__clone: %d pcs with a stop row, entry row %+v; want the child's path to stop", stops, tab.Lookup(s.Value))
		}
		return
	}
	t.Error("no __clone in libc's dynamic symbols")
}

// TestGaps: pcs outside every FDE get KindNone, and rows are sorted and merged.
func TestGaps(t *testing.T) {
	tab := buildFile(t, libcX86)
	if tab.Lookup(0).Kind != KindNone {
		t.Errorf("pc 0: %+v", tab.Lookup(0))
	}
	if last := tab.Rows[len(tab.Rows)-1]; last.Kind != KindNone {
		t.Errorf("last row %+v, want none", last)
	}
	if tab.Lookup(uint64(tab.Rows[len(tab.Rows)-1].PC)+1<<20).Kind != KindNone {
		t.Error("pc past the end is covered")
	}
	for i := 1; i < len(tab.Rows); i++ {
		if tab.Rows[i].PC <= tab.Rows[i-1].PC {
			t.Fatalf("rows %d and %d out of order: %+v %+v", i-1, i, tab.Rows[i-1], tab.Rows[i])
		}
		if tab.Rows[i].Rule == tab.Rows[i-1].Rule {
			t.Fatalf("rows %d and %d not merged: %+v %+v", i-1, i, tab.Rows[i-1], tab.Rows[i])
		}
	}
	// Encode/Decode round trip.
	enc := tab.Encode()
	if len(enc) != tab.Bytes() {
		t.Fatalf("encoded %d bytes, want %d", len(enc), tab.Bytes())
	}
	for i, r := range tab.Rows {
		if got := DecodeRow(enc[i*RowSize:]); got != r {
			t.Fatalf("row %d decodes to %+v, want %+v", i, got, r)
		}
	}
}

// TestEHFrameFromHeader: the PT_GNU_EH_FRAME route finds the same FDEs as the
// section headers do.
func TestEHFrameFromHeader(t *testing.T) {
	f := testutil.OpenELF(t, libcX86)
	data, addr, ok := ehFrameFromHeader(f)
	if !ok {
		t.Fatal("PT_GNU_EH_FRAME did not lead to .eh_frame")
	}
	s := f.Section(".eh_frame")
	if addr != s.Addr {
		t.Fatalf(".eh_frame at %#x via the header, %#x via sections", addr, s.Addr)
	}
	sec := Section{Kind: EHFrame, Order: f.ByteOrder, PtrSize: 8, Addr: addr}
	viaHdr, err := ParseFrames(data, sec)
	if err != nil {
		t.Fatal(err)
	}
	secData, _ := s.Data()
	viaSec, err := ParseFrames(secData, sec)
	if err != nil {
		t.Fatal(err)
	}
	if len(viaHdr.FDEs) != len(viaSec.FDEs) || len(viaSec.FDEs) < 1000 {
		t.Errorf("%d FDEs via the header, %d via the section", len(viaHdr.FDEs), len(viaSec.FDEs))
	}
}

const testProg = `
#include <stdio.h>
#include <stdlib.h>
volatile unsigned long sink;
__attribute__((noinline)) void heavy(unsigned long n) { for (unsigned long i = 0; i < n * 3; i++) sink += i * i; }
__attribute__((noinline)) void light(unsigned long n) { for (unsigned long i = 0; i < n; i++) sink ^= i; }
__attribute__((noinline)) void dispatch(unsigned long n) { char buf[300]; snprintf(buf, sizeof buf, "%lu", n); heavy(n); light(n + buf[0]); }
int main(int argc, char **argv) { dispatch(argc > 1 ? strtoul(argv[1], 0, 10) : 1000); return 0; }
`

func gcc(t *testing.T, dir, out string, args ...string) string {
	t.Helper()
	return testutil.CompileC(t, dir, out, testProg, args...)
}

func symbolAddr(t *testing.T, path, name string) (uint64, uint64) {
	t.Helper()
	f := testutil.OpenELF(t, path)
	syms, err := f.Symbols()
	if err != nil {
		t.Fatalf("%s symbols: %v", path, err)
	}
	for _, s := range syms {
		if s.Name == name {
			return s.Value, s.Size
		}
	}
	t.Fatalf("%s: no symbol %s", path, name)
	return 0, 0
}

// TestStripped: strip removes the symbols but not .eh_frame, and the rows of
// the stripped binary are those of the original.
func TestStripped(t *testing.T) {
	dir := t.TempDir()
	bin := gcc(t, dir, "prog", "-O2", "-fomit-frame-pointer")
	stripped := filepath.Join(dir, "prog.stripped")
	testutil.Tool(t, "strip", "-o", stripped, bin)
	full, str := buildFile(t, bin), buildFile(t, stripped)
	if len(str.Rows) < 4 || !slices.Equal(full.Rows, str.Rows) {
		t.Fatalf("stripped binary: %d rows, unstripped %d; want the same non-empty table", len(str.Rows), len(full.Rows))
	}
	for _, fn := range []string{"main", "dispatch", "heavy", "light"} {
		pc, _ := symbolAddr(t, bin, fn)
		if k := str.Lookup(pc).Kind; k != KindSP {
			t.Errorf("%s entry in the stripped binary: %v row, want sp", fn, k)
		}
	}
	checkAgainstReadelf(t, str, readelfFrames(t, stripped, "r16"), namesX86, ".eh_frame")
}

// TestDebugFrameOnly: code built without asynchronous unwind tables but with -g
// is described in .debug_frame only; with .eh_frame removed altogether the
// table comes from .debug_frame alone and agrees with readelf.
func TestDebugFrameOnly(t *testing.T) {
	dir := t.TempDir()
	bin := gcc(t, dir, "prog", "-O2", "-g", "-fomit-frame-pointer", "-fno-asynchronous-unwind-tables", "-fno-exceptions")
	only := filepath.Join(dir, "prog.debugframe")
	testutil.Tool(t, "objcopy", "-R", ".eh_frame", "-R", ".eh_frame_hdr", bin, only)
	if f := testutil.OpenELF(t, only); f.Section(".eh_frame") != nil || f.Section(".debug_frame") == nil {
		t.Fatal("objcopy did not leave .debug_frame only")
	}
	for _, path := range []string{bin, only} {
		tab := buildFile(t, path)
		if tab.Stats.DebugFrameFDEs < 4 {
			t.Errorf("%s: %d FDEs from .debug_frame, want main, dispatch, heavy and light", filepath.Base(path), tab.Stats.DebugFrameFDEs)
		}
		pc, size := symbolAddr(t, bin, "dispatch")
		entry, body := tab.Lookup(pc), tab.Lookup(pc+size/2)
		if entry.Kind != KindSP || entry.CFA != 1 || body.Kind != KindSP || body.CFA <= 1 {
			t.Errorf("%s dispatch: entry %+v, middle %+v; want sp+8 then a larger frame", filepath.Base(path), entry, body)
		}
		fdes, _ := checkAgainstReadelf(t, tab, readelfFrames(t, path, "r16"), namesX86, ".debug_frame")
		if fdes < 4 {
			t.Errorf("%s: %d .debug_frame FDEs checked against readelf", filepath.Base(path), fdes)
		}
	}
}

// TestNoUnwindInfo: a file with neither section says so with ErrNoUnwindInfo.
func TestNoUnwindInfo(t *testing.T) {
	dir := t.TempDir()
	bin := gcc(t, dir, "prog", "-O2", "-fno-asynchronous-unwind-tables", "-fno-exceptions", "-nostartfiles", "-Wl,-e,main", "-Wl,--no-eh-frame-hdr")
	bare := filepath.Join(dir, "prog.bare")
	testutil.Tool(t, "objcopy", "-R", ".eh_frame", "-R", ".eh_frame_hdr", "-R", ".debug_frame", bin, bare)
	if _, err := Build(testutil.Open(t, bare)); err != ErrNoUnwindInfo {
		t.Fatalf("Build: %v, want ErrNoUnwindInfo", err)
	}
}

// TestCache: one build per file; a copy with the same build-id shares it; a
// file without a build-id is keyed by its identity; a file that is not ELF
// fails with one line and is not cached.
func TestCache(t *testing.T) {
	if _, err := os.Stat(libcX86); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	data, err := os.ReadFile(libcX86)
	if err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(dir, "libc-copy.so")
	if err := os.WriteFile(copyPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	noID := gcc(t, dir, "noid", "-O2", "-Wl,--build-id=none")

	c := NewCache()
	t1, k1, err := c.Get(libcX86)
	if err != nil {
		t.Fatal(err)
	}
	if k1.BuildID == "" {
		t.Fatal("libc has no build-id")
	}
	t2, _, _ := c.Get(libcX86)
	t3, k3, _ := c.Get(copyPath)
	if t1 != t2 || t1 != t3 || k3 != k1 {
		t.Error("the same build-id built twice")
	}
	t4, k4, err := c.Get(noID)
	if err != nil || k4.BuildID != "" || k4.Ino == 0 || t4 == nil {
		t.Fatalf("no build-id file: key %v, err %v", k4, err)
	}
	if _, _, err := c.Get(filepath.Join(dir, "noid.c")); err == nil || strings.Contains(err.Error(), "\n") {
		t.Errorf("a C source file: err %v, want one line", err)
	}
	s := c.Stats()
	if s.Builds != 2 || s.Hits != 2 || s.Files != 2 || s.Failed != 0 || s.Bytes != int64(t1.Bytes()+t4.Bytes()) {
		t.Errorf("stats %+v", s)
	}
	c.Forget(k1)
	if s := c.Stats(); s.Files != 1 || s.Bytes != int64(t4.Bytes()) {
		t.Errorf("after Forget: %+v", s)
	}
}

func TestBuildID(t *testing.T) {
	f := testutil.OpenELF(t, libcX86)
	out := runReadelf(t, "-n", libcX86)
	m := regexp.MustCompile(`Build ID: ([0-9a-f]+)`).FindSubmatch(out)
	if m == nil {
		t.Skip("readelf shows no build-id")
	}
	if got := BuildID(f); got != string(m[1]) {
		t.Errorf("build-id %q, readelf says %q", got, m[1])
	}
}

// TestCompact: the compact form names the same rule for every row, and the
// dictionary stays small when shared by several files.
func TestCompact(t *testing.T) {
	var d Rules
	rows := 0
	for _, p := range []string{libcX86, python311} {
		tab := buildFile(t, p)
		pcs, idx, err := tab.Compact(&d)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range tab.Rows {
			if pcs[i] != r.PC || d.Rule(idx[i]) != r.Rule {
				t.Fatalf("%s row %d: pc %#x rule %+v, want %+v", p, i, pcs[i], d.Rule(idx[i]), r)
			}
		}
		rows += len(tab.Rows)
	}
	if d.Len() > 2000 || len(d.Encode()) != d.Len()*RuleSize {
		t.Errorf("%d rules for %d rows", d.Len(), rows)
	}
	t.Logf("%d rows of libc and python3 share %d rules: %d bytes compact + %d of rules, %d as full rows",
		rows, d.Len(), rows*CompactRowSize, d.Len()*RuleSize, rows*RowSize)
}

// TestPLTARM64: ld writes no FDE for the arm64 .plt; its rows come from the
// stub layout, checked here against the instructions in the file.
func TestPLTARM64(t *testing.T) {
	const path = "/usr/aarch64-linux-gnu/lib/libc.so.6"
	f := testutil.OpenELF(t, path)
	plt := f.Section(".plt")
	if plt == nil {
		t.Skip("no .plt")
	}
	code, err := plt.Data()
	if err != nil {
		t.Fatal(err)
	}
	if w := f.ByteOrder.Uint32(code); w != arm64StpX16X30 {
		t.Fatalf(".plt starts with %#x, not stp x16, x30, [sp, #-16]!", w)
	}
	tab := buildFile(t, path)
	if !tab.Stats.SynthPLT {
		t.Fatal("no synthesized .plt rows")
	}
	inLR := Rule{Kind: KindSP, Flags: FlagRAInLR}
	for _, tc := range []struct {
		pc   uint64
		want Rule
	}{
		{plt.Addr, inLR},
		{plt.Addr + 4, Rule{Kind: KindSP, CFA: 2, RA: -1}},
		{plt.Addr + 31, Rule{Kind: KindSP, CFA: 2, RA: -1}},
		{plt.Addr + 32, inLR},
		{plt.Addr + plt.Size - 1, inLR},
	} {
		if got := tab.Lookup(tc.pc).Rule; got != tc.want {
			t.Errorf(".plt+%#x: %+v, want %+v", tc.pc-plt.Addr, got, tc.want)
		}
	}
}

// TestVDSO: the vDSO is an ELF image in memory only (no file to open); its
// table is built from the bytes of this process's [vdso] mapping and agrees
// with readelf reading the same bytes.
func TestVDSO(t *testing.T) {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip(err)
	}
	var lo, hi uint64
	for _, line := range strings.Split(string(maps), "\n") {
		if strings.HasSuffix(line, "[vdso]") {
			r := strings.SplitN(strings.Fields(line)[0], "-", 2)
			lo, _ = strconv.ParseUint(r[0], 16, 64)
			hi, _ = strconv.ParseUint(r[1], 16, 64)
		}
	}
	if lo == 0 {
		t.Skip("no [vdso] mapping")
	}
	mem, err := os.Open("/proc/self/mem")
	if err != nil {
		t.Skip(err)
	}
	defer mem.Close()
	image := make([]byte, hi-lo)
	if _, err := mem.ReadAt(image, int64(lo)); err != nil {
		t.Skipf("reading [vdso]: %v", err)
	}
	path := filepath.Join(t.TempDir(), "vdso.so")
	if err := os.WriteFile(path, image, 0o644); err != nil {
		t.Fatal(err)
	}
	tab := buildFile(t, path)
	names := namesX86
	if tab.Arch == ArchARM64 {
		names = namesARM64
	}
	fdes, checks := checkAgainstReadelf(t, tab, readelfFrames(t, path, names.raReg), names, ".eh_frame")
	if fdes < 2 {
		t.Errorf("%d vDSO FDEs checked", fdes)
	}
	t.Logf("vDSO: %d FDEs, %d row boundaries, %d rows, exec segments %+v", fdes, checks, len(tab.Rows), tab.Exec)
}
