package symbolize

import (
	"bytes"
	"compress/zlib"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
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

// lineDWARF is f's DWARF with the line lookup's sections only; path is
// f's file, read again for the compressed sections' bytes (sectionData).
// The sections are read side by side: inflating a libc debug file's
// .debug_info and .debug_line was most of record's finish.
// Relocatable objects (which need relocations applied) take debug/elf's
// whole path.
func lineDWARF(f *elf.File, path string) (*dwarf.Data, error) {
	if f.Type == elf.ET_REL {
		return f.DWARF()
	}
	raw, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer raw.Close()
	type read struct {
		name string
		b    []byte
		err  error
	}
	var reads []*read
	var wg sync.WaitGroup
	for _, s := range f.Sections {
		name, zlibbed := dwarfName(s.Name)
		if !lineSections[name] || s.Type == elf.SHT_NOBITS {
			continue
		}
		r := &read{name: name}
		reads = append(reads, r)
		wg.Go(func() {
			r.b, r.err = sectionData(s, raw, f.Class)
			if r.err != nil {
				r.err = fmt.Errorf("reading %s: %w", s.Name, r.err)
			} else if zlibbed {
				if r.b, r.err = inflateZdebug(r.b); r.err != nil {
					r.err = fmt.Errorf("inflating %s: %w", s.Name, r.err)
				}
			}
		})
	}
	wg.Wait()
	dat := map[string][]byte{}
	for _, r := range reads {
		if r.err != nil {
			return nil, r.err
		}
		dat[r.name] = r.b
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

// sectionData is s's contents, inflated when it is a zlib-compressed
// section (SHF_COMPRESSED): its bytes are read from file in one call and
// inflated from memory into a buffer of the inflated size. debug/elf
// reads them 4 KB at a time, a system call each, and grows its buffer as
// it goes. Other sections (zstd among them) are debug/elf's.
func sectionData(s *elf.Section, file io.ReaderAt, class elf.Class) ([]byte, error) {
	chdr := uint64(24) // Elf64_Chdr: type, reserved, size, addralign
	if class == elf.ELFCLASS32 {
		chdr = 12 // Elf32_Chdr: type, size, addralign
	}
	if s.Flags&elf.SHF_COMPRESSED == 0 || s.FileSize < chdr || s.Size > 1<<32 {
		return s.Data()
	}
	b := make([]byte, s.FileSize)
	if _, err := file.ReadAt(b, int64(s.Offset)); err != nil {
		return nil, err
	}
	if elf.CompressionType(binary.LittleEndian.Uint32(b)) != elf.COMPRESS_ZLIB && elf.CompressionType(binary.BigEndian.Uint32(b)) != elf.COMPRESS_ZLIB {
		return s.Data()
	}
	zr, err := zlib.NewReader(bytes.NewReader(b[chdr:]))
	if err != nil {
		return nil, err
	}
	out := make([]byte, s.Size)
	if _, err := io.ReadFull(zr, out); err != nil {
		return nil, err
	}
	return out, nil
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
