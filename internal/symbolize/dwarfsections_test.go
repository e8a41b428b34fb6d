package symbolize

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"os"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// lineDWARF reads the same units, ranges and line rows as debug/elf's
// DWARF: of a Go program (compressed DWARF 5 sections) and of a C one
// (gcc's -g, compressed with --compress-debug-sections).
func TestLineDWARFMatchesDebugELF(t *testing.T) {
	dir := t.TempDir()
	bins := []string{testutil.BuildGo(t, dir, "goprog", "goprog"),
		testutil.BuildC(t, dir, "work", []string{"work.c"}, "-Wl,--compress-debug-sections=zlib")}
	for _, bin := range bins {
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		whole, err := f.DWARF()
		if err != nil {
			t.Fatalf("%s: %v", bin, err)
		}
		some, err := lineDWARF(f, bin)
		if err != nil {
			t.Fatalf("%s: %v", bin, err)
		}
		sameSections(t, bin, f)
		a, b := unitLines(t, whole), unitLines(t, some)
		if len(a) == 0 || len(a) != len(b) {
			t.Fatalf("%s: %d units by debug/elf, %d by lineDWARF", bin, len(a), len(b))
		}
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("%s: unit %d: %+v by debug/elf, %+v by lineDWARF", bin, i, a[i], b[i])
			}
		}
	}
}

// sameSections checks that sectionData reads every compressed section of
// f (the file at path) as debug/elf does, and that some were compressed.
func sameSections(t *testing.T, path string, f *elf.File) {
	t.Helper()
	raw, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	compressed := 0
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_COMPRESSED == 0 {
			continue
		}
		compressed++
		want, err := s.Data()
		if err != nil {
			t.Fatalf("%s %s: %v", path, s.Name, err)
		}
		got, err := sectionData(s, raw, f.Class)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s %s: %d bytes (%v), debug/elf reads %d", path, s.Name, len(got), err, len(want))
		}
	}
	if compressed == 0 {
		t.Fatalf("%s: no compressed section", path)
	}
}

type unitSummary struct {
	ranges, rows int
	firstFile    string
	lastLine     int
}

func unitLines(t *testing.T, d *dwarf.Data) []unitSummary {
	var out []unitSummary
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if e == nil {
			return out
		}
		if e.Tag != dwarf.TagCompileUnit {
			r.SkipChildren()
			continue
		}
		var u unitSummary
		rs, err := d.Ranges(e)
		if err != nil {
			t.Fatal(err)
		}
		u.ranges = len(rs)
		if lr, err := d.LineReader(e); err == nil && lr != nil {
			var le dwarf.LineEntry
			for lr.Next(&le) == nil {
				if u.rows == 0 && le.File != nil {
					u.firstFile = le.File.Name
				}
				u.rows++
				u.lastLine = le.Line
			}
		}
		out = append(out, u)
		r.SkipChildren()
	}
}
