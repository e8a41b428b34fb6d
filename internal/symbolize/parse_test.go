package symbolize

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestParseKallsyms(t *testing.T) {
	in := `ffffffff81000000 T _text
ffffffff81001000 T do_one_initcall
ffffffff81002000 t helper_local
ffffffff81003000 D some_data
ffffffff81004000 T ksys_write
ffffffffc0100000 t ext4_readpage	[ext4]
ffffffffc0100100 t ext4_writepage	[ext4]
`
	k, err := ParseKallsyms(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		addr uint64
		fn   string
		mod  string
	}{
		{0xffffffff81001010, "do_one_initcall", ""},
		{0xffffffff81002fff, "helper_local", ""},
		{0xffffffff81004040, "ksys_write", ""},
		{0xffffffffc0100080, "ext4_readpage", "ext4"},
		{0xffffffffc0100180, "ext4_writepage", "ext4"},
	}
	for _, c := range cases {
		f, ok := k.Lookup(c.addr)
		if !ok || f.Func != c.fn || k.Module(c.addr) != c.mod {
			t.Errorf("%#x: got %q module %q, want %q %q", c.addr, f.Func, k.Module(c.addr), c.fn, c.mod)
		}
	}
	if _, ok := k.Lookup(0x1000); ok {
		t.Error("address below the kernel resolved")
	}
}

func TestParseKallsymsHidden(t *testing.T) {
	_, err := ParseKallsyms(strings.NewReader("0000000000000000 T _text\n0000000000000000 T foo\n"))
	if err == nil || !strings.Contains(err.Error(), "kptr_restrict") {
		t.Errorf("hidden addresses: %v", err)
	}
}

func TestParsePerfMap(t *testing.T) {
	in := "7f0000001000 40 LazyCompile:~handle /app/server.js:10\n0x7f0000002000 0x100 java.lang.String::hashCode\n"
	m, err := ParsePerfMap(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := m.Lookup(0x7f0000001010); !ok || f.Func != "LazyCompile:~handle /app/server.js:10" {
		t.Errorf("got %+v", f)
	}
	if f, ok := m.Lookup(0x7f00000020ff); !ok || f.Func != "java.lang.String::hashCode" {
		t.Errorf("got %+v", f)
	}
	if _, ok := m.Lookup(0x7f0000001040); ok {
		t.Error("address past the end of a JIT symbol resolved")
	}
	if _, err := ParsePerfMap(strings.NewReader("nonsense\n")); err == nil {
		t.Error("bad line accepted")
	}
}

func TestDemangle(t *testing.T) {
	cases := map[string]string{
		"_ZN2ns6Worker4spinEm":                   "ns::Worker::spin(unsigned long)",
		"_ZN4core3fmt5write17h0123456789abcdefE": "core::fmt::write",
		"_RNvCs1234_7mycrate4main":               "mycrate::main",
		"plain_c_function":                       "plain_c_function",
	}
	for in, want := range cases {
		if got := Demangle(in); got != want {
			t.Errorf("Demangle(%q) = %q, want %q", in, got, want)
		}
	}
}

// kallsymsLine reads every line of this kernel's /proc/kallsyms as
// splitting it into fields does (the kernel's own text is the ground
// truth; unprivileged, its addresses read 0 and are compared as such).
func TestKallsymsLineAgainstFields(t *testing.T) {
	b, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		t.Skipf("no /proc/kallsyms: %v", err)
	}
	n := 0
	for _, line := range bytes.Split(b, []byte("\n")) {
		addr, name, mod, ok := kallsymsLine(line)
		f := bytes.Fields(line)
		text := len(f) >= 3 && len(f[1]) == 1 && strings.ContainsAny(string(f[1]), "tTwW")
		if ok != text {
			t.Fatalf("%q: text symbol %v, want %v", line, ok, text)
		}
		if !ok {
			continue
		}
		n++
		want, _ := strconv.ParseUint(string(f[0]), 16, 64)
		wantMod := ""
		if len(f) >= 4 && bytes.HasPrefix(f[3], []byte("[")) {
			wantMod = string(bytes.Trim(f[3], "[]"))
		}
		if addr != want || string(name) != string(f[2]) || string(mod) != wantMod {
			t.Fatalf("%q: %#x %q %q, want %#x %q %q", line, addr, name, mod, want, f[2], wantMod)
		}
	}
	if n == 0 {
		t.Error("no text symbol read")
	}
}
