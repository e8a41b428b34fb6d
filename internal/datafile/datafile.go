// Package datafile stores a model.Profile on disk: a fixed header (magic and
// format version) followed by one gzip stream of tagged sections. Samples are
// delta-encoded varints pointing at deduplicated stacks, which keeps a
// call-graph recording at a few bytes per sample. Everything a report needs
// (names, objects with build-ids, functions, source lines) is inside, so the
// file reads the same on another host after the binaries are gone.
package datafile

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/sonde-dev/sonde/internal/model"
)

// Magic starts every sonde data file.
const Magic = "SONDEPRF"

// Version is the format version this code writes; readers refuse newer ones.
const Version = 1

// Section tags. Unknown tags are skipped so older readers of the same major
// version can read files that carry extra sections.
const (
	tagEnd     = 0
	tagMeta    = 1
	tagThreads = 2
	tagDSOs    = 3
	tagFuncs   = 4
	tagFiles   = 5
	tagLocs    = 6
	tagStacks  = 7
	tagSamples = 8
	tagCode    = 9
)

// ErrNewerVersion is returned for files written by a newer sonde.
var ErrNewerVersion = errors.New("data file is from a newer sonde")

// Write encodes p to w.
func Write(w io.Writer, p *model.Profile) error {
	var hdr [12]byte
	copy(hdr[:], Magic)
	binary.LittleEndian.PutUint32(hdr[8:], Version)
	if _, err := w.Write(hdr[:]); err != nil {
		return fmt.Errorf("writing header: %w", err)
	}
	zw, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(zw, 1<<16)
	var e enc
	section := func(tag uint64, fill func(e *enc)) error {
		e.b = e.b[:0]
		fill(&e)
		var h enc
		h.uvarint(tag)
		h.uvarint(uint64(len(e.b)))
		if _, err := bw.Write(h.b); err != nil {
			return err
		}
		_, err := bw.Write(e.b)
		return err
	}
	steps := []struct {
		tag  uint64
		fill func(e *enc)
	}{
		{tagMeta, func(e *enc) { encodeMeta(e, &p.Meta) }},
		{tagThreads, func(e *enc) {
			e.uvarint(uint64(len(p.Threads)))
			for _, t := range p.Threads {
				e.varint(int64(t.Pid))
				e.varint(int64(t.Tid))
				e.str(t.Comm)
			}
		}},
		{tagDSOs, func(e *enc) {
			e.uvarint(uint64(len(p.DSOs)))
			for _, d := range p.DSOs {
				e.str(d.Name)
				e.str(d.BuildID)
				e.uvarint(uint64(d.Kind))
			}
		}},
		{tagFuncs, func(e *enc) {
			e.uvarint(uint64(len(p.Funcs)))
			for _, f := range p.Funcs {
				e.str(f.Name)
				e.uvarint(uint64(f.DSO))
				e.uvarint(f.Start)
				e.uvarint(f.Size)
			}
		}},
		{tagFiles, func(e *enc) {
			e.uvarint(uint64(len(p.Files)))
			for _, f := range p.Files {
				e.str(f)
			}
		}},
		{tagLocs, func(e *enc) {
			e.uvarint(uint64(len(p.Locs)))
			for _, l := range p.Locs {
				e.varint(int64(l.DSO))
				e.uvarint(l.Addr)
				e.varint(int64(l.Func))
				e.varint(int64(l.File))
				e.varint(int64(l.Line))
			}
		}},
		{tagStacks, func(e *enc) {
			e.uvarint(uint64(len(p.Stacks)))
			for _, s := range p.Stacks {
				e.uvarint(uint64(len(s)))
				for _, id := range s {
					e.uvarint(uint64(id))
				}
			}
		}},
		{tagSamples, func(e *enc) {
			e.uvarint(uint64(len(p.Samples)))
			var prev uint64
			for _, s := range p.Samples {
				e.varint(int64(s.Time - prev))
				prev = s.Time
				e.uvarint(uint64(s.Thread))
				e.uvarint(uint64(s.CPU))
				e.uvarint(uint64(s.Stack))
				e.uvarint(s.Period)
				e.uvarint(uint64(s.Event))
				e.uvarint(uint64(len(s.Raw)))
				e.b = append(e.b, s.Raw...)
			}
		}},
		{tagCode, func(e *enc) {
			e.uvarint(uint64(len(p.Code)))
			for _, c := range p.Code {
				e.uvarint(uint64(c.Func))
				e.str(c.Arch)
				e.uvarint(uint64(len(c.Bytes)))
				e.b = append(e.b, c.Bytes...)
				e.uvarint(uint64(len(c.Lines)))
				var prev uint64
				for _, r := range c.Lines {
					e.uvarint(r.Addr - prev)
					prev = r.Addr
					e.uvarint(uint64(r.File))
					e.uvarint(uint64(r.Line))
				}
			}
		}},
	}
	for _, st := range steps {
		if err := section(st.tag, st.fill); err != nil {
			return fmt.Errorf("writing data file: %w", err)
		}
	}
	if err := section(tagEnd, func(*enc) {}); err != nil {
		return fmt.Errorf("writing data file: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing data file: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("writing data file: %w", err)
	}
	return nil
}

// WriteFile writes p to path atomically (temp file and rename).
func WriteFile(path string, p *model.Profile) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := Write(bw, p); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("renaming %s: %w", tmp, err)
	}
	return nil
}

func encodeMeta(e *enc, m *model.Meta) {
	e.str(m.Event)
	e.uvarint(m.Freq)
	e.uvarint(m.Period)
	e.bool(m.Callchain)
	e.str(m.Target)
	e.uvarint(uint64(len(m.Command)))
	for _, c := range m.Command {
		e.str(c)
	}
	e.str(m.Hostname)
	e.str(m.Kernel)
	e.str(m.Arch)
	e.varint(m.StartUnixNS)
	e.uvarint(m.DurationNS)
	e.uvarint(m.Lost)
	e.uvarint(m.Throttled)
	e.str(m.SondeVersion)
	e.varint(int64(m.ExitCode))
	e.str(m.Unwinder)
	e.uvarint(uint64(len(m.Warnings)))
	for _, w := range m.Warnings {
		e.str(w)
	}
	e.str(m.Unit)
	e.uvarint(uint64(len(m.Events)))
	for _, ev := range m.Events {
		e.str(ev.Name)
		e.str(ev.Kind)
		e.uvarint(ev.Freq)
		e.uvarint(ev.Period)
		e.str(ev.Filter)
		e.uvarint(uint64(len(ev.Fields)))
		for _, f := range ev.Fields {
			e.str(f.Name)
			e.str(f.Type)
			e.varint(int64(f.Offset))
			e.varint(int64(f.Size))
			e.bool(f.Signed)
			e.uvarint(uint64(f.Kind))
		}
	}
}

func decodeMeta(d *dec, m *model.Meta) {
	m.Event = d.str()
	m.Freq = d.uvarint()
	m.Period = d.uvarint()
	m.Callchain = d.bool()
	m.Target = d.str()
	n := d.count(1)
	for i := 0; i < n; i++ {
		m.Command = append(m.Command, d.str())
	}
	m.Hostname = d.str()
	m.Kernel = d.str()
	m.Arch = d.str()
	m.StartUnixNS = d.varint()
	m.DurationNS = d.uvarint()
	m.Lost = d.uvarint()
	m.Throttled = d.uvarint()
	m.SondeVersion = d.str()
	m.ExitCode = int(d.varint())
	m.Unwinder = d.str()
	n = d.count(1)
	for i := 0; i < n; i++ {
		m.Warnings = append(m.Warnings, d.str())
	}
	m.Unit = d.str()
	n = d.count(6)
	for i := 0; i < n && d.err == nil; i++ {
		ev := model.EventInfo{Name: d.str(), Kind: d.str(), Freq: d.uvarint(), Period: d.uvarint(), Filter: d.str()}
		nf := d.count(6)
		for j := 0; j < nf && d.err == nil; j++ {
			f := model.Field{Name: d.str(), Type: d.str(), Offset: d.i32(), Size: d.i32(), Signed: d.bool()}
			k := d.uvarint()
			if k > 3 || f.Offset < 0 || f.Size < 0 {
				d.fail(errOverflow)
			}
			f.Kind = uint8(k)
			ev.Fields = append(ev.Fields, f)
		}
		m.Events = append(m.Events, ev)
	}
	if len(m.Events) > 65535 {
		d.fail(errOverflow)
	}
}

// maxSection bounds one section so a corrupt length cannot make us allocate
// without limit.
const maxSection = 1 << 32

// ReadOptions change how much of a file is kept in memory.
type ReadOptions struct {
	// Group keeps samples only as (thread, stack, CPU) groups in
	// Profile.Groups: what aggregating views need, in a fraction of the memory.
	Group bool
	// Extra computes a sample's extra group key (tracepoint fields); it
	// sees the header, which is decoded before the samples.
	Extra func(m *model.Meta, s *model.Sample) string
}

// Read decodes a data file. Any damage gives an error, never a panic.
func Read(r io.Reader) (*model.Profile, error) { return ReadWith(r, ReadOptions{}) }

// ReadWith decodes a data file with options.
func ReadWith(r io.Reader, o ReadOptions) (*model.Profile, error) {
	var hdr [12]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, fmt.Errorf("not a sonde data file: too short")
	}
	if string(hdr[:8]) != Magic {
		if string(hdr[:8]) == "PERFILE2" {
			return nil, fmt.Errorf("this is a perf.data file; record with sonde record")
		}
		return nil, fmt.Errorf("not a sonde data file (bad magic)")
	}
	v := binary.LittleEndian.Uint32(hdr[8:])
	if v > Version {
		return nil, fmt.Errorf("%w: format version %d, this sonde reads up to %d; upgrade sonde", ErrNewerVersion, v, Version)
	}
	if v == 0 {
		return nil, fmt.Errorf("corrupt data file: version 0")
	}
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("corrupt data file: %w", err)
	}
	p, err := readSections(bufio.NewReaderSize(zr, 1<<16), o)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// readSections decodes the uncompressed section stream and validates it.
func readSections(br *bufio.Reader, o ReadOptions) (*model.Profile, error) {
	p := &model.Profile{}
	seen := map[uint64]bool{}
	for {
		tag, err := binary.ReadUvarint(br)
		if err != nil {
			return nil, truncated(err)
		}
		n, err := binary.ReadUvarint(br)
		if err != nil {
			return nil, truncated(err)
		}
		if tag == tagEnd {
			break
		}
		if n > maxSection {
			return nil, fmt.Errorf("corrupt data file: section %d claims %d bytes", tag, n)
		}
		// Read in chunks so a lying length hits EOF before a huge allocation.
		var buf bytes.Buffer
		buf.Grow(int(min(n, 1<<26)))
		if _, err := io.CopyN(&buf, br, int64(n)); err != nil {
			return nil, truncated(err)
		}
		if seen[tag] {
			return nil, fmt.Errorf("corrupt data file: section %d twice", tag)
		}
		seen[tag] = true
		d := &dec{b: buf.Bytes()}
		decodeSection(d, tag, p, o)
		if d.err != nil {
			return nil, fmt.Errorf("corrupt data file: section %d: %w", tag, d.err)
		}
	}
	// Drain to the gzip trailer so its checksum is verified.
	if _, err := io.Copy(io.Discard, br); err != nil {
		return nil, truncated(err)
	}
	if !seen[tagMeta] {
		return nil, fmt.Errorf("corrupt data file: no header section")
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("corrupt data file: %w", err)
	}
	return p, nil
}

func truncated(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("truncated data file (was the recording interrupted?)")
	}
	return fmt.Errorf("corrupt data file: %w", err)
}

// ReadFile opens and decodes path.
func ReadFile(path string) (*model.Profile, error) { return ReadFileWith(path, ReadOptions{}) }

// ReadFileWith opens and decodes path with options.
func ReadFileWith(path string, o ReadOptions) (*model.Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening data file: %w", err)
	}
	defer f.Close()
	p, err := ReadWith(bufio.NewReaderSize(f, 1<<20), o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

func decodeSection(d *dec, tag uint64, p *model.Profile, o ReadOptions) {
	switch tag {
	case tagMeta:
		decodeMeta(d, &p.Meta)
	case tagThreads:
		n := d.count(3)
		p.Threads = make([]model.Thread, 0, n)
		for i := 0; i < n && d.err == nil; i++ {
			p.Threads = append(p.Threads, model.Thread{Pid: d.i32(), Tid: d.i32(), Comm: d.str()})
		}
	case tagDSOs:
		n := d.count(3)
		p.DSOs = make([]model.DSO, 0, n)
		for i := 0; i < n && d.err == nil; i++ {
			p.DSOs = append(p.DSOs, model.DSO{Name: d.str(), BuildID: d.str(), Kind: model.DSOKind(d.uvarint())})
		}
	case tagFuncs:
		n := d.count(4)
		p.Funcs = make([]model.Func, 0, n)
		for i := 0; i < n && d.err == nil; i++ {
			p.Funcs = append(p.Funcs, model.Func{Name: d.str(), DSO: int32(d.u32()), Start: d.uvarint(), Size: d.uvarint()})
		}
	case tagFiles:
		n := d.count(1)
		p.Files = make([]string, 0, n)
		for i := 0; i < n && d.err == nil; i++ {
			p.Files = append(p.Files, d.str())
		}
	case tagLocs:
		n := d.count(5)
		p.Locs = make([]model.Loc, 0, n)
		for i := 0; i < n && d.err == nil; i++ {
			p.Locs = append(p.Locs, model.Loc{DSO: d.i32(), Addr: d.uvarint(), Func: d.i32(), File: d.i32(), Line: d.i32()})
		}
	case tagStacks:
		n := d.count(1)
		p.Stacks = make([][]int32, 0, n)
		for i := 0; i < n && d.err == nil; i++ {
			m := d.count(1)
			s := make([]int32, m)
			for j := range s {
				s[j] = int32(d.u32())
			}
			p.Stacks = append(p.Stacks, s)
		}
	case tagCode:
		n := d.count(4)
		for i := 0; i < n && d.err == nil; i++ {
			c := model.Code{Func: int32(d.u32()), Arch: d.str(), Bytes: d.bytes()}
			m := d.count(3)
			var a uint64
			for j := 0; j < m && d.err == nil; j++ {
				a += d.uvarint()
				c.Lines = append(c.Lines, model.LineRow{Addr: a, File: int32(d.u32()), Line: int32(d.u32())})
			}
			p.Code = append(p.Code, c)
		}
	case tagSamples:
		n := d.count(7)
		g := model.Grouper{}
		if o.Extra != nil {
			g.Extra = func(s *model.Sample) string { return o.Extra(&p.Meta, s) }
		}
		if !o.Group {
			p.Samples = make([]model.Sample, 0, n)
		}
		var t uint64
		for i := 0; i < n && d.err == nil; i++ {
			t += uint64(d.varint())
			s := model.Sample{Time: t, Thread: int32(d.u32()), CPU: d.u32(), Stack: int32(d.u32()), Period: d.uvarint()}
			ev := d.u32()
			if ev > 65535 || (len(p.Meta.Events) > 0 && int(ev) >= len(p.Meta.Events)) {
				d.fail(errOverflow)
				break
			}
			s.Event = uint16(ev)
			// Grouped samples are not kept: their payload is only looked at
			// (by Extra) while decoding, so it need not be copied.
			if raw := d.bytesView(!o.Group); len(raw) > 0 {
				s.Raw = raw
			}
			if o.Group {
				if s.Thread < 0 || int(s.Thread) >= len(p.Threads) || s.Stack < 0 || int(s.Stack) >= len(p.Stacks) {
					d.fail(fmt.Errorf("sample %d: bad index", i))
					break
				}
				g.Add(s)
			} else {
				p.Samples = append(p.Samples, s)
			}
		}
		if o.Group {
			p.Groups = g.Groups
			if p.Groups == nil {
				p.Groups = []model.SampleGroup{}
			}
		}
	}
}
