package symbolize

import (
	"debug/elf"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// pltStubs returns the synthesized stubs of bin ("name@plt"), by address.
func pltStubs(t *testing.T, bin string) (*ELF, map[uint64]Symbol) {
	t.Helper()
	e, err := OpenELF(bin, Options{NoLines: true})
	if err != nil {
		t.Fatal(err)
	}
	stubs := map[uint64]Symbol{}
	for _, s := range e.Symbols() {
		if strings.HasSuffix(s.Name, "@plt") {
			stubs[s.Start] = s
		}
	}
	return e, stubs
}

var pltLabel = regexp.MustCompile(`^([0-9a-f]+) <(.*@plt)>:$`)

// objdumpPLTLabels reads the "<memcmp@plt>:" labels of a disassembly,
// objdump's own naming of the stubs.
func objdumpPLTLabels(dis string) map[uint64]string {
	labels := map[uint64]string{}
	for _, l := range strings.Split(dis, "\n") {
		if m := pltLabel.FindStringSubmatch(l); m != nil {
			a, _ := strconv.ParseUint(m[1], 16, 64)
			labels[a] = m[2]
		}
	}
	return labels
}

// checkLabels compares the stubs with the disassembler's labels: the same
// addresses and names, and no stub running into the next label. unlabeled
// says which stubs the disassembler may leave without a label.
func checkLabels(t *testing.T, e *ELF, stubs map[uint64]Symbol, labels map[uint64]string, unlabeled func(Symbol) bool) int {
	t.Helper()
	for a, name := range labels {
		s, ok := stubs[a]
		if !ok || s.Name != name {
			t.Errorf("objdump labels 0x%x %s, sonde has %+v", a, name, s)
			continue
		}
		if fr, ok := e.Lookup(a + s.Size - 1); !ok || fr.Func != Demangle(name) {
			t.Errorf("last byte of %s names %+v", name, fr)
		}
	}
	for a, s := range stubs {
		if _, ok := labels[a]; !ok && !unlabeled(s) {
			t.Errorf("sonde has %s at 0x%x, objdump no label", s.Name, a)
		}
	}
	addrs := make([]uint64, 0, len(labels))
	for a := range labels {
		addrs = append(addrs, a)
	}
	sort.Slice(addrs, func(i, j int) bool { return addrs[i] < addrs[j] })
	for i := 1; i < len(addrs); i++ {
		if s := stubs[addrs[i-1]]; s.Start+s.Size > addrs[i] {
			t.Errorf("%s (size %d) runs into %s", s.Name, s.Size, labels[addrs[i]])
		}
	}
	return len(labels)
}

var (
	x86Jmp   = regexp.MustCompile(`^\s*([0-9a-f]+):.*\sjmp\s+\*0x[0-9a-f]+\(%rip\)\s+#\s*([0-9a-f]+)`)
	armAdrp  = regexp.MustCompile(`^\s*([0-9a-f]+):.*\sadrp\s+x16, 0x([0-9a-f]+)`)
	armLdr   = regexp.MustCompile(`^\s*([0-9a-f]+):.*\sldr\s+x17, \[x16(?:, #(\d+))?\]`)
	relaLine = regexp.MustCompile(`^([0-9a-f]{8,16})\s+[0-9a-f]+\s+(R_\S+)\s+(.*)$`)
)

// disassembledSlots reads, from a disassembly, the GOT slot each
// instruction's indirect jump goes through: x86-64's "jmp *…(%rip)" (its
// target in objdump's comment), arm64's adrp x16 / ldr x17 pair.
func disassembledSlots(dis string) map[uint64]uint64 {
	slots := map[uint64]uint64{}
	var page uint64
	for _, l := range strings.Split(dis, "\n") {
		if m := x86Jmp.FindStringSubmatch(l); m != nil {
			a, _ := strconv.ParseUint(m[1], 16, 64)
			slots[a], _ = strconv.ParseUint(m[2], 16, 64)
		} else if m := armAdrp.FindStringSubmatch(l); m != nil {
			page, _ = strconv.ParseUint(m[2], 16, 64)
		} else if m := armLdr.FindStringSubmatch(l); m != nil {
			a, _ := strconv.ParseUint(m[1], 16, 64)
			off, _ := strconv.ParseUint(m[2], 10, 64)
			slots[a] = page + off
		}
	}
	return slots
}

// slotNames reads readelf -r: the name each GOT slot's relocation gives
// it, the symbol (without its version), or for an IRELATIVE one the names
// nm gives its resolver's address.
func slotNames(t *testing.T, bin string) map[uint64][]string {
	t.Helper()
	byAddr := map[uint64][]string{}
	for _, args := range [][]string{{bin}, {"-D", bin}} {
		nm, _ := testutil.TryTool("nm", args...) // a stripped library has no .symtab
		for _, l := range strings.Split(nm, "\n") {
			if f := strings.Fields(l); len(f) == 3 {
				a, _ := strconv.ParseUint(f[0], 16, 64)
				byAddr[a] = append(byAddr[a], strings.Split(f[2], "@")[0])
			}
		}
	}
	names := map[uint64][]string{}
	for _, l := range strings.Split(testutil.Tool(t, "readelf", "-rW", bin), "\n") {
		m := relaLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		slot, _ := strconv.ParseUint(m[1], 16, 64)
		f := strings.Fields(m[3])
		switch {
		case strings.Contains(m[2], "IRELATIV") && len(f) == 1:
			a, _ := strconv.ParseUint(f[0], 16, 64)
			names[slot] = append(byAddr[a], "*ABS*+0x"+f[0])
		case len(f) >= 2:
			names[slot] = []string{strings.Split(f[1], "@")[0]}
		}
	}
	return names
}

// checkSlots checks each stub's name against the relocation of the GOT
// slot its code (as disassembled) jumps through.
func checkSlots(t *testing.T, bin string, stubs map[uint64]Symbol, dis string) int {
	t.Helper()
	slots, names := disassembledSlots(dis), slotNames(t, bin)
	n := 0
	for a, s := range stubs {
		var slot uint64
		for i := a; i < a+s.Size && slot == 0; i++ {
			slot = slots[i]
		}
		want := names[slot]
		if slot == 0 || len(want) == 0 {
			t.Errorf("%s at 0x%x: no GOT slot with a relocation in its code (slot 0x%x)", s.Name, a, slot)
			continue
		}
		if !strings.Contains(" "+strings.Join(want, " ")+" ", " "+strings.TrimSuffix(s.Name, "@plt")+" ") {
			t.Errorf("%s at 0x%x jumps through slot 0x%x, relocated for %v", s.Name, a, slot, want)
		}
		n++
	}
	return n
}

// TestPLTAgainstObjdump builds the same program with the PLT layouts gcc
// and ld make (IBT's .plt.sec or not, lazy or immediate binding, PIE or
// not, static) and checks sonde's stubs against objdump's labels and
// against the GOT slot each stub's code jumps through.
func TestPLTAgainstObjdump(t *testing.T) {
	testutil.RequireTool(t, "objdump", "binutils")
	testutil.RequireTool(t, "readelf", "binutils")
	dir := t.TempDir()
	// Debian's crt files lack the IBT property, so ld makes a .plt.sec
	// only when told to (-z ibtplt), as it does for fully IBT builds.
	cases := []struct {
		name   string
		flags  []string
		static bool
	}{
		{"ibt-lazy", []string{"-fcf-protection=full", "-Wl,-z,ibtplt", "-Wl,-z,lazy"}, false},
		{"ibt-now", []string{"-fcf-protection=full", "-Wl,-z,ibtplt", "-Wl,-z,now"}, false},
		{"plain-lazy", []string{"-fcf-protection=none", "-Wl,-z,lazy"}, false},
		{"plain-now", []string{"-fcf-protection=none", "-Wl,-z,now"}, false},
		{"nopie-lazy", []string{"-fcf-protection=none", "-no-pie", "-Wl,-z,lazy"}, false},
		{"static", []string{"-static"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bin := testutil.BuildC(t, dir, c.name, []string{"pltcalls.c"}, c.flags...)
			f := testutil.OpenELF(t, bin)
			if strings.HasPrefix(c.name, "ibt") && f.Section(".plt.sec") == nil {
				t.Fatal("no .plt.sec: the IBT layout is not tested")
			}
			e, stubs := pltStubs(t, bin)
			dis := testutil.Tool(t, "objdump", "-d", bin)
			if !c.static {
				// The lazy binder's stub heads .plt (objdump's "<.plt>:" or "<free@plt-0x10>:").
				if fr, _ := e.Lookup(f.Section(".plt").Addr); fr.Func != ".plt" {
					t.Errorf(".plt's first byte names %q", fr.Func)
				}
				for _, fn := range []string{"memcmp@plt", "strlen@plt", "free@plt"} {
					if !slicesContainsName(stubs, fn) {
						t.Errorf("no %s", fn)
					}
				}
			}
			// objdump labels no stub of a static executable (no .dynsym).
			labels := checkLabels(t, e, stubs, objdumpPLTLabels(dis), func(Symbol) bool { return c.static })
			slots := checkSlots(t, bin, stubs, dis)
			if slots == 0 {
				t.Error("no stub checked")
			}
			t.Logf("%s: %d stubs, %d checked against objdump labels, %d against their GOT slots", c.name, len(stubs), labels, slots)
		})
	}
}

func slicesContainsName(stubs map[uint64]Symbol, name string) bool {
	for _, s := range stubs {
		if s.Name == name {
			return true
		}
	}
	return false
}

// TestPLTArm64 checks the arm64 layout on the cross libc Debian ships
// (libc6-arm64-cross), against llvm-objdump, which knows arm64 and labels
// its stubs (binutils' objdump here is x86 only). llvm-objdump leaves the
// IRELATIVE stubs unlabeled; their GOT slots check them.
func TestPLTArm64(t *testing.T) {
	const lib = "/usr/aarch64-linux-gnu/lib/libc.so.6"
	if _, err := os.Stat(lib); err != nil {
		t.Skip("no arm64 libc: apt-get install libc6-arm64-cross")
	}
	dump := ""
	for _, name := range []string{"llvm-objdump", "llvm-objdump-14", "aarch64-linux-gnu-objdump"} {
		if p, ok := testutil.HaveTool(name); ok {
			dump = p
			break
		}
	}
	if dump == "" {
		t.Skip("no objdump for arm64: apt-get install llvm")
	}
	testutil.RequireTool(t, "readelf", "binutils")
	e, stubs := pltStubs(t, lib)
	if f := testutil.OpenELF(t, lib); f.Machine != elf.EM_AARCH64 {
		t.Fatalf("%s is %v", lib, f.Machine)
	}
	dis := testutil.Tool(t, dump, "-d", "--section=.plt", lib)
	labels := checkLabels(t, e, stubs, objdumpPLTLabels(dis), func(Symbol) bool { return true })
	slots := checkSlots(t, lib, stubs, dis)
	irel := strings.Count(testutil.Tool(t, "readelf", "-rW", lib), "R_AARCH64_IRELATIVE")
	if labels == 0 || labels+irel != len(stubs) || slots != len(stubs) {
		t.Errorf("%d stubs: %d labeled, %d IRELATIVE, %d checked against their GOT slots", len(stubs), labels, irel, slots)
	}
	t.Logf("arm64 libc: %d stubs, %d checked against %s labels, %d against their GOT slots", len(stubs), labels, dump, slots)
}

func TestArm64PLTShape(t *testing.T) {
	cases := []struct{ size, n, header, entry uint64 }{
		{32 + 19*16, 19, 32, 16},    // lazy, as glibc's libc.so.6
		{32 + 5*24, 5, 32, 24},      // BTI or PAC entries
		{5 * 16, 5, 0, 16},          // static: no header
		{5 * 24, 5, 0, 24},          // static with BTI
		{32 + 5*16 + 32, 5, 32, 16}, // a TLS descriptor stub after the entries
		{96, 4, 32, 16},             // 32+4*16 = 4*24: the common shape wins
		{0, 0, 0, 16},
	}
	for _, c := range cases {
		if h, e := arm64PLTShape(c.size, c.n); h != c.header || e != c.entry {
			t.Errorf("arm64PLTShape(%d, %d) = %d, %d; want %d, %d", c.size, c.n, h, e, c.header, c.entry)
		}
	}
}

func TestX86JmpSlot(t *testing.T) {
	jmp := []byte{0xff, 0x25, 0x10, 0x00, 0x00, 0x00}
	cases := []struct {
		name string
		code []byte
		slot uint64
		ok   bool
	}{
		{"plain", append([]byte{}, jmp...), 0x1000 + 6 + 0x10, true},
		{"endbr64", append(append([]byte{}, endbr64...), jmp...), 0x1000 + 10 + 0x10, true},
		{"endbr64 bnd", append(append(append([]byte{}, endbr64...), 0xf2), jmp...), 0x1000 + 11 + 0x10, true},
		{"negative", []byte{0xff, 0x25, 0xf0, 0xff, 0xff, 0xff}, 0x1000 + 6 - 0x10, true},
		{"direct jmp", []byte{0xe9, 0, 0, 0, 0, 0x90}, 0, false},
		{"short", []byte{0xff, 0x25, 0x10}, 0, false},
		{"empty", nil, 0, false},
	}
	for _, c := range cases {
		slot, ok := x86JmpSlot(c.code, 0x1000)
		if ok != c.ok || (ok && slot != c.slot) {
			t.Errorf("%s: 0x%x, %v; want 0x%x, %v", c.name, slot, ok, c.slot, c.ok)
		}
	}
}

// TestPLTNamesGiveWay: a real symbol in a stub's range keeps its name.
func TestPLTNamesGiveWay(t *testing.T) {
	real := NewSymbolTable([]Symbol{
		{Name: "covers", Start: 0x1000, Size: 0x20}, // over the first stub
		{Name: "inside", Start: 0x1038},             // sizeless, in the fourth
		{Name: "after", Start: 0x1050, Size: 0x10},
	})
	syn := []Symbol{
		{Name: "a@plt", Start: 0x1010, Size: 0x10},
		{Name: "b@plt", Start: 0x1020, Size: 0x10},
		{Name: "c@plt", Start: 0x1030, Size: 0x10},
		{Name: "d@plt", Start: 0x1040, Size: 0x10},
	}
	got := stubNamesOf(uncovered(syn, real))
	if want := "b@plt d@plt"; got != want {
		t.Errorf("kept %q, want %q", got, want)
	}
	if got := Demangle("_Znwm@plt"); got != "operator new(unsigned long)@plt" {
		t.Errorf("Demangle(_Znwm@plt) = %q", got)
	}
}

func stubNamesOf(syms []Symbol) string {
	var names []string
	for _, s := range syms {
		names = append(names, s.Name)
	}
	return strings.Join(names, " ")
}
