package probe

import (
	"bytes"
	"debug/elf"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

func TestSplitClone(t *testing.T) {
	tests := []struct {
		name, base string
		words      []string
	}{
		{"foo.isra.0", "foo", []string{"isra"}},
		{"foo.constprop.0", "foo", []string{"constprop"}},
		{"foo.part.0", "foo", []string{"part"}},
		{"foo.cold", "foo", []string{"cold"}},
		{"foo.cold.1", "foo", []string{"cold"}},
		{"foo.constprop.0.isra.0", "foo", []string{"isra", "constprop"}},
		{"foo.part.0.cold", "foo", []string{"cold", "part"}},
		{"foo.llvm.1234567", "foo", []string{"llvm"}},
		{"foo.lto_priv.0", "foo", []string{"lto_priv"}},
		{"main.main", "main.main", nil}, // Go: the dot is the package's
		{"main.worker.isra.0", "main.worker", []string{"isra"}},
		{"foo.0", "foo.0", nil},
		{"cold", "cold", nil},
		{"part.0", "part.0", nil},
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(tt.name, ".", "_"), func(t *testing.T) {
			base, words, ok := splitClone(tt.name)
			if base != tt.base || !slices.Equal(words, tt.words) || ok != (tt.words != nil) {
				t.Errorf("splitClone(%q) = %q, %q, %v; want %q, %q", tt.name, base, words, ok, tt.base, tt.words)
			}
		})
	}
}

// buildClones compiles testdata/clones.c so that GCC really emits its
// clones, and checks with nm that it did.
func buildClones(t *testing.T) (string, map[string]uint64) {
	t.Helper()
	bin := testutil.BuildC(t, t.TempDir(), "clones", []string{"clones.c"}, "-O2", "-fipa-cp-clone")
	nm := testutil.RequireTool(t, "nm", "binutils")
	out := testutil.Tool(t, nm, bin)
	syms := map[string]uint64{}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) == 3 && (f[1] == "t" || f[1] == "T") {
			v, err := strconv.ParseUint(f[0], 16, 64)
			if err != nil {
				t.Fatalf("nm line %q: %v", l, err)
			}
			syms[f[2]] = v
		}
	}
	for _, want := range []string{"scale_first.isra.0", "mix", "mix.constprop.0", "slow_path.part.0", "checked", "checked.cold"} {
		if _, ok := syms[want]; !ok {
			t.Fatalf("gcc did not emit %s (nm: %v): the test needs GCC's IPA clones", want, syms)
		}
	}
	for _, gone := range []string{"scale_first", "slow_path", "square"} {
		if _, ok := syms[gone]; ok {
			t.Fatalf("gcc kept %s out of line; the test expects it cloned or inlined", gone)
		}
	}
	return bin, syms
}

func TestResolveClones(t *testing.T) {
	bin, syms := buildClones(t)
	ef := testutil.OpenELF(t, bin)
	mainSym := elfSymbol(t, ef, "main")
	tests := []struct {
		name       string
		needReturn bool
		kinds      []SiteKind
		symbols    []string // sites with symbols, in order
		note       []string // substrings of the note; nil: no note
		err        string
	}{
		{name: "main", kinds: []SiteKind{SiteEntry}, symbols: []string{"main"}},
		{name: "scale_first", needReturn: true, kinds: []SiteKind{SiteClone}, symbols: []string{"scale_first.isra.0"},
			note: []string{"scale_first: probing scale_first.isra.0 (a copy with arguments replaced by the fields used)"}},
		{name: "mix", needReturn: true, kinds: []SiteKind{SiteEntry, SiteClone}, symbols: []string{"mix", "mix.constprop.0"},
			note: []string{"probing mix, mix.constprop.0 (a copy with constant arguments folded in); each call runs one of them"}},
		{name: "slow_path", needReturn: true, kinds: []SiteKind{SitePart}, symbols: []string{"slow_path.part.0"},
			note: []string{"probing slow_path.part.0", "split off", "not seen", "inlined copies not probed"}},
		{name: "checked", needReturn: true, kinds: []SiteKind{SiteEntry}, symbols: []string{"checked"}},
		{name: "square", kinds: []SiteKind{SiteInlined, SiteInlined}, // the loop's call and the last one
			note: []string{"square was inlined", "2 inlined copies (in main)", "returns are not available"}},
		{name: "square", needReturn: true, err: "square was inlined by the compiler into its callers (2 copies, in main) and has no entry of its own: an inlined copy has no return"},
		{name: "nosuch_func", err: `no function "nosuch_func"`},
	}
	for _, tt := range tests {
		t.Run(tt.name+map[bool]string{true: "_return"}[tt.needReturn], func(t *testing.T) {
			res, err := Resolve(ef, tt.name, tt.needReturn)
			if testutil.WantErr(t, err, tt.err) {
				return
			}
			t.Logf("note: %q", res.Note)
			var kinds []SiteKind
			for _, s := range res.Sites {
				kinds = append(kinds, s.Kind)
				switch s.Kind {
				case SiteInlined:
					// An inlined copy starts inside its caller.
					if s.Caller != "main" || s.Addr < mainSym.Value || s.Addr >= mainSym.Value+mainSym.Size {
						t.Errorf("inlined site %+v not inside main [%#x,%#x)", s, mainSym.Value, mainSym.Value+mainSym.Size)
					}
				default:
					if syms[s.Symbol] != s.Addr {
						t.Errorf("site %s at %#x, nm says %#x", s.Symbol, s.Addr, syms[s.Symbol])
					}
				}
				if off, err := fileOffset(ef, s.Addr); err != nil || off != s.Offset {
					t.Errorf("site %s offset %#x, want %#x (%v)", s.Symbol, s.Offset, off, err)
				}
			}
			if !slices.Equal(kinds, tt.kinds) || !slices.Equal(res.Symbols(), tt.symbols) {
				t.Errorf("sites %+v, want kinds %v symbols %v", res.Sites, tt.kinds, tt.symbols)
			}
			if tt.note == nil && res.Note != "" {
				t.Errorf("note %q, want none", res.Note)
			}
			for _, n := range tt.note {
				if !strings.Contains(res.Note, n) {
					t.Errorf("note %q lacks %q", res.Note, n)
				}
			}
			if strings.Contains(res.Note, "\n") || slices.ContainsFunc(res.Symbols(), func(s string) bool { return strings.HasSuffix(s, ".cold") }) {
				t.Errorf("note %q or symbols %v: one line, never a .cold part", res.Note, res.Symbols())
			}
		})
	}
}

func elfSymbol(t *testing.T, ef *elf.File, name string) elf.Symbol {
	syms, err := ef.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no symbol %s", name)
	return elf.Symbol{}
}

// TestParseClones checks what a probe on a source name becomes: one event
// with a probe line per clone, and arguments by name refused on clones.
func TestParseClones(t *testing.T) {
	bin, syms := buildClones(t)
	p, err := Parse("mix", bin, "g")
	if err != nil {
		t.Fatal(err)
	}
	ef, _ := elf.Open(bin)
	defer ef.Close()
	o1, _ := fileOffset(ef, syms["mix"])
	o2, _ := fileOffset(ef, syms["mix.constprop.0"])
	abs, _ := filepath.Abs(bin)
	want := []string{
		"p:g/mix " + abs + ":0x" + strconv.FormatUint(o1, 16),
		"p:g/mix " + abs + ":0x" + strconv.FormatUint(o2, 16),
	}
	if got := p.Definitions(); !slices.Equal(got, want) || p.Note == "" {
		t.Errorf("definitions %q (note %q), want %q", got, p.Note, want)
	}
	// tracefs lists such an event once a place; List shows it once.
	var listing bytes.Buffer
	for _, d := range p.Definitions() {
		listing.WriteString(d + "\n")
	}
	ps, err := ParseEvents(&listing, true)
	if err != nil || len(ps) != 1 || ps[0].Offset != o1 || !slices.Equal(ps[0].Extra, []uint64{o2}) {
		t.Errorf("parsed back %+v (%v)", ps, err)
	}
	if _, err := Parse("scale_first p", bin, "g"); err == nil || !strings.Contains(err.Error(), "fetch a register") {
		t.Errorf("argument by name on a clone: %v, want a refusal naming registers", err)
	}
	if p, err := Parse("scale_first %di", bin, "g"); err != nil || len(p.Args) != 1 {
		t.Errorf("register argument on a clone: %+v, %v", p, err)
	}
	if _, err := Parse("square%return", bin, "g"); err == nil || !strings.Contains(err.Error(), "no return") {
		t.Errorf("return probe on an inlined function: %v", err)
	}
}

// FuzzSplitClone: symbol names come from any binary; the split never
// panics and the base is always a proper prefix followed by a dot.
func FuzzSplitClone(f *testing.F) {
	for _, s := range []string{"foo.isra.0", "a.part.1.cold", ".cold", "x..constprop.0", "main.main", "cold.0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		base, words, ok := splitClone(name)
		if !ok {
			if base != name || words != nil {
				t.Fatalf("no suffix but split %q into %q, %q", name, base, words)
			}
			return
		}
		if base == "" && !strings.HasPrefix(name, ".") || !strings.HasPrefix(name, base+".") || len(words) == 0 {
			t.Fatalf("split %q into %q, %q", name, base, words)
		}
	})
}
