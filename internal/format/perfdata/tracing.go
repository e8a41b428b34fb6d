package perfdata

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/sonde-dev/sonde/internal/collect/tracefs"
)

// Tracing is what perf saved of tracefs when it recorded tracepoints: the
// format file of every recorded event, so their raw payloads decode on
// another machine.
type Tracing struct {
	Version   string
	BigEndian bool
	LongSize  uint8
	PageSize  uint32
	Formats   map[uint64]TraceFormat // by tracepoint id (Attr.Config)
}

// TraceFormat is one event's format with the subsystem it belongs to.
type TraceFormat struct {
	System string
	Format *tracefs.Format
}

// tracingMagic starts perf's tracing data (the trace-cmd layout).
var tracingMagic = []byte{0x17, 0x08, 0x44, 't', 'r', 'a', 'c', 'i', 'n', 'g'}

// parseTracing reads the tracing data: a version string, endianness, the
// ring buffer's page and event headers, ftrace's own formats, then the
// format files of each subsystem's recorded events. What follows (kallsyms,
// printk formats, saved comms) is not needed.
func parseTracing(b []byte) (*Tracing, error) {
	if !bytes.HasPrefix(b, tracingMagic) {
		return nil, fmt.Errorf("tracing data without its magic")
	}
	b = b[len(tracingMagic):]
	i := bytes.IndexByte(b, 0)
	if i < 0 || i > 16 {
		return nil, fmt.Errorf("tracing data version: corrupt")
	}
	t := &Tracing{Version: string(b[:i]), Formats: map[uint64]TraceFormat{}}
	b = b[i+1:]
	if len(b) < 6 {
		return nil, fmt.Errorf("tracing data: %w", errShort)
	}
	t.BigEndian = b[0] != 0
	t.LongSize = b[1]
	var bo binary.ByteOrder = binary.LittleEndian
	if t.BigEndian {
		bo = binary.BigEndian
	}
	c := cursor{b: b, off: 2, bo: bo}
	t.PageSize = c.u32()
	// header_page and header_event: a NUL-terminated tag, a u64 size, data.
	for _, tag := range []string{"header_page", "header_event"} {
		if !bytes.HasPrefix(c.b[min(c.off, len(c.b)):], append([]byte(tag), 0)) {
			return nil, fmt.Errorf("tracing data: no %s", tag)
		}
		c.skip(uint64(len(tag) + 1))
		c.skip(c.u64())
	}
	// ftrace's internal events: formats without a subsystem name.
	n := c.u32()
	for j := uint32(0); j < n && c.err == nil; j++ {
		c.skip(c.u64())
	}
	nsys := c.u32()
	for j := uint32(0); j < nsys && c.err == nil; j++ {
		rest := c.b[min(c.off, len(c.b)):]
		k := bytes.IndexByte(rest, 0)
		if k < 0 {
			return nil, fmt.Errorf("tracing data: subsystem name: %w", errShort)
		}
		sys := string(rest[:k])
		c.skip(uint64(k + 1))
		nev := c.u32()
		for e := uint32(0); e < nev && c.err == nil; e++ {
			text := c.bytes(c.u64())
			if c.err != nil {
				break
			}
			f, err := tracefs.ParseFormat(bytes.NewReader(text))
			if err != nil || f.ID == 0 {
				continue // a format sonde cannot read: that event stays undecoded
			}
			t.Formats[f.ID] = TraceFormat{System: sys, Format: f}
		}
	}
	if c.err != nil {
		return nil, fmt.Errorf("tracing data: %w", c.err)
	}
	return t, nil
}
