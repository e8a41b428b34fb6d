package probe

// Functions named as in the source. An optimizing compiler renames or
// removes functions: GCC's IPA passes emit foo.isra.0 (scalar replacement of
// aggregates, the signature changed), foo.constprop.0 (constant arguments
// propagated), foo.part.0 (the body split off after its first lines were
// inlined into the callers) and foo.cold (the unlikely blocks, moved away:
// never an entry); clang adds foo.llvm.NNN and foo.cold.1; and a function
// inlined into every caller has no symbol at all, only DWARF's
// DW_TAG_inlined_subroutine entries. Resolve maps the name a user types to
// the places its code runs and says in one line what it chose.
//
// The rule, in order:
//  1. Entries: the symbol itself and every full clone of it (isra,
//     constprop, lto_priv, llvm, localalias), one per address. Each call
//     runs exactly one of them, so probing all counts every out-of-line call.
//  2. When there is no entry, the split-off parts (foo.part.N): they run for
//     the calls that got past the inlined first lines; the others return in
//     the caller and are not seen. When there are entries, the parts are not
//     probed, since a call through an entry would be counted twice.
//  3. Inlined copies (DWARF): probed at their entry address when the probe
//     needs no return (a copy inlined into its caller has no return of its
//     own). A return probe is refused for a function that exists only
//     inlined; with entries, the inlined copies are left out and named.
//  4. foo.cold is never probed.

import (
	"debug/dwarf"
	"debug/elf"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/sonde-dev/sonde/internal/collect/perf"
)

// SiteKind says what kind of code a site is.
type SiteKind int

const (
	// SiteEntry is the function's own symbol.
	SiteEntry SiteKind = iota
	// SiteClone is a full copy made by the compiler (isra, constprop, …);
	// its arguments may be in other registers than the source suggests.
	SiteClone
	// SitePart is the part of the function split off by partial inlining.
	SitePart
	// SiteInlined is the first instruction of a copy inlined into a caller.
	SiteInlined
)

func (k SiteKind) String() string {
	return [...]string{"entry", "clone", "part", "inlined"}[k]
}

// Site is one place where a function's code starts.
type Site struct {
	Kind   SiteKind
	Symbol string // ELF symbol; for an inlined copy, "NAME in CALLER"
	Addr   uint64 // virtual address in the ELF file
	Offset uint64 // file offset, what uprobes take
	Caller string // inlined copies: the function they were inlined into
}

// Resolution is where a source function name runs in one binary.
type Resolution struct {
	Name  string
	Sites []Site
	// Note says what was chosen when it is not simply the symbol Name
	// (clones, parts, inlined copies); "" otherwise. One line, for stderr.
	Note string
}

// Plain reports whether every site is the function's own entry, so
// arguments sit in the registers its source signature says.
func (r *Resolution) Plain() bool {
	for _, s := range r.Sites {
		if s.Kind != SiteEntry {
			return false
		}
	}
	return true
}

// Symbols lists the ELF symbols of the sites (inlined copies have none).
func (r *Resolution) Symbols() []string {
	var out []string
	for _, s := range r.Sites {
		if s.Kind != SiteInlined {
			out = append(out, s.Symbol)
		}
	}
	return out
}

// cloneSuffixes are the compiler suffixes that keep a full function.
var fullClone = map[string]bool{"isra": true, "constprop": true, "lto_priv": true, "llvm": true, "localalias": true, "specialized": true}

// splitClone splits "foo.isra.0.constprop.1" into "foo" and its suffix
// words ("isra", "constprop"); ok is false when name has no compiler
// suffix (Go's "main.main" keeps its dot).
func splitClone(name string) (base string, words []string, ok bool) {
	parts := strings.Split(name, ".")
	i := len(parts)
	for i > 1 {
		p := parts[i-1]
		if _, err := strconv.Atoi(p); err == nil && i > 2 && isSuffixWord(parts[i-2]) {
			words = append(words, parts[i-2])
			i -= 2
			continue
		}
		if isSuffixWord(p) {
			words = append(words, p)
			i--
			continue
		}
		break
	}
	if len(words) == 0 {
		return name, nil, false
	}
	return strings.Join(parts[:i], "."), words, true
}

func isSuffixWord(w string) bool { return fullClone[w] || w == "part" || w == "cold" }

func kindOf(words []string) (SiteKind, bool) {
	k := SiteClone
	for _, w := range words {
		switch w {
		case "cold":
			return 0, false
		case "part":
			k = SitePart
		}
	}
	return k, true
}

// ResolveFile opens binary and resolves name in it.
func ResolveFile(binary, name string, needReturn bool) (*Resolution, error) {
	ef, err := elf.Open(binary)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", binary, err)
	}
	defer ef.Close()
	return Resolve(ef, name, needReturn)
}

// maxInlineScan bounds the DWARF read done only to mention inlined copies
// of a function that has an entry anyway (a full read of a very large
// binary's DWARF takes seconds).
const maxInlineScan = 64 << 20

// Resolve finds the code of the source function name in ef. needReturn is
// set for return probes and latency (entry and return) measurements.
func Resolve(ef *elf.File, name string, needReturn bool) (*Resolution, error) {
	res := &Resolution{Name: name}
	var entries, parts []Site
	var cold, all []string
	seenAddr := map[uint64]bool{}
	for _, get := range []func() ([]elf.Symbol, error){ef.Symbols, ef.DynamicSymbols} {
		syms, err := get()
		if err != nil {
			continue
		}
		for _, s := range syms {
			if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 || s.Section == elf.SHN_UNDEF {
				continue
			}
			sym := strings.SplitN(s.Name, "@", 2)[0]
			all = append(all, sym)
			site := Site{Kind: SiteEntry, Symbol: sym, Addr: s.Value}
			if sym != name {
				base, words, ok := splitClone(sym)
				if !ok || base != name {
					continue
				}
				k, entry := kindOf(words)
				if !entry {
					cold = append(cold, sym)
					continue
				}
				site.Kind = k
			}
			if seenAddr[s.Value] {
				// An alias (foo.localalias, a versioned dynamic symbol):
				// keep the plain name when it is one of them.
				if site.Kind == SiteEntry {
					for _, list := range []*[]Site{&entries, &parts} {
						for i := range *list {
							if (*list)[i].Addr == s.Value {
								(*list)[i].Kind, (*list)[i].Symbol = SiteEntry, sym
							}
						}
					}
				}
				continue
			}
			seenAddr[s.Value] = true
			off, err := fileOffset(ef, s.Value)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", sym, err)
			}
			site.Offset = off
			if site.Kind == SitePart {
				parts = append(parts, site)
			} else {
				entries = append(entries, site)
			}
		}
	}
	byName := func(s []Site) {
		sort.Slice(s, func(i, j int) bool {
			if s[i].Kind != s[j].Kind {
				return s[i].Kind < s[j].Kind
			}
			return s[i].Symbol < s[j].Symbol
		})
	}
	byName(entries)
	byName(parts)
	sort.Strings(cold)

	var inlined []Site
	if sec := ef.Section(".debug_info"); sec != nil && (len(entries) == 0 || sec.Size <= maxInlineScan) {
		if d, err := ef.DWARF(); err == nil {
			inlined = inlinedSites(ef, d, name)
		}
	}

	switch {
	case len(entries) > 0:
		res.Sites = entries
		var also []string
		if len(inlined) > 0 && !needReturn {
			res.Sites = append(res.Sites, inlined...)
			also = append(also, fmt.Sprintf("and its %d inlined copies (in %s) at their entry", len(inlined), callers(inlined)))
		} else if len(inlined) > 0 {
			also = append(also, fmt.Sprintf("not its %d inlined copies (in %s): an inlined copy has no return to probe", len(inlined), callers(inlined)))
		}
		if len(parts) > 0 {
			also = append(also, fmt.Sprintf("not %s, the part split off from it (reached through the entries, it would count twice)", symList(parts)))
		}
		if len(also) > 0 || len(entries) > 1 || entries[0].Kind != SiteEntry {
			res.Note = name + ": probing " + strings.Join(append([]string{siteList(entries)}, also...), "; ")
		}
		return res, nil
	case len(parts) > 0:
		res.Sites = parts
		res.Note = fmt.Sprintf("%s: probing %s, the part GCC split off after inlining %s's first lines into its callers: calls that end in those lines are not seen", name, symList(parts), name)
		if len(inlined) > 0 {
			res.Note += fmt.Sprintf(" (%d inlined copies not probed)", len(inlined))
		}
		return res, nil
	case len(inlined) > 0:
		if needReturn {
			return nil, fmt.Errorf("%s was inlined by the compiler into its callers (%d copies, in %s) and has no entry of its own: an inlined copy has no return to probe, so its latency cannot be measured; probe its entry instead (sonde probe --add %s, -e u:BIN:%s), or rebuild it with __attribute__((noinline))",
				name, len(inlined), callers(inlined), name, name)
		}
		res.Sites = inlined
		res.Note = fmt.Sprintf("%s was inlined by the compiler (DWARF): probing its %d inlined copies (in %s) at their entry; returns are not available there", name, len(inlined), callers(inlined))
		return res, nil
	case len(cold) > 0:
		return nil, fmt.Errorf("no entry of %s: %s holds only its unlikely blocks (not an entry), and the function itself was inlined%s",
			name, strings.Join(cold, ", "), map[bool]string{true: " (build with -g to probe the inlined copies)", false: ""}[ef.Section(".debug_info") == nil])
	}
	if ef.Section(".symtab") == nil {
		return nil, Stripped(name, len(all))
	}
	sort.Strings(all)
	return nil, fmt.Errorf("no function %q (nearest: %s)", name, strings.Join(perf.NearestOf(name, all, 3), ", "))
}

// ErrStripped is why a function is not found in a binary without a symbol
// table: a suggestion list would be empty or only its exports.
var ErrStripped = errors.New("has no symbol table (stripped)")

// Stripped is the error for name missing from a stripped binary with
// exported functions.
func Stripped(name string, exported int) error {
	if exported == 0 {
		return fmt.Errorf("%w: install its debug symbols, or use a build without strip/-s, to find %q", ErrStripped, name)
	}
	return fmt.Errorf("%w: %q is not one of its %d exported functions; install its debug symbols, or use a build without strip/-s", ErrStripped, name, exported)
}

// InBinary names the binary an error of Resolve happened in: "BIN has no
// symbol table (stripped): …", "BIN: no function …".
func InBinary(bin string, err error) error {
	if errors.Is(err, ErrStripped) {
		return fmt.Errorf("%s %w", bin, err)
	}
	return fmt.Errorf("%s: %w", bin, err)
}

func symList(s []Site) string {
	var n []string
	for _, x := range s {
		n = append(n, x.Symbol)
	}
	return strings.Join(n, ", ")
}

// siteList names entries and what the compiler made of them, e.g.
// "mix, mix.constprop.0 (a copy with constant arguments folded in); each
// call runs one of them".
func siteList(s []Site) string {
	var n []string
	for _, x := range s {
		if x.Kind != SiteClone {
			n = append(n, x.Symbol)
			continue
		}
		_, words, _ := splitClone(x.Symbol)
		var why []string
		for i := len(words) - 1; i >= 0; i-- {
			why = append(why, cloneWhy[words[i]])
		}
		n = append(n, x.Symbol+" ("+strings.Join(why, ", then ")+")")
	}
	out := strings.Join(n, ", ")
	if len(s) > 1 {
		out += "; each call runs one of them"
	}
	return out
}

var cloneWhy = map[string]string{
	"isra":        "a copy with arguments replaced by the fields used",
	"constprop":   "a copy with constant arguments folded in",
	"lto_priv":    "renamed by link-time optimization",
	"llvm":        "renamed by ThinLTO",
	"localalias":  "a local alias",
	"specialized": "a specialized copy",
}

// callers names the functions holding inlined copies, at most three.
func callers(s []Site) string {
	seen := map[string]bool{}
	var n []string
	for _, x := range s {
		if !seen[x.Caller] {
			seen[x.Caller] = true
			n = append(n, x.Caller)
		}
	}
	sort.Strings(n)
	if len(n) > 3 {
		return strings.Join(n[:3], ", ") + fmt.Sprintf(" and %d more", len(n)-3)
	}
	return strings.Join(n, ", ")
}

// inlinedSites reads DWARF for the copies of name inlined into callers
// (DW_TAG_inlined_subroutine whose abstract origin is a subprogram named
// name) and returns their entry addresses.
func inlinedSites(ef *elf.File, d *dwarf.Data, name string) []Site {
	type site struct {
		entry  *dwarf.Entry
		caller dwarf.Offset // enclosing subprogram
		origin dwarf.Offset
	}
	names := map[dwarf.Offset]string{} // subprogram names, for callers
	origins := map[dwarf.Offset]dwarf.Offset{}
	target := map[dwarf.Offset]bool{} // subprograms named name
	var found []site
	var stack []dwarf.Offset // enclosing subprograms (0 for other DIEs)
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag == 0 {
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			continue
		}
		var enclosing dwarf.Offset
		for i := len(stack) - 1; i >= 0; i-- {
			if stack[i] != 0 {
				enclosing = stack[i]
				break
			}
		}
		switch e.Tag {
		case dwarf.TagCompileUnit:
			stack = stack[:0]
		case dwarf.TagSubprogram:
			if n, ok := e.Val(dwarf.AttrName).(string); ok {
				names[e.Offset] = n
				if n == name {
					target[e.Offset] = true
				}
			}
			for _, a := range []dwarf.Attr{dwarf.AttrAbstractOrigin, dwarf.AttrSpecification} {
				if o, ok := e.Val(a).(dwarf.Offset); ok {
					origins[e.Offset] = o
				}
			}
		case dwarf.TagInlinedSubroutine:
			if o, ok := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset); ok {
				found = append(found, site{entry: e, caller: enclosing, origin: o})
			}
		}
		if e.Children {
			push := dwarf.Offset(0)
			if e.Tag == dwarf.TagSubprogram {
				push = e.Offset
			}
			stack = append(stack, push)
		}
	}
	nameOf := func(o dwarf.Offset) string {
		for range 4 { // concrete → abstract → declaration
			if n, ok := names[o]; ok {
				return n
			}
			next, ok := origins[o]
			if !ok {
				break
			}
			o = next
		}
		return "?"
	}
	isTarget := func(o dwarf.Offset) bool {
		for range 4 {
			if target[o] {
				return true
			}
			next, ok := origins[o]
			if !ok {
				return false
			}
			o = next
		}
		return false
	}
	var out []Site
	seen := map[uint64]bool{}
	for _, f := range found {
		if !isTarget(f.origin) {
			continue
		}
		addr, ok := entryPC(d, f.entry)
		if !ok || seen[addr] {
			continue
		}
		seen[addr] = true
		off, err := fileOffset(ef, addr)
		if err != nil {
			continue
		}
		caller := nameOf(f.caller)
		out = append(out, Site{Kind: SiteInlined, Symbol: name + " in " + caller, Addr: addr, Offset: off, Caller: caller})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	return out
}

// entryPC is where an inlined copy starts: DW_AT_entry_pc (an address, or
// in DWARF 5 an offset from the low PC), else its lowest address.
func entryPC(d *dwarf.Data, e *dwarf.Entry) (uint64, bool) {
	base, ok := e.Val(dwarf.AttrLowpc).(uint64)
	if !ok {
		rs, err := d.Ranges(e)
		if err != nil || len(rs) == 0 {
			return 0, false
		}
		base = rs[0][0]
	}
	f := e.AttrField(dwarf.AttrEntrypc)
	if f == nil {
		return base, true
	}
	switch v := f.Val.(type) {
	case uint64:
		if f.Class == dwarf.ClassConstant {
			return base + v, true
		}
		return v, true
	case int64:
		return base + uint64(v), true
	}
	return base, true
}
