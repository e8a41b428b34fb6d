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
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sonde-dev/sonde/internal/format/outfile"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/model/stackstat"
	"github.com/sonde-dev/sonde/internal/symbolize"
	"golang.org/x/sys/unix"
)

// Magic starts every sonde data file.
const Magic = "SONDEPRF"

// Version is the format version this code writes; readers refuse newer ones.
// Version 1 is one gzip stream of sections. Version 2 is a series of
// self-contained chunks (one gzip member each): every chunk carries the
// header section again and extends the tables of the chunks before it, so a
// file cut by SIGKILL, the OOM killer or a full disk reads back up to its
// last complete chunk.
const Version = 2

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
	// tagFinal marks the last chunk of a recording that ended cleanly.
	tagFinal = 10
	// tagThreadCgroups extends the threads section with each thread's
	// cgroup path (same first index, same count), a section of its own so
	// readers that predate it skip it.
	tagThreadCgroups = 11
)

// ErrNewerVersion is returned for files written by a newer sonde.
var ErrNewerVersion = errors.New("data file is from a newer sonde")

// CutWarning starts the warning a reader adds to a file that ends before
// its final chunk (the same words as a cut perf.data's).
const CutWarning = model.CutWarning

// Writer writes a profile as it grows, one chunk at a time. Tables (threads,
// objects, functions, stacks…) only ever grow, so each chunk carries what
// is new since the last one; samples are written as given.
type Writer struct {
	w       io.Writer
	started bool
	chunks  int
	// counts of table entries already written
	threads, dsos, funcs, files, locs, stacks, code int
	// comm of each written thread: a thread renamed by exec is written again
	comms []string
	e     enc
	// One compressor and buffer for every chunk, reset for each: a new
	// gzip writer allocates about a megabyte of tables, and a chunk every
	// 100 ms made 427 MB of garbage in a 45 s system-wide record.
	zw *gzip.Writer
	bw *bufio.Writer
}

// NewWriter writes chunks to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Rewrite makes the next chunk carry every table whole again, but for
// stacks: after the symbolize pass named the locations (and objects) an
// earlier chunk wrote with recorded addresses. Stacks are location ids,
// which naming keeps, and a recording forgets the stacks it wrote.
func (w *Writer) Rewrite() {
	w.threads, w.dsos, w.funcs, w.files, w.locs, w.code = 0, 0, 0, 0, 0, 0
	w.comms = w.comms[:0]
}

// Chunks is how many chunks have been written.
func (w *Writer) Chunks() int { return w.chunks }

// Chunk writes the header section, the tables' new entries and every
// sample in p.Samples. The caller may clear p.Samples afterwards to keep
// memory flat: the tables must only grow.
func (w *Writer) Chunk(p *model.Profile) error { return w.chunk(p, false) }

// Finish writes the last chunk: a file without one reads as cut.
func (w *Writer) Finish(p *model.Profile) error { return w.chunk(p, true) }

// Write encodes p to w as one final chunk.
func Write(w io.Writer, p *model.Profile) error { return NewWriter(w).Finish(p) }

func (w *Writer) chunk(p *model.Profile, final bool) error {
	if int(p.StackBase) > w.stacks {
		return fmt.Errorf("writing data file: stacks %d to %d were dropped before they were written", w.stacks, p.StackBase)
	}
	if err := w.writeHeader(); err != nil {
		return err
	}
	if w.zw == nil {
		zw, err := gzip.NewWriterLevel(w.w, gzip.BestSpeed)
		if err != nil {
			return err
		}
		w.zw, w.bw = zw, bufio.NewWriterSize(zw, 1<<16)
	} else {
		w.zw.Reset(w.w)
		w.bw.Reset(w.zw)
	}
	zw, bw := w.zw, w.bw
	// Threads renamed since they were written are written again, from the
	// first changed one.
	tfrom := w.threads
	for i := 0; i < w.threads && i < len(p.Threads); i++ {
		if p.Threads[i].Comm != w.comms[i] {
			tfrom = i
			break
		}
	}
	for _, st := range w.steps(p, tfrom, final) {
		if st.skip {
			continue
		}
		if err := w.writeSection(bw, st.tag, st.fill); err != nil {
			return fmt.Errorf("writing data file: %w", err)
		}
	}
	if err := w.writeSection(bw, tagEnd, func(*enc) {}); err != nil {
		return fmt.Errorf("writing data file: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing data file: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("writing data file: %w", err)
	}
	w.threads, w.dsos, w.funcs, w.files = len(p.Threads), len(p.DSOs), len(p.Funcs), len(p.Files)
	w.locs, w.stacks, w.code = len(p.Locs), int(p.StackBase)+len(p.Stacks), len(p.Code)
	w.comms = w.comms[:min(tfrom, len(w.comms))]
	for _, t := range p.Threads[len(w.comms):] {
		w.comms = append(w.comms, t.Comm)
	}
	w.chunks++
	return nil
}

// writeHeader writes the file's magic and version before the first chunk.
func (w *Writer) writeHeader() error {
	if w.started {
		return nil
	}
	var hdr [12]byte
	copy(hdr[:], Magic)
	binary.LittleEndian.PutUint32(hdr[8:], Version)
	if _, err := w.w.Write(hdr[:]); err != nil {
		return fmt.Errorf("writing header: %w", err)
	}
	w.started = true
	return nil
}

// writeSection writes one section, its tag and length first: fill encodes
// the body into the writer's reused buffer.
func (w *Writer) writeSection(bw *bufio.Writer, tag uint64, fill func(e *enc)) error {
	e := &w.e
	e.b = e.b[:0]
	fill(e)
	var h enc
	h.uvarint(tag)
	h.uvarint(uint64(len(e.b)))
	if _, err := bw.Write(h.b); err != nil {
		return err
	}
	_, err := bw.Write(e.b)
	return err
}

// chunkStep is a section of a chunk; it is skipped when it has nothing new.
type chunkStep struct {
	tag  uint64
	skip bool
	fill func(e *enc)
}

// steps lists the sections of a chunk in file order: the header, the new
// entries of each table (threads from tfrom on), the samples, and the
// final marker on the last chunk.
func (w *Writer) steps(p *model.Profile, tfrom int, final bool) []chunkStep {
	return []chunkStep{
		{tagMeta, false, func(e *enc) { encodeMeta(e, &p.Meta) }},
		{tagThreads, tfrom == len(p.Threads), func(e *enc) {
			table(e, tfrom, p.Threads, func(t model.Thread) {
				e.varint(int64(t.Pid))
				e.varint(int64(t.Tid))
				e.str(t.Comm)
			})
		}},
		{tagThreadCgroups, tfrom == len(p.Threads) || !anyCgroup(p.Threads[tfrom:]), func(e *enc) {
			table(e, tfrom, p.Threads, func(t model.Thread) { e.str(t.Cgroup) })
		}},
		{tagDSOs, w.dsos == len(p.DSOs), func(e *enc) {
			table(e, w.dsos, p.DSOs, func(d model.DSO) {
				e.str(d.Name)
				e.str(d.BuildID)
				e.uvarint(uint64(d.Kind))
			})
		}},
		{tagFuncs, w.funcs == len(p.Funcs), func(e *enc) {
			table(e, w.funcs, p.Funcs, func(f model.Func) {
				e.str(f.Name)
				e.uvarint(uint64(f.DSO))
				e.uvarint(f.Start)
				e.uvarint(f.Size)
			})
		}},
		{tagFiles, w.files == len(p.Files), func(e *enc) {
			table(e, w.files, p.Files, func(f string) { e.str(f) })
		}},
		{tagLocs, w.locs == len(p.Locs), func(e *enc) {
			table(e, w.locs, p.Locs, func(l model.Loc) {
				e.varint(int64(l.DSO))
				e.uvarint(l.Addr)
				e.varint(int64(l.Func))
				e.varint(int64(l.File))
				e.varint(int64(l.Line))
			})
		}},
		{tagStacks, w.stacks == int(p.StackBase)+len(p.Stacks), func(e *enc) {
			// Stacks before StackBase were written and dropped (chunk
			// checks none was dropped unwritten).
			tableAt(e, w.stacks, p.Stacks[w.stacks-int(p.StackBase):], func(s []int32) {
				list(e, s, func(id int32) { e.uvarint(uint64(id)) })
			})
		}},
		{tagSamples, len(p.Samples) == 0, func(e *enc) { encodeSamples(e, p.Samples) }},
		{tagCode, w.code == len(p.Code), func(e *enc) {
			table(e, w.code, p.Code, func(c model.Code) { encodeCode(e, c) })
		}},
		{tagFinal, !final, func(*enc) {}},
	}
}

// encodeSamples writes samples with times as deltas from the previous one.
func encodeSamples(e *enc, samples []model.Sample) {
	e.uvarint(uint64(len(samples)))
	var prev uint64
	for _, s := range samples {
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
}

// encodeCode writes a function's code and its line rows, addresses as
// deltas from the previous row.
func encodeCode(e *enc, c model.Code) {
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

// table encodes the entries of a table from index from on.
func table[T any](e *enc, from int, all []T, put func(T)) { tableAt(e, from, all[from:], put) }

// tableAt encodes entries as a table's entries from index at on.
func tableAt[T any](e *enc, at int, entries []T, put func(T)) {
	e.uvarint(uint64(at))
	e.uvarint(uint64(len(entries)))
	for _, v := range entries {
		put(v)
	}
}

// WriteFile writes p to path atomically (see WriteAtomic).
func WriteFile(path string, p *model.Profile) error {
	return WriteAtomic(path, func(w io.Writer) error { return Write(w, p) })
}

// WriteAtomic writes a file through write with outfile: into a unique
// temporary file in the same directory, renamed into place once complete,
// so a reader never sees half a file and a full disk leaves the old file
// (or none), never a partial one; a link is followed, and a device or a
// FIFO (/dev/null) is written in place.
func WriteAtomic(path string, write func(io.Writer) error) error {
	if err := CheckPath(path); err != nil {
		return err
	}
	return outfile.Write(path, write)
}

// openSpecial opens path for writing in place when it exists and is not a
// regular file (a device, a FIFO); ok is false for regular or missing files.
func openSpecial(path string) (f *os.File, ok bool, err error) {
	st, err := os.Stat(path)
	if err != nil || st.Mode().IsRegular() || st.IsDir() {
		return nil, false, nil
	}
	f, err = os.OpenFile(path, os.O_WRONLY, 0)
	return f, true, err
}

// CheckPath says whether a data file can be written at path, before a
// recording starts rather than after it.
func CheckPath(path string) error {
	if path == "" {
		return errors.New("no output file given (-o FILE)")
	}
	if path == outfile.Stdout {
		if outfile.StdoutIsTerminal() {
			return errors.New("-o -: standard output is a terminal, and a data file is binary: send it to a file or a pipe (-o - | sonde report -i -)")
		}
		return nil
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory: give a file name (-o %s)", path, filepath.Join(path, "sonde.data"))
	}
	return outfile.Check(path)
}

// File is a data file written while a recording runs.
type File struct {
	*Writer
	f    *os.File // nil for standard output (outfile.Stdout), never closed
	bw   *bufio.Writer
	Path string
	// Old is where an existing file at Path was moved ("" if none).
	Old string
	// inPlace is set for a device or FIFO written where it is (never
	// moved or removed).
	inPlace bool
}

// Create starts a data file at path, written chunk by chunk. As perf does
// with perf.data, an existing file is kept as path.old, so two recordings
// to one path never interleave in one file.
func Create(path string) (*File, error) {
	if err := CheckPath(path); err != nil {
		return nil, err
	}
	if path == outfile.Stdout {
		// Streamed to standard output: chunks only ever append, so a
		// pipe takes them as a file does.
		df := &File{Path: outfile.Name(path), inPlace: true}
		df.bw = bufio.NewWriterSize(outfile.StdoutFile(), 1<<20)
		df.Writer = NewWriter(df.bw)
		return df, nil
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	df := &File{Path: path}
	if f, ok, err := openSpecial(path); ok {
		// /dev/null and the like are written in place, never moved.
		if err != nil {
			return nil, fmt.Errorf("opening %s: %w", path, err)
		}
		df.f, df.inPlace = f, true
		df.bw = bufio.NewWriterSize(f, 1<<20)
		df.Writer = NewWriter(df.bw)
		return df, nil
	}
	if _, err := os.Lstat(path); err == nil {
		df.Old = path + ".old"
		if err := os.Rename(path, df.Old); err != nil {
			return nil, fmt.Errorf("keeping the old %s: %w", path, err)
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", path, err)
	}
	df.f = f
	df.bw = bufio.NewWriterSize(f, 1<<20)
	df.Writer = NewWriter(df.bw)
	return df, nil
}

// Chunk writes a chunk and hands it to the kernel, so it survives the
// writer being killed.
func (f *File) Chunk(p *model.Profile) error {
	if err := f.Writer.Chunk(p); err != nil {
		return fmt.Errorf("%s: %w", f.Path, err)
	}
	if err := f.bw.Flush(); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) { // it names the file already
			err = pe.Err
		}
		return fmt.Errorf("writing %s: %w", f.Path, err)
	}
	return nil
}

// Finish writes the final chunk and closes the file.
func (f *File) Finish(p *model.Profile) error {
	err := f.Writer.Finish(p)
	if err == nil {
		err = f.bw.Flush()
	}
	if f.f == nil { // standard output: stays open
		if err != nil {
			return fmt.Errorf("writing %s: %w", f.Path, err)
		}
		return nil
	}
	if err == nil {
		// Devices and FIFOs cannot be synced (EINVAL): nothing to lose there.
		if serr := f.f.Sync(); serr != nil && !errors.Is(serr, unix.EINVAL) {
			err = serr
		}
	}
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", f.Path, err)
	}
	return nil
}

// Abort closes the file without a final chunk (it reads as cut).
func (f *File) Abort() {
	f.bw.Flush()
	if f.f != nil {
		f.f.Close()
	}
}

// Remove drops a file that holds no complete chunk (the disk filled
// before the first one was written): a file that reads as nothing is not
// left behind, and an older file moved aside for it is put back.
func (f *File) Remove() {
	if f.f != nil {
		f.f.Close()
	}
	if f.inPlace {
		return
	}
	os.Remove(f.Path)
	if f.Old != "" {
		os.Rename(f.Old, f.Path)
	}
}

func encodeMeta(e *enc, m *model.Meta) {
	e.str(m.Event)
	e.uvarint(m.Freq)
	e.uvarint(m.Period)
	e.bool(m.Callchain)
	e.str(m.Target)
	e.strs(m.Command)
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
	e.strs(m.Warnings)
	e.str(m.Unit)
	list(e, m.Events, func(ev model.EventInfo) {
		e.str(ev.Name)
		e.str(ev.Kind)
		e.uvarint(ev.Freq)
		e.uvarint(ev.Period)
		e.str(ev.Filter)
		list(e, ev.Fields, func(f model.Field) {
			e.str(f.Name)
			e.str(f.Type)
			e.varint(int64(f.Offset))
			e.varint(int64(f.Size))
			e.bool(f.Signed)
			e.uvarint(uint64(f.Kind))
		})
	})
	e.bool(m.Unsymbolized)
	// Since the unwinder (readers before it stop at Unsymbolized).
	e.bool(m.UserStacks != nil)
	if c := m.UserStacks; c != nil {
		for _, v := range []uint64{c.Total, c.Complete, c.NoUnwind, c.FrameLimit, c.BadRead, c.Unsupported, c.NotLoaded, c.Lost, c.FPFallback} {
			e.uvarint(v)
		}
		files := make([]string, 0, len(c.NoUnwindFiles))
		for f := range c.NoUnwindFiles {
			files = append(files, f)
		}
		sort.Strings(files)
		list(e, files, func(f string) {
			e.str(f)
			e.uvarint(c.NoUnwindFiles[f])
		})
		// Since samples whose walked stack was not written were told apart
		// from a full stack map (older readers stop before it).
		e.uvarint(c.Unwritten)
	}
}

func decodeMeta(d *dec, m *model.Meta) {
	m.Event = d.str()
	m.Freq = d.uvarint()
	m.Period = d.uvarint()
	m.Callchain = d.bool()
	m.Target = d.str()
	m.Command = d.strs()
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
	m.Warnings = d.strs()
	m.Unit = d.str()
	n := d.count(6)
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
	if len(d.b) > 0 { // not in version 1
		m.Unsymbolized = d.bool()
	}
	if len(d.b) > 0 && d.bool() { // not before the unwinder
		c := &stackstat.Completeness{}
		for _, v := range []*uint64{&c.Total, &c.Complete, &c.NoUnwind, &c.FrameLimit, &c.BadRead, &c.Unsupported, &c.NotLoaded, &c.Lost, &c.FPFallback} {
			*v = d.uvarint()
		}
		n := d.count(2)
		for i := 0; i < n && d.err == nil; i++ {
			if c.NoUnwindFiles == nil {
				c.NoUnwindFiles = map[string]uint64{}
			}
			f := d.str()
			c.NoUnwindFiles[f] = d.uvarint()
		}
		if len(d.b) > 0 {
			c.Unwritten = d.uvarint()
		}
		m.UserStacks = c
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
	// Raw leaves a cut recording's addresses unnamed (by default they are
	// named from this machine's files, as perf report does).
	Raw bool
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
			return nil, fmt.Errorf("this is a perf.data file, not a sonde data file: the views read it with -i, sonde import converts it")
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
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 1<<16)
	}
	rd := &reader{p: &model.Profile{}, o: o, v: v}
	if o.Extra != nil {
		rd.g.Extra = func(s *model.Sample) string { return o.Extra(&rd.p.Meta, s) }
	}
	if err := rd.readChunks(br); err != nil {
		return nil, err
	}
	return rd.finish()
}

// reader holds what persists across a file's chunks.
type reader struct {
	p      *model.Profile
	o      ReadOptions
	v      uint32
	g      model.Grouper
	chunks int
	final  bool
}

// chunks reads gzip members until the end of the file. A damaged chunk
// after at least one good one ends the file there (it was cut).
func (rd *reader) readChunks(br *bufio.Reader) error {
	zr, err := gzip.NewReader(br)
	if err != nil {
		return truncated(err)
	}
	for {
		zr.Multistream(false)
		zb := bufio.NewReaderSize(zr, 1<<16)
		err := rd.sections(zb)
		if err == nil {
			// Drain to the member's trailer so its checksum is verified.
			_, err = io.Copy(io.Discard, zb)
			if err != nil {
				err = truncated(err)
			}
		}
		if err != nil {
			if rd.chunks > 0 && rd.v >= 2 {
				rd.cut(err)
				return nil
			}
			return err
		}
		rd.chunks++
		if rd.v < 2 || rd.final {
			return nil
		}
		if err := zr.Reset(br); err != nil {
			if err == io.EOF {
				return nil
			}
			rd.cut(truncated(err))
			return nil
		}
	}
}

func (rd *reader) cut(err error) {
	rd.final = false
	rd.p.Meta.Warnings = append(rd.p.Meta.Warnings, fmt.Sprintf("%s: read %d complete chunks; the next is damaged (%v)", CutWarning, rd.chunks, err))
}

func (rd *reader) finish() (*model.Profile, error) {
	p := rd.p
	if rd.v >= 2 && !rd.final && (len(p.Meta.Warnings) == 0 || !strings.HasPrefix(p.Meta.Warnings[len(p.Meta.Warnings)-1], CutWarning)) {
		p.Meta.Warnings = append(p.Meta.Warnings, fmt.Sprintf("%s: %d complete chunks and no final one (was sonde killed?); the figures cover what was written", CutWarning, rd.chunks))
	}
	if rd.o.Group {
		p.Groups = rd.g.Groups
		if p.Groups == nil {
			p.Groups = []model.SampleGroup{}
		}
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("corrupt data file: %w", err)
	}
	if p.Meta.Unsymbolized && !rd.o.Raw {
		symbolize.Recorded(p)
	}
	return p, nil
}

// readSections decodes one version-2 chunk's sections (the fuzz target).
func readSections(br *bufio.Reader, o ReadOptions) (*model.Profile, error) {
	rd := &reader{p: &model.Profile{}, o: o, v: Version}
	if err := rd.sections(br); err != nil {
		return nil, err
	}
	rd.final = true
	return rd.finish()
}

// sections decodes the uncompressed section stream of one chunk.
func (rd *reader) sections(br *bufio.Reader) error {
	seen := map[uint64]bool{}
	for {
		tag, err := binary.ReadUvarint(br)
		if err != nil {
			return truncated(err)
		}
		n, err := binary.ReadUvarint(br)
		if err != nil {
			return truncated(err)
		}
		if tag == tagEnd {
			break
		}
		if n > maxSection {
			return fmt.Errorf("corrupt data file: section %d claims %d bytes", tag, n)
		}
		// Read in chunks so a lying length hits EOF before a huge allocation.
		var buf bytes.Buffer
		buf.Grow(int(min(n, 1<<26)))
		if _, err := io.CopyN(&buf, br, int64(n)); err != nil {
			return truncated(err)
		}
		if seen[tag] {
			return fmt.Errorf("corrupt data file: section %d twice", tag)
		}
		seen[tag] = true
		d := &dec{b: buf.Bytes()}
		rd.decodeSection(d, tag)
		if d.err != nil {
			return fmt.Errorf("corrupt data file: section %d: %w", tag, d.err)
		}
	}
	if !seen[tagMeta] {
		return fmt.Errorf("corrupt data file: no header section")
	}
	return nil
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

// from reads where a version-2 table section starts: at most at the end
// of what the chunks before it gave (a later chunk may rewrite renamed
// threads, never leave a gap).
func (rd *reader) from(d *dec, have int) int {
	if rd.v < 2 {
		if have > 0 {
			d.fail(errors.New("table given twice"))
		}
		return 0
	}
	f := d.uvarint()
	if f > uint64(have) {
		d.fail(fmt.Errorf("table continues at %d but has %d entries", f, have))
		return 0
	}
	return int(f)
}

func anyCgroup(ts []model.Thread) bool {
	for _, t := range ts {
		if t.Cgroup != "" {
			return true
		}
	}
	return false
}

// put stores v at index i of a table being extended from a chunk.
func put[T any](t []T, i int, v T) []T {
	if i < len(t) {
		t[i] = v
		return t
	}
	return append(t, v)
}

func (rd *reader) decodeSection(d *dec, tag uint64) {
	p, o := rd.p, rd.o
	switch tag {
	case tagMeta:
		// Every chunk repeats the header; the last one holds the totals.
		p.Meta = model.Meta{}
		decodeMeta(d, &p.Meta)
	case tagFinal:
		rd.final = true
	case tagThreads:
		i := rd.from(d, len(p.Threads))
		p.Threads = p.Threads[:i]
		n := d.count(3)
		for j := 0; j < n && d.err == nil; j++ {
			p.Threads = append(p.Threads, model.Thread{Pid: d.i32(), Tid: d.i32(), Comm: d.str()})
		}
	case tagThreadCgroups:
		i := rd.from(d, len(p.Threads))
		n := d.count(1)
		for j := 0; j < n && d.err == nil; j++ {
			if cg := d.str(); i+j < len(p.Threads) {
				p.Threads[i+j].Cgroup = cg
			}
		}
	case tagDSOs:
		i := rd.from(d, len(p.DSOs))
		n := d.count(3)
		for j := 0; j < n && d.err == nil; j++ {
			p.DSOs = put(p.DSOs, i+j, model.DSO{Name: d.str(), BuildID: d.str(), Kind: model.DSOKind(d.uvarint())})
		}
	case tagFuncs:
		i := rd.from(d, len(p.Funcs))
		n := d.count(4)
		for j := 0; j < n && d.err == nil; j++ {
			p.Funcs = put(p.Funcs, i+j, model.Func{Name: d.str(), DSO: int32(d.u32()), Start: d.uvarint(), Size: d.uvarint()})
		}
	case tagFiles:
		i := rd.from(d, len(p.Files))
		n := d.count(1)
		for j := 0; j < n && d.err == nil; j++ {
			p.Files = put(p.Files, i+j, d.str())
		}
	case tagLocs:
		i := rd.from(d, len(p.Locs))
		n := d.count(5)
		for j := 0; j < n && d.err == nil; j++ {
			p.Locs = put(p.Locs, i+j, model.Loc{DSO: d.i32(), Addr: d.uvarint(), Func: d.i32(), File: d.i32(), Line: d.i32()})
		}
	case tagStacks:
		i := rd.from(d, len(p.Stacks))
		n := d.count(1)
		for j := 0; j < n && d.err == nil; j++ {
			m := d.count(1)
			s := make([]int32, m)
			for k := range s {
				s[k] = int32(d.u32())
			}
			p.Stacks = put(p.Stacks, i+j, s)
		}
	case tagCode:
		i := rd.from(d, len(p.Code))
		n := d.count(4)
		for j := 0; j < n && d.err == nil; j++ {
			c := model.Code{Func: int32(d.u32()), Arch: d.str(), Bytes: d.bytes()}
			m := d.count(3)
			var a uint64
			for k := 0; k < m && d.err == nil; k++ {
				a += d.uvarint()
				c.Lines = append(c.Lines, model.LineRow{Addr: a, File: int32(d.u32()), Line: int32(d.u32())})
			}
			p.Code = put(p.Code, i+j, c)
		}
	case tagSamples:
		n := d.count(7)
		g := &rd.g
		if !o.Group && p.Samples == nil {
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
	}
}

// ChunkOffsets returns where each chunk of a version-2 file starts, and
// the file's length after its last complete chunk: the places a tool or a
// test may cut a recording at a chunk's boundary.
func ChunkOffsets(r io.Reader) ([]int64, error) {
	var hdr [12]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil || string(hdr[:8]) != Magic {
		return nil, fmt.Errorf("not a sonde data file")
	}
	if v := binary.LittleEndian.Uint32(hdr[8:]); v < 2 {
		return nil, fmt.Errorf("format version %d has no chunks", v)
	}
	// A reader that is an io.ByteReader is read no further than the end of
	// each gzip member, so the count is the member's end.
	cr := &countingReader{r: bufio.NewReader(r), n: int64(len(hdr))}
	offs := []int64{cr.n}
	for {
		if _, err := cr.r.Peek(1); err == io.EOF {
			return offs, nil
		}
		zr, err := gzip.NewReader(cr)
		if err != nil {
			return offs, truncated(err)
		}
		zr.Multistream(false)
		if _, err := io.Copy(io.Discard, zr); err != nil {
			return offs, truncated(err)
		}
		offs = append(offs, cr.n)
	}
}

type countingReader struct {
	r *bufio.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countingReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}
