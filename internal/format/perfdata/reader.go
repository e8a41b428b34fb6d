// Package perfdata reads what perf record writes — perf.data files and
// perf's pipe stream (perf record -o -) — and turns it into sonde's model,
// and parses perf script text into folded stacks.
//
// The reader takes any io.Reader: seekable files are read section by
// section, streams (pipes, or files handed over as plain readers) record by
// record. Records reach the caller in the order perf report processes them:
// queued, and released sorted by time at each FINISHED_ROUND for the events
// older than the round before it. Every length in the file is checked
// against what is left, so a corrupt file is one error, never a panic; a
// file or stream cut short (perf killed, a full disk, a copy stopped
// half-way) gives every complete record before the cut and a warning
// starting with model.CutWarning, as sonde's own data files do. Record
// kinds sonde does not use are counted and skipped.
package perfdata

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/sonde-dev/sonde/internal/model"
)

// File is what a perf.data file says besides its records.
type File struct {
	Pipe      bool // written by perf record -o - (no header sections)
	ByteOrder binary.ByteOrder
	Attrs     []*Attr
	Features  []int // feature bits present (FeatHostname, …)

	Hostname     string
	OSRelease    string
	PerfVersion  string
	Arch         string // uname -m of the recording machine
	CPUDesc      string
	CPUID        string
	NrCPUsOnline uint32
	NrCPUsAvail  uint32
	TotalMemKB   uint64
	Cmdline      []string // perf's own command line
	BuildIDs     []BuildID
	// SampleTimeStart and SampleTimeEnd bound the samples (perf clock ns),
	// when the file has the SAMPLE_TIME feature.
	SampleTimeStart, SampleTimeEnd uint64
	ClockResNS                     uint64     // resolution of the sampling clock
	Clock                          *ClockData // perf clock ↔ wall clock, with -k/--clockid
	Tracing                        *Tracing   // tracepoint formats, when recorded

	Stats    Stats
	Warnings []string // what the reader had to assume
	// Cut says the records end before the file said they would (the
	// warning starting with model.CutWarning says where).
	Cut bool
}

// BuildID is one entry of perf's build-id table: an object perf saw hit
// by samples and the build-id it had.
type BuildID struct {
	Pid      int32 // -1 for the host; guest machines have their own pids
	CPUMode  uint16
	ID       []byte
	Filename string
}

// ClockData relates perf's sample clock to the wall clock.
type ClockData struct {
	ClockID     uint32
	WallClockNS uint64 // CLOCK_REALTIME at the reference point
	ClockNS     uint64 // the sampling clock at the same point
}

// Stats counts what the reader saw.
type Stats struct {
	Records     map[uint32]uint64 // every record, by type
	Skipped     map[uint32]uint64 // records of kinds sonde does not use
	Samples     uint64
	Lost        uint64 // samples reported lost by LOST records (ring buffer full)
	LostSamples uint64 // samples reported lost by LOST_SAMPLES records
	Throttled   uint64 // THROTTLE records
	// UnknownID counts samples whose event id matched no attribute.
	UnknownID uint64
}

// Handler receives records in time order. The record is only valid during
// the call.
type Handler func(r *Record) error

// Read parses perf.data (file or pipe format) from r, calling h for every
// record sonde uses, and returns the header information. Seekable inputs
// (*os.File on a regular file, *bytes.Reader) are read in place; other
// readers of file-format data are buffered in memory.
func Read(r io.Reader, h Handler) (*File, error) {
	var head [pipeHeaderSize]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, fmt.Errorf("reading perf.data header: %w", truncated(err))
	}
	f := &File{Stats: Stats{Records: map[uint32]uint64{}, Skipped: map[uint32]uint64{}}}
	switch string(head[:8]) {
	case Magic:
		f.ByteOrder = binary.LittleEndian
	case magicSwapped:
		f.ByteOrder = binary.BigEndian
	default:
		if string(head[:8]) == "PERFFILE" {
			return nil, fmt.Errorf("perf.data of the first format version (before 2011) is not supported")
		}
		return nil, fmt.Errorf("not a perf.data file (magic %q)", head[:8])
	}
	rd := &reader{f: f, bo: f.ByteOrder, h: h, ids: map[uint64]int{}, idPos: -2}
	size := f.ByteOrder.Uint64(head[8:])
	switch {
	case size == pipeHeaderSize:
		f.Pipe = true
		if err := rd.records(bufio.NewReaderSize(r, 1<<16), pipeHeaderSize, -1); err != nil {
			return nil, err
		}
	case size >= fileHeaderSize && size < 1<<20:
		ra, err := readerAt(r, head[:])
		if err != nil {
			return nil, err
		}
		if err := rd.file(ra); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("perf.data header of %d bytes, want %d (file) or %d (pipe)", size, fileHeaderSize, pipeHeaderSize)
	}
	if err := rd.flush(true); err != nil {
		return nil, err
	}
	rd.finishNames()
	return f, nil
}

// readerAt gives random access to a file-format input whose first bytes
// were already read.
func readerAt(r io.Reader, head []byte) (io.ReaderAt, error) {
	if ra, ok := r.(io.ReaderAt); ok {
		var b [1]byte
		if _, err := ra.ReadAt(b[:], 0); err == nil {
			return ra, nil
		}
	}
	rest, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading perf.data: %w", err)
	}
	return bytes.NewReader(append(append([]byte(nil), head...), rest...)), nil
}

func truncated(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("file ends early (truncated?)")
	}
	return err
}

type reader struct {
	f  *File
	bo binary.ByteOrder
	h  Handler
	// ids maps the kernel's sample ids to attributes.
	ids map[uint64]int
	// idPos and isPos locate the id in samples and in other records
	// (see idPos/isPos); -2 until the attributes are known.
	idPos, isPos int

	// Records wait here and leave sorted by time, like perf's ordered events.
	queue     []*Record
	maxTime   uint64 // newest time queued
	nextFlush uint64 // release up to here at the next FINISHED_ROUND

	names map[int]string // attr index → name from EVENT_UPDATE/EVENT_DESC

	complete uint64 // records read whole, for the cut warning
	// unfinished says perf record never wrote the data size (killed):
	// records run to the end of the file, and a cut there is expected.
	unfinished bool
}

type section struct{ off, size uint64 }

// file reads the file format: header, attributes, features, then data.
func (rd *reader) file(ra io.ReaderAt) error {
	var hb [fileHeaderSize]byte
	if _, err := ra.ReadAt(hb[:], 0); err != nil {
		return fmt.Errorf("reading perf.data header: %w", truncated(err))
	}
	bo := rd.bo
	sec := func(off int) section { return section{bo.Uint64(hb[off:]), bo.Uint64(hb[off+8:])} }
	attrSize := bo.Uint64(hb[16:])
	attrs, data := sec(24), sec(40)
	var feats [featBits / 64]uint64
	for i := range feats {
		feats[i] = bo.Uint64(hb[72+8*i:])
	}

	// Attributes, each followed by the section holding its ids.
	if attrSize < minAttrSize+fileSectionSize || attrSize > maxAttrSize {
		return fmt.Errorf("perf.data attribute entries of %d bytes: corrupt header", attrSize)
	}
	if attrs.size%attrSize != 0 || attrs.size/attrSize > 4096 {
		return fmt.Errorf("perf.data attribute section of %d bytes for %d-byte entries: corrupt header", attrs.size, attrSize)
	}
	ab, err := readSection(ra, attrs, "attributes")
	if err != nil {
		return err
	}
	for off := uint64(0); off < uint64(len(ab)); off += attrSize {
		e := ab[off : off+attrSize]
		a, err := parseAttr(e[:attrSize-fileSectionSize], bo)
		if err != nil {
			return fmt.Errorf("perf.data attribute %d: %w", len(rd.f.Attrs), err)
		}
		idsec := section{bo.Uint64(e[attrSize-16:]), bo.Uint64(e[attrSize-8:])}
		if idsec.size%8 != 0 || idsec.size/8 > maxIDsPerAttr {
			return fmt.Errorf("perf.data attribute %d: id section of %d bytes: corrupt header", len(rd.f.Attrs), idsec.size)
		}
		ib, err := readSection(ra, idsec, "event ids")
		if err != nil {
			return err
		}
		for i := 0; i+8 <= len(ib); i += 8 {
			a.IDs = append(a.IDs, bo.Uint64(ib[i:]))
		}
		rd.addAttr(&a)
	}
	if len(rd.f.Attrs) == 0 {
		return fmt.Errorf("perf.data has no events: corrupt header")
	}

	if data.off > 1<<62 || data.size > 1<<62 {
		return fmt.Errorf("perf.data data section at %d of %d bytes: corrupt header", data.off, data.size)
	}
	nfeat := 0
	for _, w := range feats {
		nfeat += popcount(w)
	}
	switch {
	case data.size == 0 && !featureTableAt(ra, bo, data.off, nfeat):
		// perf record writes the data size and the feature sections when it
		// finishes; killed, it leaves a zero size and records up to wherever
		// it stopped, which perf report reads too.
		if checkEnd(ra, section{data.off, 1}, "data") != nil {
			return fmt.Errorf("perf.data ends before its first record (at %d; perf record did not finish): file truncated", data.off)
		}
		rd.unfinished = true
		sr := io.NewSectionReader(ra, int64(data.off), 1<<62)
		return rd.records(bufio.NewReaderSize(sr, 1<<16), int64(data.off), -1)
	case data.size > 0 && checkEnd(ra, section{data.off, 1}, "data") != nil:
		return fmt.Errorf("perf.data ends before its data section (%d bytes at %d): file truncated", data.size, data.off)
	case checkEnd(ra, data, "data") != nil:
		// Cut inside the data: the feature sections after it are gone, the
		// records before the cut are read (records says where it was).
	case nfeat > 0:
		if err := rd.features(ra, feats, section{data.off + data.size, uint64(nfeat) * fileSectionSize}); err != nil {
			return err
		}
	}
	sr := io.NewSectionReader(ra, int64(data.off), int64(data.size))
	return rd.records(bufio.NewReaderSize(sr, 1<<16), int64(data.off), int64(data.size))
}

// featureTableAt reports whether a table of n feature sections starts at
// off: perf writes the sections right after their table, so the first
// entry points just past it. A killed perf record leaves records there.
func featureTableAt(ra io.ReaderAt, bo binary.ByteOrder, off uint64, n int) bool {
	var e [fileSectionSize]byte
	if n == 0 {
		// No table: a finished file ends at the empty data section.
		_, err := ra.ReadAt(e[:1], int64(off))
		return err != nil
	}
	if _, err := ra.ReadAt(e[:], int64(off)); err != nil {
		return false
	}
	return bo.Uint64(e[:]) == off+uint64(n)*fileSectionSize
}

// features reads the feature sections listed in the table at tab, one per
// set bit of feats. A file cut inside them keeps its records and says so.
func (rd *reader) features(ra io.ReaderAt, feats [featBits / 64]uint64, tab section) error {
	bo := rd.bo
	tb, err := readSection(ra, tab, "feature table")
	if err != nil {
		rd.cutFeatures("the feature table")
		return nil
	}
	i := 0
	for bit := 0; bit < featBits; bit++ {
		if feats[bit/64]&(1<<(bit%64)) == 0 {
			continue
		}
		s := section{bo.Uint64(tb[16*i:]), bo.Uint64(tb[16*i+8:])}
		i++
		rd.f.Features = append(rd.f.Features, bit)
		if !rd.wantFeature(bit) {
			// Unread, but a file cut inside it is still a cut file.
			if err := checkEnd(ra, s, "feature "+featureName(bit)); err != nil {
				rd.cutFeatures("feature " + featureName(bit))
				return nil
			}
			continue
		}
		if s.size > maxFeatureSection {
			return fmt.Errorf("perf.data feature %d: section of %d bytes: corrupt header", bit, s.size)
		}
		if err := checkEnd(ra, s, "feature "+featureName(bit)); err != nil {
			rd.cutFeatures("feature " + featureName(bit))
			return nil
		}
		b, err := readSection(ra, s, fmt.Sprintf("feature %d", bit))
		if err != nil {
			return err
		}
		if err := rd.feature(bit, b); err != nil {
			return fmt.Errorf("perf.data feature %s: %w", featureName(bit), err)
		}
	}
	return nil
}

// cutFeatures notes a file cut after its records, inside the header
// sections perf writes last (host, command line, build-ids).
func (rd *reader) cutFeatures(where string) {
	rd.f.Cut = true
	rd.f.Warnings = append(rd.f.Warnings, fmt.Sprintf("%s: every record was read, but the file ends inside %s (perf's description of the host, command and build-ids is incomplete)", model.CutWarning, where))
}

// cutRecords notes where the records stopped: off is the offset of the
// first record that is not whole (or of the end of the file), inside what
// of it there is ("" for nothing, "a record" for part of its header, "a
// SAMPLE record" …).
func (rd *reader) cutRecords(off int64, inside string) {
	rd.f.Cut = true
	at := fmt.Sprintf("at offset %d", off)
	if inside != "" {
		at = fmt.Sprintf("inside %s at offset %d", inside, off)
	}
	why := "the file ends " + at
	switch {
	case rd.unfinished:
		why = "perf record did not finish (its header has no data size) and the file ends " + at
	case rd.f.Pipe:
		why = "the stream ends " + at
	}
	rd.f.Warnings = append(rd.f.Warnings, fmt.Sprintf("%s: %s; read the %d complete records before it (%d samples)", model.CutWarning, why, rd.complete, rd.f.Stats.Samples))
}

// checkEnd fails when the file ends before section s does.
func checkEnd(ra io.ReaderAt, s section, what string) error {
	if s.size == 0 {
		return nil
	}
	var b [1]byte
	if s.off > 1<<62 || s.size > 1<<62 {
		return fmt.Errorf("perf.data %s section at %d of %d bytes: corrupt header", what, s.off, s.size)
	}
	if _, err := ra.ReadAt(b[:], int64(s.off+s.size-1)); err != nil {
		return fmt.Errorf("perf.data %s section (%d bytes at %d) is cut short: file truncated", what, s.size, s.off)
	}
	return nil
}

func popcount(w uint64) int {
	n := 0
	for ; w != 0; w &= w - 1 {
		n++
	}
	return n
}

func readSection(ra io.ReaderAt, s section, what string) ([]byte, error) {
	if s.off > 1<<62 || s.size > 1<<40 {
		return nil, fmt.Errorf("perf.data %s section at %d of %d bytes: corrupt header", what, s.off, s.size)
	}
	// ReadAll over a section reader grows with what is really there, so a
	// corrupt size cannot make us allocate it up front.
	b, err := io.ReadAll(io.NewSectionReader(ra, int64(s.off), int64(s.size)))
	if err != nil {
		return nil, fmt.Errorf("reading perf.data %s: %w", what, err)
	}
	if uint64(len(b)) != s.size {
		return nil, fmt.Errorf("perf.data %s section (%d bytes at %d) is cut short: file truncated", what, s.size, s.off)
	}
	return b, nil
}

func (rd *reader) addAttr(a *Attr) {
	idx := len(rd.f.Attrs)
	rd.f.Attrs = append(rd.f.Attrs, a)
	for _, id := range a.IDs {
		rd.ids[id] = idx
	}
	rd.idPos = -2 // recompute with the new attribute
}

// records reads records from r until it ends. base is the file offset of
// r's first byte (for messages); limit the number of bytes, -1 for a stream.
// Input that ends before a record does is a cut: the records before it
// stand, and the warning says where (cutRecords).
func (rd *reader) records(r *bufio.Reader, base, limit int64) error {
	var hdr [recordHeaderSize]byte
	body := make([]byte, 0, 1<<16)
	off := base
	for limit < 0 || off-base < limit {
		n, err := io.ReadFull(r, hdr[:])
		if err != nil {
			if !isEOF(err) {
				return fmt.Errorf("perf.data record at offset %d: %w", off, err)
			}
			if n == 0 && limit < 0 && !rd.unfinished {
				return nil // a stream ends between records
			}
			inside := ""
			if n > 0 {
				inside = "a record"
			}
			rd.cutRecords(off, inside)
			return nil
		}
		typ := rd.bo.Uint32(hdr[:])
		misc := rd.bo.Uint16(hdr[4:])
		size := int(rd.bo.Uint16(hdr[6:]))
		if size < recordHeaderSize {
			return fmt.Errorf("perf.data record at offset %d (%s) has size %d: corrupt data", off, RecordName(typ), size)
		}
		if limit >= 0 && int64(size) > limit-(off-base) {
			return fmt.Errorf("perf.data record at offset %d (%s) of %d bytes runs past the data section: corrupt data", off, RecordName(typ), size)
		}
		body = body[:size-recordHeaderSize]
		if _, err := io.ReadFull(r, body); err != nil {
			if isEOF(err) {
				rd.cutRecords(off, "a "+RecordName(typ)+" record")
				return nil
			}
			return fmt.Errorf("perf.data record at offset %d (%s): %w", off, RecordName(typ), err)
		}
		extra, err := rd.payloadSize(typ, body)
		if err != nil {
			return fmt.Errorf("perf.data record at offset %d (%s): %w", off, RecordName(typ), err)
		}
		if limit >= 0 && int64(extra) > limit-(off-base)-int64(size) {
			return fmt.Errorf("perf.data record at offset %d (%s): payload of %d bytes runs past the data section: corrupt data", off, RecordName(typ), extra)
		}
		var payload []byte
		if extra > 0 {
			// Tracing data and AUX trace payloads follow their record; a
			// record is whole only with its payload.
			payload, err = rd.payload(r, typ, extra)
			if isEOF(err) {
				rd.cutRecords(off, "a "+RecordName(typ)+" record")
				return nil
			}
			if err != nil {
				return fmt.Errorf("perf.data %s payload at offset %d: %w", RecordName(typ), off+int64(size), err)
			}
		}
		rd.f.Stats.Records[typ]++
		if err := rd.record(typ, misc, body); err != nil {
			return fmt.Errorf("perf.data record at offset %d (%s): %w", off, RecordName(typ), err)
		}
		if typ == RecordHeaderTracing {
			if err := rd.feature(FeatTracingData, payload); err != nil {
				return fmt.Errorf("perf.data tracing data at offset %d: %w", off+int64(size), err)
			}
		}
		rd.complete++
		off += int64(size) + int64(extra)
	}
	return nil
}

func isEOF(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// payloadSize is the size of what follows a record outside its header's
// size (tracing data, an AUX trace buffer).
func (rd *reader) payloadSize(typ uint32, body []byte) (uint64, error) {
	switch typ {
	case RecordHeaderTracing:
		if len(body) < 4 {
			return 0, errShort
		}
		n := uint64(rd.bo.Uint32(body))
		if n > maxFeatureSection {
			return 0, fmt.Errorf("tracing data of %d bytes: corrupt data", n)
		}
		return n, nil
	case RecordAuxtrace:
		if len(body) < 8 {
			return 0, errShort
		}
		n := rd.bo.Uint64(body)
		if n > 1<<40 {
			return 0, fmt.Errorf("aux trace payload of %d bytes: corrupt data", n)
		}
		return n, nil
	}
	return 0, nil
}

// payload reads a record's payload: tracing data is kept, an AUX trace
// skipped. A payload cut short returns io.ErrUnexpectedEOF.
func (rd *reader) payload(r *bufio.Reader, typ uint32, n uint64) ([]byte, error) {
	if typ != RecordHeaderTracing {
		if _, err := io.CopyN(io.Discard, r, int64(n)); err != nil {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, nil
	}
	b, err := io.ReadAll(io.LimitReader(r, int64(n)))
	if err == nil && uint64(len(b)) != n {
		err = io.ErrUnexpectedEOF
	}
	return b, err
}

// record handles one record (its payload, if any, is read already).
func (rd *reader) record(typ uint32, misc uint16, body []byte) error {
	bo := rd.bo
	switch typ {
	case RecordSample:
		a, idx, err := rd.sampleAttr(body)
		if err != nil {
			return err
		}
		if a == nil {
			rd.f.Stats.UnknownID++
			return nil
		}
		r := &Record{Type: typ, Misc: misc, Attr: idx}
		if err := parseSample(body, a, bo, r); err != nil {
			return err
		}
		rd.f.Stats.Samples++
		return rd.queueRecord(r)
	case RecordMmap, RecordMmap2, RecordComm, RecordFork, RecordExit, RecordLost, RecordLostSamples, RecordThrottle, RecordUnthrottle, RecordKsymbol:
		a, idx := rd.sidebandAttr(body)
		r := &Record{Type: typ, Misc: misc, Attr: idx}
		if err := parseSideband(typ, misc, body, a, bo, r); err != nil {
			return err
		}
		switch typ {
		case RecordLost:
			rd.f.Stats.Lost += r.Lost
		case RecordLostSamples:
			rd.f.Stats.LostSamples += r.Lost
		case RecordThrottle:
			rd.f.Stats.Throttled++
		}
		return rd.queueRecord(r)
	case RecordFinishedRound:
		return rd.flush(false)
	case RecordHeaderAttr:
		if len(body) < minAttrSize {
			return errShort
		}
		asz := uint64(bo.Uint32(body[4:]))
		if asz == 0 {
			asz = minAttrSize
		}
		if asz < minAttrSize || asz > uint64(len(body)) || (uint64(len(body))-asz)%8 != 0 {
			return fmt.Errorf("attribute of %d bytes in a %d-byte record: corrupt data", asz, len(body))
		}
		a, err := parseAttr(body[:asz], bo)
		if err != nil {
			return err
		}
		for i := asz; i+8 <= uint64(len(body)); i += 8 {
			a.IDs = append(a.IDs, bo.Uint64(body[i:]))
		}
		rd.addAttr(&a)
	case RecordHeaderTracing:
		// Its payload is parsed by records.
	case RecordAuxtrace:
		rd.f.Stats.Skipped[typ]++
	case RecordHeaderBuildID:
		if err := rd.buildIDs(append(binaryHeader(bo, typ, misc, len(body)), body...)); err != nil {
			return err
		}
	case RecordHeaderFeature:
		if len(body) < 8 {
			return errShort
		}
		bit := bo.Uint64(body)
		if bit < featBits && rd.wantFeature(int(bit)) {
			if err := rd.feature(int(bit), body[8:]); err != nil {
				return fmt.Errorf("feature %s: %w", featureName(int(bit)), err)
			}
		}
		if bit < featBits {
			rd.f.Features = append(rd.f.Features, int(bit))
		}
	case RecordEventUpdate:
		rd.eventUpdate(body)
	case RecordIDIndex:
		rd.idIndex(body)
	case RecordFinishedInit, RecordHeaderEventType, RecordThreadMap, RecordCPUMap, RecordTimeConv:
		// Header material perf report also only uses for display.
	default:
		rd.f.Stats.Skipped[typ]++
	}
	return nil
}

// binaryHeader rebuilds a record header (BUILD_ID records are parsed the
// same way inside the feature section, header included).
func binaryHeader(bo binary.ByteOrder, typ uint32, misc uint16, bodyLen int) []byte {
	b := make([]byte, recordHeaderSize)
	bo.PutUint32(b, typ)
	bo.PutUint16(b[4:], misc)
	bo.PutUint16(b[6:], uint16(bodyLen+recordHeaderSize))
	return b
}

// positions computes where ids sit, from the first attribute: perf requires
// every event of a file to share that layout when there are several.
func (rd *reader) positions() {
	if rd.idPos != -2 {
		return
	}
	rd.idPos, rd.isPos = -1, 0
	if len(rd.f.Attrs) > 0 {
		t := rd.f.Attrs[0].SampleType
		rd.idPos, rd.isPos = idPos(t), isPos(t)
	}
}

func (rd *reader) sampleAttr(body []byte) (*Attr, int, error) {
	switch len(rd.f.Attrs) {
	case 0:
		return nil, -1, fmt.Errorf("sample before any event attribute: corrupt data")
	case 1:
		return rd.f.Attrs[0], 0, nil
	}
	rd.positions()
	if rd.idPos < 0 {
		return rd.f.Attrs[0], 0, nil
	}
	off := 8 * rd.idPos
	if off+8 > len(body) {
		return nil, -1, errShort
	}
	idx, ok := rd.ids[rd.bo.Uint64(body[off:])]
	if !ok {
		return nil, -1, nil
	}
	return rd.f.Attrs[idx], idx, nil
}

func (rd *reader) sidebandAttr(body []byte) (*Attr, int) {
	switch len(rd.f.Attrs) {
	case 0:
		return nil, -1
	case 1:
		return rd.f.Attrs[0], 0
	}
	rd.positions()
	first := rd.f.Attrs[0]
	if rd.isPos == 0 || !first.SampleIDAll() {
		return first, -1
	}
	off := len(body) - 8*rd.isPos
	if off < 0 {
		return first, -1
	}
	if idx, ok := rd.ids[rd.bo.Uint64(body[off:])]; ok {
		return rd.f.Attrs[idx], idx
	}
	return first, -1
}

// queueRecord holds a timed record until its round is flushed; records
// without a time go out at once, as in perf.
func (rd *reader) queueRecord(r *Record) error {
	if r.Time == 0 || r.Time == ^uint64(0) {
		return rd.deliver(r)
	}
	rd.queue = append(rd.queue, r)
	if r.Time > rd.maxTime {
		rd.maxTime = r.Time
	}
	return nil
}

// flush releases queued records sorted by time: at a FINISHED_ROUND those
// up to the newest time of the previous round (later ones may still have
// older neighbours in other CPUs' buffers), at the end all of them.
func (rd *reader) flush(all bool) error {
	sort.SliceStable(rd.queue, func(i, j int) bool { return rd.queue[i].Time < rd.queue[j].Time })
	n := len(rd.queue)
	if !all {
		n = sort.Search(len(rd.queue), func(i int) bool { return rd.queue[i].Time > rd.nextFlush })
		rd.nextFlush = rd.maxTime
	}
	for _, r := range rd.queue[:n] {
		if err := rd.deliver(r); err != nil {
			return err
		}
	}
	rest := copy(rd.queue, rd.queue[n:])
	clear(rd.queue[rest:])
	rd.queue = rd.queue[:rest]
	return nil
}

func (rd *reader) deliver(r *Record) error {
	if rd.h == nil {
		return nil
	}
	return rd.h(r)
}

func (rd *reader) eventUpdate(b []byte) {
	const nameType = 2
	if len(b) < 16 {
		return
	}
	typ, id := rd.bo.Uint64(b), rd.bo.Uint64(b[8:])
	if typ != nameType {
		return
	}
	if idx, ok := rd.ids[id]; ok {
		if rd.f.Attrs[idx].Name == "" {
			rd.f.Attrs[idx].Name = cstring(b[16:])
		}
	}
}

// idIndex maps ids to attributes by index (pipe mode writes it for
// attributes whose ids came without them).
func (rd *reader) idIndex(b []byte) {
	if len(b) < 8 {
		return
	}
	n := rd.bo.Uint64(b)
	const entry = 32 // id, idx, cpu, tid
	if n > uint64(len(b)-8)/entry {
		return
	}
	for i := uint64(0); i < n; i++ {
		e := b[8+i*entry:]
		id, idx := rd.bo.Uint64(e), rd.bo.Uint64(e[8:])
		if idx < uint64(len(rd.f.Attrs)) {
			if _, ok := rd.ids[id]; !ok {
				rd.ids[id] = int(idx)
				rd.f.Attrs[idx].IDs = append(rd.f.Attrs[idx].IDs, id)
			}
		}
	}
}
