package tracefs

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// FieldKind says how a field's bytes are laid out.
type FieldKind uint8

const (
	KindInt     FieldKind = iota // integer of Size bytes
	KindString                   // fixed char array
	KindDataLoc                  // __data_loc: u16 offset, u16 length into the record
	KindArray                    // fixed array of non-char elements
)

// Field is one field of an event's raw record.
type Field struct {
	Name   string
	Type   string // C type as tracefs prints it
	Offset int
	Size   int
	Signed bool
	Kind   FieldKind
	Common bool // common_* header fields
}

// Format is an event's parsed format file.
type Format struct {
	Name   string
	ID     uint64
	Fields []Field
}

// ParseFormat parses the tracefs format file syntax:
//
//	field:unsigned int nr_sector;	offset:24;	size:4;	signed:0;
func ParseFormat(r io.Reader) (*Format, error) {
	f := &Format{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "name:"):
			f.Name = strings.TrimSpace(line[5:])
		case strings.HasPrefix(line, "ID:"):
			f.ID, _ = strconv.ParseUint(strings.TrimSpace(line[3:]), 10, 64)
		case strings.HasPrefix(line, "field:"):
			fd, err := parseField(line)
			if err != nil {
				return nil, err
			}
			f.Fields = append(f.Fields, fd)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(f.Fields) == 0 {
		return nil, fmt.Errorf("no fields")
	}
	return f, nil
}

func parseField(line string) (Field, error) {
	var fd Field
	parts := strings.Split(line, ";")
	for _, p := range parts {
		p = strings.TrimSpace(p)
		k, v, ok := strings.Cut(p, ":")
		if !ok {
			continue
		}
		switch k {
		case "field":
			decl := strings.TrimSpace(v)
			i := strings.LastIndexAny(decl, " \t*")
			if i < 0 {
				return fd, fmt.Errorf("bad field %q", line)
			}
			fd.Type, fd.Name = strings.TrimSpace(decl[:i+1]), decl[i+1:]
			if b := strings.IndexByte(fd.Name, '['); b >= 0 {
				fd.Type += " " + fd.Name[b:]
				fd.Name = fd.Name[:b]
			}
		case "offset":
			fd.Offset, _ = strconv.Atoi(v)
		case "size":
			fd.Size, _ = strconv.Atoi(v)
		case "signed":
			fd.Signed = v == "1"
		}
	}
	if fd.Name == "" || fd.Size <= 0 || fd.Offset < 0 {
		return fd, fmt.Errorf("bad field %q", line)
	}
	fd.Common = strings.HasPrefix(fd.Name, "common_")
	switch {
	case strings.HasPrefix(fd.Type, "__data_loc"):
		fd.Kind = KindDataLoc
	case strings.Contains(fd.Type, "char") && strings.Contains(fd.Type, "["):
		fd.Kind = KindString
	case strings.Contains(fd.Type, "["):
		fd.Kind = KindArray
	default:
		fd.Kind = KindInt
	}
	return fd, nil
}

// Field finds a field by name.
func (f *Format) Field(name string) (Field, bool) {
	for _, fd := range f.Fields {
		if fd.Name == name {
			return fd, true
		}
	}
	return Field{}, false
}

// Names lists the non-common field names.
func (f *Format) Names() []string {
	var out []string
	for _, fd := range f.Fields {
		if !fd.Common {
			out = append(out, fd.Name)
		}
	}
	return out
}

// Int reads an integer field; ok is false when raw is too short.
func (fd Field) Int(raw []byte) (int64, uint64, bool) {
	if fd.Offset+fd.Size > len(raw) {
		return 0, 0, false
	}
	b := raw[fd.Offset : fd.Offset+fd.Size]
	var u uint64
	switch fd.Size {
	case 1:
		u = uint64(b[0])
		if fd.Signed {
			return int64(int8(b[0])), u, true
		}
	case 2:
		u = uint64(binary.LittleEndian.Uint16(b))
		if fd.Signed {
			return int64(int16(u)), u, true
		}
	case 4:
		u = uint64(binary.LittleEndian.Uint32(b))
		if fd.Signed {
			return int64(int32(u)), u, true
		}
	case 8:
		u = binary.LittleEndian.Uint64(b)
	default:
		return 0, 0, false
	}
	return int64(u), u, true
}

// String formats a field's value from a raw record: integers in decimal
// (pointers in hex), dev_t as major,minor, char arrays and __data_loc
// strings as text, other arrays as {a,b,…}.
func (fd Field) String(raw []byte) string {
	switch fd.Kind {
	case KindString:
		if fd.Offset+fd.Size > len(raw) {
			return "?"
		}
		return cstr(raw[fd.Offset : fd.Offset+fd.Size])
	case KindDataLoc:
		_, u, ok := fd.Int(raw)
		if !ok {
			return "?"
		}
		off, n := int(u&0xffff), int(u>>16)
		if off+n > len(raw) {
			return "?"
		}
		if strings.Contains(fd.Type, "char") {
			return cstr(raw[off : off+n])
		}
		return fmt.Sprintf("%x", raw[off:off+n])
	case KindArray:
		if fd.Offset+fd.Size > len(raw) {
			return "?"
		}
		return fmt.Sprintf("%x", raw[fd.Offset:fd.Offset+fd.Size])
	}
	s, u, ok := fd.Int(raw)
	if !ok {
		return "?"
	}
	if fd.Type == "dev_t" {
		return fmt.Sprintf("%d,%d", u>>20, u&(1<<20-1))
	}
	if strings.Contains(fd.Type, "*") || strings.HasPrefix(fd.Name, "__probe_") {
		return fmt.Sprintf("0x%x", u)
	}
	if fd.Signed {
		return strconv.FormatInt(s, 10)
	}
	return strconv.FormatUint(u, 10)
}

func cstr(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
