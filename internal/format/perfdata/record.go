package perfdata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/sonde-dev/sonde/internal/collect/perf"
)

// Record is one decoded record, in time order as perf report sees it.
// Which payload is set depends on Type; the perf package's types are reused
// so the same model builder code can take records from the ring buffer and
// from a file.
type Record struct {
	Type uint32
	Misc uint16
	// Attr indexes File.Attrs: the event this record belongs to, -1 when
	// the file does not say.
	Attr int
	// Time is the record's timestamp (ns, perf's clock), 0 when unknown.
	Time   uint64
	Sample perf.Sample // SAMPLE: Callchain and Raw are owned by the record
	Mmap   perf.Mmap   // MMAP, MMAP2
	Comm   perf.Comm   // COMM
	Task   perf.Task   // FORK, EXIT
	Lost   uint64      // LOST, LOST_SAMPLES: samples dropped
	// Addr is the sampled data address (PERF_SAMPLE_ADDR), when recorded.
	Addr    uint64
	Ksymbol Ksymbol // KSYMBOL
}

// Ksymbol is kernel code that kallsyms may no longer list: a BPF
// program or an out-of-line trampoline, registered or gone.
type Ksymbol struct {
	Addr       uint64
	Len        uint32
	Type       uint16 // 1 BPF program, 2 out-of-line code
	Unregister bool
	Name       string
}

// CPUMode is the record's cpumode (MiscKernel, MiscUser, …).
func (r *Record) CPUMode() uint16 { return r.Misc & MiscCPUModeMask }

// errShort marks a record body shorter than its fields.
var errShort = errors.New("record shorter than its fields")

// cursor reads fixed-size fields from a record body with bounds checks.
type cursor struct {
	b   []byte
	off int
	bo  binary.ByteOrder
	err error
}

// zeros is what a fixed-size field reads as once the body is used up.
var zeros [8]byte

// field returns the next n (at most 8) bytes; past the end, n zero bytes,
// and the cursor keeps errShort.
func (c *cursor) field(n int) []byte {
	if c.err != nil || c.off+n > len(c.b) {
		c.err = errShort
		return zeros[:n]
	}
	c.off += n
	return c.b[c.off-n : c.off]
}

func (c *cursor) u64() uint64 { return c.bo.Uint64(c.field(8)) }
func (c *cursor) u32() uint32 { return c.bo.Uint32(c.field(4)) }
func (c *cursor) u16() uint16 { return c.bo.Uint16(c.field(2)) }

func (c *cursor) skip(n uint64) {
	if c.err != nil || n > uint64(len(c.b)-c.off) {
		c.err = errShort
		return
	}
	c.off += int(n)
}

func (c *cursor) bytes(n uint64) []byte {
	if c.err != nil || n > uint64(len(c.b)-c.off) {
		c.err = errShort
		return nil
	}
	b := c.b[c.off : c.off+int(n)]
	c.off += int(n)
	return b
}

// parseSample decodes the fields of a SAMPLE up to and including RAW: what
// sonde uses. Later fields (branch stacks, registers, user stack copies)
// are left alone; the record's size frames them.
func parseSample(b []byte, a *Attr, bo binary.ByteOrder, r *Record) error {
	c := cursor{b: b, bo: bo}
	t := a.SampleType
	s := &r.Sample
	var id sampleID
	if t&SampleIdentifier != 0 {
		id.id = c.u64()
	}
	if t&SampleIP != 0 {
		s.IP = c.u64()
	}
	id.read(&c, t, &r.Addr)
	s.Pid, s.Tid, s.Time, s.ID, s.CPU = id.pid, id.tid, id.time, id.id, id.cpu
	if t&SamplePeriod != 0 {
		s.Period = c.u64()
	}
	if t&SampleRead != 0 {
		skipRead(&c, a.ReadFormat)
	}
	if t&SampleCallchain != 0 {
		n := c.u64()
		if c.err == nil && n > uint64(len(c.b)-c.off)/8 {
			return fmt.Errorf("callchain of %d entries in a %d-byte sample: %w", n, len(b), errShort)
		}
		s.Callchain = make([]uint64, n)
		for i := range s.Callchain {
			s.Callchain[i] = c.u64()
		}
	}
	if t&SampleRaw != 0 {
		n := c.u32()
		raw := c.bytes(uint64(n))
		if c.err == nil {
			s.Raw = bytes.Clone(raw)
		}
	}
	if c.err != nil {
		return c.err
	}
	if t&SamplePeriod == 0 {
		// Without a period field every sample stands for the fixed period.
		s.Period = a.SamplePeriod
		if a.Freq() || s.Period == 0 {
			s.Period = 1
		}
	}
	r.Time = s.Time
	return nil
}

// skipRead steps over a PERF_SAMPLE_READ block.
func skipRead(c *cursor, rf uint64) {
	per := uint64(8) // value
	if rf&ReadID != 0 {
		per += 8
	}
	if rf&ReadLost != 0 {
		per += 8
	}
	if rf&ReadGroup == 0 {
		n := per
		if rf&ReadTotalTimeEnabled != 0 {
			n += 8
		}
		if rf&ReadTotalTimeRunning != 0 {
			n += 8
		}
		c.skip(n)
		return
	}
	nr := c.u64()
	if rf&ReadTotalTimeEnabled != 0 {
		c.u64()
	}
	if rf&ReadTotalTimeRunning != 0 {
		c.u64()
	}
	if c.err == nil && nr > uint64(len(c.b))/per {
		c.err = errShort
		return
	}
	c.skip(nr * per)
}

// sampleID is a decoded sample_id_all trailer.
type sampleID struct {
	pid, tid uint32
	time     uint64
	id       uint64
	cpu      uint32
}

// read decodes the fields a sample and a sample_id trailer share, in the
// order both lay them out: TID, TIME, ADDR (samples only: addr nil for a
// trailer), ID, STREAM_ID, CPU.
func (id *sampleID) read(c *cursor, t uint64, addr *uint64) {
	if t&SampleTID != 0 {
		id.pid = c.u32()
		id.tid = c.u32()
	}
	if t&SampleTime != 0 {
		id.time = c.u64()
	}
	if t&SampleAddr != 0 && addr != nil {
		*addr = c.u64()
	}
	if t&SampleID != 0 {
		id.id = c.u64()
	}
	if t&SampleStreamID != 0 {
		c.u64()
	}
	if t&SampleCPU != 0 {
		id.cpu = c.u32()
		c.u32()
	}
}

// parseSampleID decodes the trailer at the end of a non-sample record and
// returns the body without it.
func parseSampleID(b []byte, a *Attr, bo binary.ByteOrder) (sampleID, []byte, error) {
	var id sampleID
	if a == nil || !a.SampleIDAll() {
		return id, b, nil
	}
	n := sampleIDSize(a.SampleType)
	if n > len(b) {
		return id, nil, errShort
	}
	c := cursor{b: b[len(b)-n:], bo: bo}
	t := a.SampleType
	id.read(&c, t, nil)
	if t&SampleIdentifier != 0 {
		id.id = c.u64()
	}
	return id, b[:len(b)-n], c.err
}

// parseSideband decodes the non-sample records sonde uses.
func parseSideband(typ uint32, misc uint16, b []byte, a *Attr, bo binary.ByteOrder, r *Record) error {
	sid, body, err := parseSampleID(b, a, bo)
	if err != nil {
		return err
	}
	r.Time = sid.time
	psid := perf.SampleID{Pid: sid.pid, Tid: sid.tid, Time: sid.time, CPU: sid.cpu}
	c := cursor{b: body, bo: bo}
	switch typ {
	case RecordMmap, RecordMmap2:
		m := perf.Mmap{ID: psid, Prot: 0x4} // plain MMAP records are for code
		m.Pid, m.Tid = c.u32(), c.u32()
		m.Addr, m.Len, m.Pgoff = c.u64(), c.u64(), c.u64()
		if typ == RecordMmap2 {
			ids := c.bytes(24) // maj, min, ino, ino_generation or build-id
			m.Prot = c.u32()
			c.u32() // flags
			if c.err == nil && misc&MiscMmapBuildID != 0 {
				n := min(int(ids[0]), 20)
				m.BuildID = bytes.Clone(ids[4 : 4+n])
			}
		}
		if c.err != nil {
			return c.err
		}
		m.Filename = cstring(body[c.off:])
		r.Mmap = m
	case RecordComm:
		cm := perf.Comm{ID: psid, Exec: misc&MiscCommExec != 0}
		cm.Pid, cm.Tid = c.u32(), c.u32()
		if c.err != nil {
			return c.err
		}
		cm.Comm = cstring(body[c.off:])
		r.Comm = cm
	case RecordFork, RecordExit:
		t := perf.Task{}
		t.Pid, t.Ppid, t.Tid, t.Ptid = c.u32(), c.u32(), c.u32(), c.u32()
		t.Time = c.u64()
		if c.err != nil {
			return c.err
		}
		r.Task = t
	case RecordLost:
		c.u64() // id
		r.Lost = c.u64()
	case RecordLostSamples:
		r.Lost = c.u64()
	case RecordKsymbol:
		k := Ksymbol{Addr: c.u64(), Len: c.u32(), Type: c.u16()}
		k.Unregister = c.u16()&1 != 0 // PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER
		if c.err != nil {
			return c.err
		}
		k.Name = cstring(body[c.off:])
		r.Ksymbol = k
	}
	return c.err
}

func cstring(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
