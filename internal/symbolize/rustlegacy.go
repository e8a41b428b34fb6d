package symbolize

import (
	"math/bits"
	"strings"
)

// Legacy Rust mangling (rustc's default before v0) wraps a path in
// Itanium's _ZN…E: length-prefixed identifiers, the last one a hash
// "h<16 hex digits>". The demangle module's reader of it takes an
// underscore after a length for a separator, which only v0 has, and so
// turns __rust_begin_short_backtrace into _rust_begin_short_backtrace;
// sonde reads these names itself, by the rules libiberty (c++filt,
// perf) follows.

// demangleRustLegacy demangles a legacy Rust symbol without its hash
// (as perf and rustfilt print it); ok is false for any other name.
func demangleRustLegacy(name string) (string, bool) {
	body, ok := rustLegacyBody(name)
	if !ok {
		return "", false
	}
	idents, ok := rustLegacyIdents(body)
	if !ok || !isRustLegacyHash(idents[len(idents)-1]) {
		return "", false
	}
	var b strings.Builder
	for i, id := range idents[:len(idents)-1] {
		if i > 0 {
			b.WriteString("::")
		}
		writeRustLegacyIdent(&b, id)
	}
	return b.String(), true
}

// rustLegacyBody returns the identifiers of a legacy name: what lies
// between _ZN and the E that ends the name or that a "." suffix (LLVM's
// ".llvm.1234") follows.
func rustLegacyBody(name string) (string, bool) {
	s, ok := strings.CutPrefix(name, "_ZN")
	if !ok {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		if !isRustLegacyByte(s[i]) {
			return "", false
		}
	}
	if !strings.HasSuffix(s, "E") {
		i := strings.LastIndex(s, "E.")
		if i < 0 {
			return "", false
		}
		s = s[:i+1]
	}
	s = s[:len(s)-1]
	// The hash segment "17h" + 16 digits ends every legacy name: this
	// tells C++ names from Rust ones before any parsing.
	if len(s) < 20 || s[len(s)-19:len(s)-16] != "17h" {
		return "", false
	}
	return s, true
}

// isRustLegacyByte says whether c may appear in a legacy name (with its
// suffix): anything else makes it a C++ name.
func isRustLegacyByte(c byte) bool {
	return c == '_' || c == '$' || c == '.' || c == ':' || c == '@' ||
		'0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// rustLegacyIdents splits s into its length-prefixed identifiers, all
// of which must be there whole and none empty.
func rustLegacyIdents(s string) ([]string, bool) {
	var ids []string
	for len(s) > 0 {
		if s[0] < '1' || s[0] > '9' {
			return nil, false
		}
		n, i := 0, 0
		for ; i < len(s) && '0' <= s[i] && s[i] <= '9'; i++ {
			n = n*10 + int(s[i]-'0')
			if n > len(s) {
				return nil, false
			}
		}
		if n > len(s)-i {
			return nil, false
		}
		ids = append(ids, s[i:i+n])
		s = s[i+n:]
	}
	return ids, len(ids) > 0
}

// isRustLegacyHash says whether id is "h" and 16 lower-case hex digits,
// at least 5 of them distinct (as libiberty requires, so that a C++
// name ending in such letters is not taken for Rust).
func isRustLegacyHash(id string) bool {
	if len(id) != 17 || id[0] != 'h' {
		return false
	}
	var seen uint16
	for i := 1; i < len(id); i++ {
		d, ok := lowerHex(id[i])
		if !ok {
			return false
		}
		seen |= 1 << d
	}
	return bits.OnesCount16(seen) >= 5
}

func lowerHex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// writeRustLegacyIdent writes one identifier with its escapes decoded:
// "$LT$" and the like, "$u7e$" for a character, ".." for "::". The
// mangler puts "_" before an identifier starting with an escape (an
// identifier must start with a letter or "_"), which is dropped; an
// escape that does not decode ends decoding, the rest written as is.
func writeRustLegacyIdent(b *strings.Builder, id string) {
	if strings.HasPrefix(id, "_$") {
		id = id[1:]
	}
	for len(id) > 0 {
		switch {
		case id[0] == '$':
			c, n := rustLegacyEscape(id)
			if n == 0 {
				b.WriteString(id)
				return
			}
			b.WriteByte(c)
			id = id[n:]
		case strings.HasPrefix(id, ".."):
			b.WriteString("::")
			id = id[2:]
		default:
			b.WriteByte(id[0])
			id = id[1:]
		}
	}
}

var rustLegacyEscapes = map[string]byte{
	"SP": '@', "BP": '*', "RF": '&', "LT": '<', "GT": '>', "LP": '(', "RP": ')', "C": ',',
}

// rustLegacyEscape decodes the escape e starts with into its character
// and length; n is 0 when it is none. "$uXX$" takes lower-case hex of a
// printable ASCII character only, as libiberty does.
func rustLegacyEscape(e string) (c byte, n int) {
	end := strings.IndexByte(e[1:], '$') + 1
	if end <= 1 {
		return 0, 0
	}
	code := e[1:end]
	if c, ok := rustLegacyEscapes[code]; ok {
		return c, end + 1
	}
	if len(code) != 3 || code[0] != 'u' {
		return 0, 0
	}
	hi, ok1 := lowerHex(code[1])
	lo, ok2 := lowerHex(code[2])
	if !ok1 || !ok2 || hi > 7 || hi<<4|lo < 0x20 {
		return 0, 0
	}
	return hi<<4 | lo, end + 1
}

// FixHalfDemangledRust finishes a legacy Rust name that a profiler split
// into its path but left escaped and hashed, as perf 4 printed Rust
// ("_$LT$a..B$GT$::new::h0123456789abcdef" → "<a::B>::new"); inferno's
// collapse-perf does the same, so folded stacks agree with it. Only the
// whole name's first "_" before an escape is dropped, as inferno does
// ("f::_$u7b$$u7b$closure$u7d$$u7d$::h…" → "f::_{{closure}}"). ok is false
// for any other name.
func FixHalfDemangledRust(name string) (string, bool) {
	i := strings.LastIndex(name, "::")
	if i < 0 || !isRustLegacyHash(name[i+2:]) {
		return "", false
	}
	var b strings.Builder
	writeRustLegacyIdent(&b, name[:i])
	return b.String(), true
}
