package symbolize

import (
	"debug/elf"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// symAddr returns a symbol's address from nm, the reference we compare to.
func symAddr(t *testing.T, bin, name string) uint64 {
	t.Helper()
	out := testutil.Tool(t, "nm", bin)
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) == 3 && f[2] == name {
			v, _ := strconv.ParseUint(f[0], 16, 64)
			return v
		}
	}
	t.Fatalf("%s not in nm output", name)
	return 0
}

func addr2line(t *testing.T, bin string, addr uint64) (string, int) {
	t.Helper()
	out := testutil.Tool(t, "addr2line", "-e", bin, "0x"+strconv.FormatUint(addr, 16))
	s := strings.TrimSpace(string(out))
	i := strings.LastIndexByte(s, ':')
	line, _ := strconv.Atoi(strings.Fields(s[i+1:])[0])
	return s[:i], line
}

func TestELFAgainstBinutils(t *testing.T) {
	testutil.RequireTool(t, "addr2line", "binutils")
	dir := t.TempDir()
	bin := testutil.BuildC(t, dir, "work", []string{"work.c"})
	e, err := OpenELF(bin, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if e.BuildID == "" {
		t.Error("no build-id")
	}
	for _, fn := range []string{"spin_a", "spin_b", "main"} {
		a := symAddr(t, bin, fn)
		for _, off := range []uint64{0, 4, 9} {
			fr, ok := e.Lookup(a + off)
			if !ok || fr.Func != fn {
				t.Errorf("%s+%d: got %+v", fn, off, fr)
				continue
			}
			file, line := addr2line(t, bin, a+off)
			if filepath.Base(fr.File) != filepath.Base(file) || fr.Line != line {
				t.Errorf("%s+%d: line %s:%d, addr2line says %s:%d", fn, off, fr.File, fr.Line, file, line)
			}
		}
	}
}

func TestSeparateDebugFile(t *testing.T) {
	testutil.RequireTool(t, "objcopy", "binutils")
	dir := t.TempDir()
	bin := testutil.BuildC(t, dir, "work", []string{"work.c"}, "-Wl,--build-id")
	full, err := OpenELF(bin, Options{})
	if err != nil {
		t.Fatal(err)
	}
	id := full.BuildID
	dbgDir := filepath.Join(dir, "debug", ".build-id", id[:2])
	os.MkdirAll(dbgDir, 0o755)
	run := func(args ...string) {
		testutil.Tool(t, args[0], args[1:]...)
	}
	run("objcopy", "--only-keep-debug", bin, filepath.Join(dbgDir, id[2:]+".debug"))
	run("strip", "--strip-all", bin)
	stripped, err := OpenELF(bin, Options{DebugDir: filepath.Join(dir, "debug")})
	if err != nil {
		t.Fatal(err)
	}
	a := symAddr(t, filepath.Join(dbgDir, id[2:]+".debug"), "spin_b")
	fr, ok := stripped.Lookup(a + 4)
	if !ok || fr.Func != "spin_b" || fr.Line == 0 {
		t.Errorf("stripped binary with debug file: got %+v", fr)
	}
	none, _ := OpenELF(bin, Options{DebugDir: filepath.Join(dir, "nowhere")})
	if fr, ok := none.Lookup(a + 4); ok && fr.Func == "spin_b" {
		t.Errorf("stripped binary resolved spin_b without its debug file")
	}
}

func TestCPlusPlusNames(t *testing.T) {
	testutil.RequireTool(t, "g++", "g++")
	dir := t.TempDir()
	src := filepath.Join(dir, "w.cc")
	os.WriteFile(src, []byte("namespace ns { struct Worker { __attribute__((noinline)) static unsigned long spin(unsigned long n) { volatile unsigned long x = 0; for (unsigned long i = 0; i < n; i++) x += i; return x; } }; }\nint main() { return ns::Worker::spin(10) == 1; }\n"), 0o644)
	bin := filepath.Join(dir, "w")
	testutil.Tool(t, "g++", "-O1", "-g", "-o", bin, src)
	e, err := OpenELF(bin, Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := symAddr(t, bin, "_ZN2ns6Worker4spinEm")
	if fr, _ := e.Lookup(a); fr.Func != "ns::Worker::spin(unsigned long)" {
		t.Errorf("got %q", fr.Func)
	}
}

// TestLookupRestorer: a return address one byte before a function, in the
// padding after another, is the function that starts there (a signal
// handler returns to the restorer, which nothing calls); inside a
// function it stays that function.
func TestLookupRestorer(t *testing.T) {
	e := &ELF{syms: NewSymbolTable([]Symbol{
		{Name: "runtime.cgoSigtramp.abi0", Start: 0x483100, Size: 187},
		{Name: "runtime.sigreturn__sigaction.abi0", Start: 0x4831c0, Size: 9},
	})}
	for _, c := range []struct {
		addr uint64
		want string
	}{{0x4831bf, "runtime.sigreturn__sigaction.abi0"}, {0x4831ba, "runtime.cgoSigtramp.abi0"}, {0x4831bc, ""}} {
		fr, _ := e.Lookup(c.addr)
		if fr.Func != c.want {
			t.Errorf("Lookup(%#x) = %q, want %q", c.addr, fr.Func, c.want)
		}
	}
}

// TestStrippedGoBinary names a Go binary linked with -s -w (no .symtab, no
// DWARF; sonde's own release build is one) from its pclntab: every
// function of the same program linked with its symbol table is found under
// its name at its address.
func TestStrippedGoBinary(t *testing.T) {
	testutil.RequireTool(t, "go", "golang")
	dir := t.TempDir()
	build := func(out, ldflags string) string {
		return testutil.BuildGoLinked(t, dir, out, "testdata/goprog", ldflags)
	}
	full, stripped := build("full", ""), build("stripped", "-s -w")
	if testutil.OpenELF(t, stripped).Section(".symtab") != nil {
		t.Fatal("-s left a .symtab")
	}
	e, err := OpenELF(stripped, Options{})
	if err != nil {
		t.Fatal(err)
	}
	syms, err := testutil.OpenELF(t, full).Symbols()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Size == 0 || !strings.HasPrefix(s.Name, "main.") && !strings.HasPrefix(s.Name, "runtime.") {
			continue
		}
		fr, ok := e.Lookup(s.Value + s.Size/2)
		// The linker marks assembly functions .abi0 in .symtab only.
		if !ok || fr.Func != strings.TrimSuffix(s.Name, ".abi0") || fr.FuncStart != s.Value {
			t.Errorf("%s at %#x: stripped binary names %q at %#x", s.Name, s.Value, fr.Func, fr.FuncStart)
			if n++; n > 5 {
				break
			}
			continue
		}
		n++
	}
	if n < 100 {
		t.Errorf("only %d functions compared", n)
	}
}

// TestPrepareLinesReadsOnlyTheUnitsAsked names a few functions of a Go
// program (a unit per package) from the units that hold them only, and
// must name them as the whole line table does.
func TestPrepareLinesReadsOnlyTheUnitsAsked(t *testing.T) {
	exe := testutil.BuildGo(t, t.TempDir(), "goprog", "goprog")
	// A Go binary's functions take their lines from the pclntab; this
	// test is of its DWARF, read as for code the pclntab does not cover.
	dwarfOnly := func() (*ELF, error) {
		e, err := OpenELF(exe, Options{})
		if err == nil {
			e.goLines = nil
			e.loadLazyDWARF()
		}
		return e, err
	}
	whole, err := dwarfOnly()
	if err != nil {
		t.Fatal(err)
	}
	if !whole.HasDWARF() {
		t.Skip("the test binary has no DWARF (built with -w)")
	}
	var addrs []uint64
	for _, s := range whole.Symbols() {
		if s.Name == "main.main" || s.Name == "strconv.ParseUint" || s.Name == "sort.Search" || s.Name == "fmt.Fprintf" {
			addrs = append(addrs, s.Start+1)
		}
	}
	if len(addrs) < 2 {
		t.Fatalf("found %d of the functions to name", len(addrs))
	}
	part, err := dwarfOnly()
	if err != nil {
		t.Fatal(err)
	}
	part.PrepareLines(addrs)
	// Through the pclntab, the same lines and no DWARF read at all.
	goPart, err := OpenELF(exe, Options{})
	if err != nil {
		t.Fatal(err)
	}
	goPart.PrepareLines(addrs)
	for _, a := range addrs {
		wf, wl, _ := whole.Line(a)
		if gf, gl, ok := goPart.Line(a); !ok || gf != wf || gl != wl {
			t.Errorf("0x%x: DWARF %s:%d, pclntab %s:%d (%v)", a, wf, wl, gf, gl, ok)
		}
	}
	if goPart.dwarf != nil || goPart.lines != nil {
		t.Errorf("naming Go functions read DWARF")
	}
	for _, a := range addrs {
		wf, wl, wok := whole.Line(a)
		pf, pl, pok := part.Line(a)
		if !wok || wf != pf || wl != pl || wok != pok {
			t.Errorf("0x%x: whole table %s:%d (%v), units asked %s:%d (%v)", a, wf, wl, wok, pf, pl, pok)
		}
	}
	if p, w := len(part.lines.rows), len(whole.lines.rows); p >= w/4 {
		t.Errorf("the units asked hold %d rows of the whole table's %d: want far fewer", p, w)
	}
}
