package symbolize

import (
	"bytes"
	"compress/zlib"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
)

// lineSections are the DWARF sections a line lookup reads: the units
// (info, abbrev, str and the DWARF 5 tables they index), their address
// ranges and the line programs. debug/elf's DWARF inflates every
// .debug_* section; a Go binary's location lists and frame tables
// (.debug_loclists, .debug_frame), never read here, are a third of it,
// and skipping them halves the time to open sonde's own DWARF (190 → 82
// ms): most of record's finish when it names a Go binary.
var lineSections = map[string]bool{"abbrev": true, "info": true, "str": true, "line": true, "ranges": true,
	"addr": true, "line_str": true, "rnglists": true, "str_offsets": true}

// lineDWARF is f's DWARF with the line lookup's sections only.
// Relocatable objects (which need relocations applied) take debug/elf's
// whole path.
func lineDWARF(f *elf.File) (*dwarf.Data, error) {
	if f.Type == elf.ET_REL {
		return f.DWARF()
	}
	dat := map[string][]byte{}
	for _, s := range f.Sections {
		name, zlibbed := dwarfName(s.Name)
		if !lineSections[name] || s.Type == elf.SHT_NOBITS {
			continue
		}
		b, err := s.Data()
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", s.Name, err)
		}
		if zlibbed {
			if b, err = inflateZdebug(b); err != nil {
				return nil, fmt.Errorf("inflating %s: %w", s.Name, err)
			}
		}
		dat[name] = b
	}
	if dat["info"] == nil {
		return nil, fmt.Errorf("no .debug_info")
	}
	d, err := dwarf.New(dat["abbrev"], nil, nil, dat["info"], dat["line"], nil, dat["ranges"], dat["str"])
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"addr", "line_str", "rnglists", "str_offsets"} {
		if b := dat[name]; b != nil {
			if err := d.AddSection(".debug_"+name, b); err != nil {
				return nil, err
			}
		}
	}
	return d, nil
}

// dwarfName is a DWARF section's name without its prefix (.debug_line:
// line), and whether it is an old-style compressed one (.zdebug_line);
// "" for other sections.
func dwarfName(section string) (string, bool) {
	if n, ok := strings.CutPrefix(section, ".debug_"); ok {
		return n, false
	}
	if n, ok := strings.CutPrefix(section, ".zdebug_"); ok {
		return n, true
	}
	return "", false
}

// inflateZdebug inflates a .zdebug_ section: "ZLIB", the size inflated
// (8 bytes, big-endian), then a zlib stream; a section without the header
// is stored as is.
func inflateZdebug(b []byte) ([]byte, error) {
	if len(b) < 12 || string(b[:4]) != "ZLIB" {
		return b, nil
	}
	size := binary.BigEndian.Uint64(b[4:12])
	r, err := zlib.NewReader(bytes.NewReader(b[12:]))
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, min(size, 1<<30))
	w := bytes.NewBuffer(out)
	if _, err := io.Copy(w, r); err != nil {
		return nil, err
	}
	return w.Bytes(), nil
}
