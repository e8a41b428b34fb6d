package symbolize

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// mangleRustLegacy writes ids as a legacy Rust name with a valid hash.
func mangleRustLegacy(ids ...string) string {
	var b strings.Builder
	b.WriteString("_ZN")
	for _, id := range ids {
		b.WriteString(strconv.Itoa(len(id)) + id)
	}
	return b.String() + "17h1234567890abcdefE"
}

// rustLegacyCases hold c++filt's output for each name, without the hash
// it keeps ("::h1234567890abcdef"); ok false marks names that are not
// legacy Rust (c++filt reads them as C++ or leaves them).
var rustLegacyCases = []struct {
	name, want string
	ok         bool
}{
	{"_ZN3std3sys9backtrace28__rust_begin_short_backtrace17h1234567890abcdefE", "std::sys::backtrace::__rust_begin_short_backtrace", true},
	{"_ZN102_$LT$core..iter..adapters..map..Map$LT$I$C$F$GT$$u20$as$u20$core..iter..traits..iterator..Iterator$GT$4fold17h24af201750c83f67E",
		"<core::iter::adapters::map::Map<I,F> as core::iter::traits::iterator::Iterator>::fold", true},
	{mangleRustLegacy("main", "$RF$str"), "main::&str", true},
	{mangleRustLegacy("main", "_$LT$T$GT$"), "main::<T>", true},
	{mangleRustLegacy("main", "$BP$const$u20$u8"), "main::*const u8", true},
	{mangleRustLegacy("main", "$LP$$RP$"), "main::()", true},
	{mangleRustLegacy("main", "a$SP$b$C$"), "main::a@b,", true},
	{mangleRustLegacy("main", "$u7b$$u7b$closure$u7d$$u7d$"), "main::{{closure}}", true},
	{mangleRustLegacy("main", "_$"), "main::$", true},
	{mangleRustLegacy("main", "__x"), "main::__x", true},
	{mangleRustLegacy("main", "$SP$$"), "main::@$", true},
	{mangleRustLegacy("main", "$C$x"), "main::,x", true},
	{mangleRustLegacy("main", "$u7e$"), "main::~", true},
	{mangleRustLegacy("x.y..z$u2e$"), "x.y::z.", true},
	// Escapes that do not decode are written as they are, with the rest.
	{mangleRustLegacy("main", "$XX$rest"), "main::$XX$rest", true},
	{mangleRustLegacy("main", "a$u1f$b$u"), "main::a$u1f$b$u", true},
	{mangleRustLegacy("main", "a$u80$bcd"), "main::a$u80$bcd", true},
	{mangleRustLegacy("main", "a$uAB$$LT$"), "main::a$uAB$$LT$", true},
	{"_ZN4core3fmt5write17h0123456789abcdefE.llvm.1234", "core::fmt::write", true},
	// Not legacy Rust: C++, a hash of too few digits, an empty or overlong
	// identifier, what follows the final E.
	{"_ZN2ns6Worker4spinEm", "", false},
	{"_ZN4main1a17h0000000000000000E", "", false},
	{"_ZN0main1a17h1234567890abcdefE", "", false},
	{"_ZN4main3$C17h1234567890abcdefE", "", false},
	{"_ZN4main1a17h1234567890abcdefEE.x", "", false},
	{"_ZN4main1a17h1234567890abcdefEx", "", false},
	{"_ZN4ma\xffn1a17h1234567890abcdefE", "", false},
	{"_ZN17h1234567890abcdefE", "", false},
	{"_RNvCs1234_7mycrate4main", "", false},
}

func TestDemangleRustLegacy(t *testing.T) {
	for _, c := range rustLegacyCases {
		got, ok := demangleRustLegacy(c.name)
		if ok != c.ok || got != c.want {
			t.Errorf("demangleRustLegacy(%q) = %q, %v; want %q, %v", c.name, got, ok, c.want, c.ok)
		}
		if c.ok && Demangle(c.name) != c.want {
			t.Errorf("Demangle(%q) = %q, want %q", c.name, Demangle(c.name), c.want)
		}
	}
	// What is not legacy Rust still reads as C++.
	if got := Demangle("_ZN4main1a17h1234567890abcdefEx"); got != "main::a::h1234567890abcdef(long long)" {
		t.Errorf("C++ name read as %q", got)
	}
}

// TestRustLegacyCasesAgainstCxxfilt checks the table above against c++filt.
func TestRustLegacyCasesAgainstCxxfilt(t *testing.T) {
	cxxfilt := testutil.RequireTool(t, "c++filt", "binutils")
	var names []string
	for _, c := range rustLegacyCases {
		if c.ok {
			names = append(names, c.name)
		}
	}
	checkAgainstCxxfilt(t, cxxfilt, names)
}

var cxxfiltHash = regexp.MustCompile(`::h[0-9a-f]{16}$`)

// checkAgainstCxxfilt demangles names with c++filt and with sonde, which
// prints no hash, and returns how many were compared.
func checkAgainstCxxfilt(t *testing.T, cxxfilt string, names []string) int {
	t.Helper()
	cmd := exec.Command(cxxfilt)
	cmd.Stdin = strings.NewReader(strings.Join(names, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("c++filt: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(names) {
		t.Fatalf("c++filt gave %d lines for %d names", len(lines), len(names))
	}
	for i, name := range names {
		want := cxxfiltHash.ReplaceAllString(lines[i], "")
		if got := Demangle(name); got != want {
			t.Errorf("%s: sonde %q, c++filt %q", name, got, want)
		}
	}
	return len(names)
}

// TestRustLegacyAgainstCxxfilt compares sonde's names for every legacy
// Rust symbol of a real program with c++filt's. Compiling it takes
// seconds of both CPUs: run it under the shared lock with the other
// heavy tests.
func TestRustLegacyAgainstCxxfilt(t *testing.T) {
	cxxfilt := testutil.RequireTool(t, "c++filt", "binutils")
	rustc, ok := testutil.HaveTool("rustc")
	if !ok {
		if home, err := os.UserHomeDir(); err == nil {
			rustc = filepath.Join(home, ".cargo", "bin", "rustc")
		}
		if _, err := os.Stat(rustc); err != nil {
			t.Skip("no rustc")
		}
	}
	bin := filepath.Join(t.TempDir(), "rustnames")
	src := filepath.Join(testutil.RepoRoot(), "testdata", "rustnames.rs")
	testutil.Tool(t, rustc, "--edition", "2021", "-C", "opt-level=0", "-o", bin, src)
	legacy := regexp.MustCompile(`^_ZN.*17h[0-9a-f]{16}E(\..*)?$`)
	var names []string
	seen := map[string]bool{}
	for _, l := range strings.Split(testutil.Tool(t, "nm", bin), "\n") {
		f := strings.Fields(l)
		if len(f) > 0 && legacy.MatchString(f[len(f)-1]) && !seen[f[len(f)-1]] {
			seen[f[len(f)-1]] = true
			names = append(names, f[len(f)-1])
		}
	}
	if !slices.ContainsFunc(names, func(n string) bool { return strings.Contains(n, "28__rust_begin_short_backtrace17h") }) {
		t.Error("no legacy __rust_begin_short_backtrace in the program")
	}
	if len(names) < 100 {
		t.Fatalf("only %d legacy Rust names: has rustc's default mangling changed?", len(names))
	}
	n := checkAgainstCxxfilt(t, cxxfilt, names)
	t.Logf("%d legacy Rust names of %s compared with c++filt", n, filepath.Base(src))
}

func FuzzDemangleRustLegacy(f *testing.F) {
	for _, c := range rustLegacyCases {
		f.Add(c.name)
	}
	f.Fuzz(func(t *testing.T, name string) {
		s, ok := demangleRustLegacy(name)
		if !ok && s != "" {
			t.Errorf("%q: not Rust, yet %q", name, s)
		}
		if ok && !strings.HasPrefix(name, "_ZN") {
			t.Errorf("%q read as legacy Rust", name)
		}
		Demangle(name)
	})
}
