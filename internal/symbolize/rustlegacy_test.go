package symbolize

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// mangleRustLegacy writes ids as a legacy Rust name with a valid hash.
func mangleRustLegacy(ids ...string) string {
	var b strings.Builder
	b.WriteString("_ZN")
	for _, id := range ids {
		b.WriteString(fmt.Sprint(len(id)) + id)
	}
	return b.String() + "17h1234567890abcdefE"
}

// rustLegacyNames maps legacy Rust names to c++filt's output without
// the hash it keeps ("::h1234567890abcdef").
var rustLegacyNames = map[string]string{
	"_ZN3std3sys9backtrace28__rust_begin_short_backtrace17h1234567890abcdefE":                                                               "std::sys::backtrace::__rust_begin_short_backtrace",
	"_ZN102_$LT$core..iter..adapters..map..Map$LT$I$C$F$GT$$u20$as$u20$core..iter..traits..iterator..Iterator$GT$4fold17h24af201750c83f67E": "<core::iter::adapters::map::Map<I,F> as core::iter::traits::iterator::Iterator>::fold",
	"_ZN4core3fmt5write17h0123456789abcdefE.llvm.1234":                                                                                      "core::fmt::write",
	mangleRustLegacy("main", "$RF$str"):                                                                                                     "main::&str",
	mangleRustLegacy("main", "_$LT$T$GT$"):                                                                                                  "main::<T>",
	mangleRustLegacy("main", "$BP$const$u20$u8"):                                                                                            "main::*const u8",
	mangleRustLegacy("main", "$LP$$RP$"):                                                                                                    "main::()",
	mangleRustLegacy("main", "a$SP$b$C$"):                                                                                                   "main::a@b,",
	mangleRustLegacy("main", "$u7b$$u7b$closure$u7d$$u7d$"):                                                                                 "main::{{closure}}",
	mangleRustLegacy("main", "_$"):                                                                                                          "main::$",
	mangleRustLegacy("main", "__x"):                                                                                                         "main::__x",
	mangleRustLegacy("main", "$SP$$"):                                                                                                       "main::@$",
	mangleRustLegacy("main", "$C$x"):                                                                                                        "main::,x",
	mangleRustLegacy("main", "$u7e$"):                                                                                                       "main::~",
	mangleRustLegacy("x.y..z$u2e$"):                                                                                                         "x.y::z.",
	// Escapes that do not decode are written as they are, with the rest.
	mangleRustLegacy("main", "$XX$rest"):   "main::$XX$rest",
	mangleRustLegacy("main", "a$u1f$b$u"):  "main::a$u1f$b$u",
	mangleRustLegacy("main", "a$u80$bcd"):  "main::a$u80$bcd",
	mangleRustLegacy("main", "a$uAB$$LT$"): "main::a$uAB$$LT$",
}

// notRustLegacy are not legacy Rust names: C++, a hash of too few digits,
// an empty or overlong identifier, something after the final E, a byte no
// Rust name has, no identifier before the hash, v0.
var notRustLegacy = append(strings.Fields(`
	_ZN2ns6Worker4spinEm
	_ZN4main1a17h0000000000000000E
	_ZN0main1a17h1234567890abcdefE
	_ZN4main3$C17h1234567890abcdefE
	_ZN4main1a17h1234567890abcdefEE.x
	_ZN4main1a17h1234567890abcdefEx
	_ZN17h1234567890abcdefE
	_RNvCs1234_7mycrate4main
`), "_ZN4ma\xffn1a17h1234567890abcdefE")

func TestDemangleRustLegacy(t *testing.T) {
	for name, want := range rustLegacyNames {
		if got, ok := demangleRustLegacy(name); !ok || got != want {
			t.Errorf("demangleRustLegacy(%q) = %q, %v; want %q", name, got, ok, want)
		}
		if got := Demangle(name); got != want {
			t.Errorf("Demangle(%q) = %q, want %q", name, got, want)
		}
	}
	for _, name := range notRustLegacy {
		if got, ok := demangleRustLegacy(name); ok || got != "" {
			t.Errorf("demangleRustLegacy(%q) = %q, %v; want no Rust name", name, got, ok)
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
	for name := range rustLegacyNames {
		names = append(names, name)
	}
	checkAgainstCxxfilt(t, cxxfilt, names)
}

var cxxfiltHash = regexp.MustCompile(`::h[0-9a-f]{16}$`)

// checkAgainstCxxfilt demangles names with c++filt and with sonde, which
// prints no hash, and returns how many were compared.
func checkAgainstCxxfilt(t *testing.T, cxxfilt string, names []string) int {
	t.Helper()
	// c++filt demangles each argument, one per line.
	out := testutil.Tool(t, cxxfilt, names...)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
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
		// rustup's, where a CI machine has it, off the PATH of go test.
		rustc = os.ExpandEnv("$HOME/.cargo/bin/rustc")
		if _, err := os.Stat(rustc); err != nil {
			t.Skip("no rustc")
		}
	}
	bin := t.TempDir() + "/rustnames"
	testutil.Tool(t, rustc, "--edition", "2021", "-C", "opt-level=0", "-o", bin, testutil.RepoRoot()+"/testdata/rustnames.rs")
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
	if !strings.Contains(strings.Join(names, " "), "28__rust_begin_short_backtrace17h") {
		t.Error("no legacy __rust_begin_short_backtrace in the program")
	}
	if len(names) < 100 {
		t.Fatalf("only %d legacy Rust names: has rustc's default mangling changed?", len(names))
	}
	n := checkAgainstCxxfilt(t, cxxfilt, names)
	t.Logf("%d legacy Rust names of testdata/rustnames.rs compared with c++filt", n)
}

func FuzzDemangleRustLegacy(f *testing.F) {
	for name := range rustLegacyNames {
		f.Add(name)
	}
	for _, name := range notRustLegacy {
		f.Add(name)
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

// TestFixHalfDemangledRust: names perf 4 printed for Rust, split at "::"
// but escaped and hashed, are finished; other names are left alone.
func TestFixHalfDemangledRust(t *testing.T) {
	for in, want := range map[string]string{
		"app::run::h0123456789abcdef":                                   "app::run",
		"_$LT$app..Queue$LT$T$GT$$GT$::push::hfedcba9876543210":         "<app::Queue<T>>::push",
		"app::main::_$u7b$$u7b$closure$u7d$$u7d$::h00112233445566ff":    "app::main::_{{closure}}",
		"_$LT$$RF$u8$u20$as$u20$app..Show$GT$::show::h13579bdf02468ace": "<&u8 as app::Show>::show",
	} {
		if got, ok := FixHalfDemangledRust(in); !ok || got != want {
			t.Errorf("FixHalfDemangledRust(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"app::run", "std::vector<int>::push_back", "f::h123", "f::hzzzzzzzzzzzzzzzz", "_ZN3app3run17h0123456789abcdefE", "x"} {
		if got, ok := FixHalfDemangledRust(in); ok {
			t.Errorf("FixHalfDemangledRust(%q) = %q, want no change", in, got)
		}
	}
}
