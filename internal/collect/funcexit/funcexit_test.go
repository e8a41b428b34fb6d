package funcexit

import (
	"bufio"
	"debug/elf"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

func goBuild(t *testing.T, arch string) string {
	t.Helper()
	return testutil.BuildGoFor(t, t.TempDir(), "goprog-"+arch, "goprog", arch)
}

// gnuRets lists the offsets of ret instructions in fn as GNU objdump
// disassembles it: an independent decoder.
func gnuRets(t *testing.T, bin, fn string, start uint64) []uint64 {
	t.Helper()
	testutil.RequireTool(t, "objdump", "binutils")
	out := testutil.Tool(t, "objdump", "-d", "--no-show-raw-insn", "--disassemble="+fn, bin)
	re := regexp.MustCompile(`^\s*([0-9a-f]+):\s+ret`)
	var offs []uint64
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			a, _ := strconv.ParseUint(m[1], 16, 64)
			offs = append(offs, a-start)
		}
	}
	return offs
}

// goRets lists RET offsets as `go tool objdump` shows them (it reads arm64
// binaries on any host).
func goRets(t *testing.T, bin, fn string, start uint64) []uint64 {
	t.Helper()
	out := testutil.Tool(t, "go", "tool", "objdump", "-s", "^"+regexp.QuoteMeta(fn)+"$", bin)
	var offs []uint64
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 4 && f[3] == "RET" {
			a, _ := strconv.ParseUint(strings.TrimPrefix(f[1], "0x"), 16, 64)
			offs = append(offs, a-start)
		}
	}
	return offs
}

func symStart(t *testing.T, f *elf.File, name string) uint64 {
	t.Helper()
	s, err := lookup(f, name)
	if err != nil {
		t.Fatal(err)
	}
	return s.Value
}

func TestGoReturnsMatchDisassemblers(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		t.Run(arch, func(t *testing.T) {
			bin := goBuild(t, arch)
			f := testutil.OpenELF(t, bin)
			for _, fn := range []string{"main.work", "main.deep", "main.main", "fmt.Fprintf", "runtime.mallocgc"} {
				got, err := Returns(f, fn)
				if err != nil {
					t.Fatalf("%s: %v", fn, err)
				}
				start := symStart(t, f, fn)
				var want []uint64
				if arch == "amd64" {
					want = gnuRets(t, bin, fn, start)
				} else {
					want = goRets(t, bin, fn, start)
				}
				if len(want) == 0 || !slices.Equal(sortedCopy(got), sortedCopy(want)) {
					t.Errorf("%s: returns at %#x, disassembler says %#x", fn, got, want)
				}
			}
		})
	}
}

func TestIsGo(t *testing.T) {
	bin := goBuild(t, "amd64")
	if !IsGo(testutil.Open(t, bin)) {
		t.Error("a Go binary is not recognised as Go")
	}
	c := testutil.BuildC(t, t.TempDir(), "work", []string{"work.c"})
	if IsGo(testutil.Open(t, c)) {
		t.Error("a C binary is taken for Go")
	}
}

// C code at -O2 has several returns and tail calls; both must be found,
// and the tail call must be refused by Returns.
func TestCExits(t *testing.T) {
	bin := testutil.CompileC(t, t.TempDir(), "exits", `
__attribute__((noinline)) int leaf(int x) { return x * 3 + 1; }
__attribute__((noinline)) int two(int x) { if (x > 10) return x - 10; if (x < -5) return -x; return leaf(x) + 7; }
__attribute__((noinline)) int tail(int x) { return leaf(x + 1); }
int main(int c, char **v) { return two(c) + tail(c); }
`, "-O2", "-fomit-frame-pointer")
	f := testutil.OpenELF(t, bin)
	for _, fn := range []string{"leaf", "two", "main"} {
		ex, err := Find(f, fn)
		if err != nil {
			t.Fatalf("%s: %v", fn, err)
		}
		var rets []uint64
		for _, s := range ex.Sites {
			if s.Kind == Return {
				rets = append(rets, s.Offset)
			}
		}
		if want := gnuRets(t, bin, fn, symStart(t, f, fn)); !slices.Equal(sortedCopy(rets), sortedCopy(want)) {
			t.Errorf("%s: returns at %#x, objdump says %#x", fn, rets, want)
		}
	}
	ex, err := Find(f, "tail")
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.Sites) != 1 || ex.Sites[0].Kind != TailCall {
		t.Errorf("tail: sites %+v, want one tail call", ex.Sites)
	}
	if _, err := Returns(f, "tail"); err == nil || !strings.Contains(err.Error(), "tail call") {
		t.Errorf("Returns(tail) = %v, want a tail-call refusal", err)
	}
	if _, err := Find(f, "nosuch"); err == nil {
		t.Error("a missing function gave no error")
	}
}

// Bytes the decoder cannot read refuse the function: a probe off an
// instruction boundary would corrupt the program.
func TestUndecodableRefused(t *testing.T) {
	if _, err := decodeX86([]byte{0x48, 0x89}); err == nil {
		t.Error("a cut instruction was accepted")
	}
	ex, err := decodeX86([]byte{0xc3, 0xcc, 0xcc, 0x00})
	if err != nil || len(ex.Sites) != 1 {
		t.Errorf("ret + padding: %+v %v", ex, err)
	}
}

func sortedCopy(v []uint64) []uint64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v
}
