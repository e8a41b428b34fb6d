package perf

import (
	"bytes"
	"errors"

	"golang.org/x/sys/unix"
)

// Record types the kernel writes that sonde reads.
const (
	RecordMmap        = unix.PERF_RECORD_MMAP
	RecordLost        = unix.PERF_RECORD_LOST
	RecordComm        = unix.PERF_RECORD_COMM
	RecordExit        = unix.PERF_RECORD_EXIT
	RecordThrottle    = unix.PERF_RECORD_THROTTLE
	RecordUnthrottle  = unix.PERF_RECORD_UNTHROTTLE
	RecordFork        = unix.PERF_RECORD_FORK
	RecordSample      = unix.PERF_RECORD_SAMPLE
	RecordMmap2       = unix.PERF_RECORD_MMAP2
	RecordLostSamples = 13
)

// Misc bits.
const (
	MiscCPUModeMask = unix.PERF_RECORD_MISC_CPUMODE_MASK
	MiscKernel      = unix.PERF_RECORD_MISC_KERNEL
	MiscUser        = unix.PERF_RECORD_MISC_USER
	MiscCommExec    = unix.PERF_RECORD_MISC_COMM_EXEC
	MiscMmapBuildID = unix.PERF_RECORD_MISC_MMAP_BUILD_ID
)

var errShort = errors.New("short perf record")

// Sample is a decoded PERF_RECORD_SAMPLE for SampleType (+ callchain).
type Sample struct {
	ID        uint64
	IP        uint64
	Pid, Tid  uint32
	Time      uint64
	CPU       uint32
	Period    uint64
	Callchain []uint64 // aliases the ring; copy to keep
	Raw       []byte   // tracepoint payload; aliases the record
}

// ParseSample decodes body into s (without a raw payload).
func ParseSample(body []byte, callchain bool, s *Sample) error {
	return ParseSampleRaw(body, callchain, false, s)
}

// ParseSampleRaw decodes body into s; raw says PERF_SAMPLE_RAW was asked for.
func ParseSampleRaw(body []byte, callchain, raw bool, s *Sample) error {
	if len(body) < 48 {
		return errShort
	}
	s.ID = le64(body[0:])
	s.IP = le64(body[8:])
	s.Pid = le32(body[16:])
	s.Tid = le32(body[20:])
	s.Time = le64(body[24:])
	s.CPU = le32(body[32:])
	s.Period = le64(body[40:])
	s.Callchain = s.Callchain[:0]
	if callchain {
		if len(body) < 56 {
			return errShort
		}
		n := le64(body[48:])
		if n > uint64(len(body)-56)/8 {
			return errShort
		}
		for i := uint64(0); i < n; i++ {
			s.Callchain = append(s.Callchain, le64(body[56+8*i:]))
		}
	}
	s.Raw = nil
	if raw {
		off := 48
		if callchain {
			off = 56 + 8*len(s.Callchain)
		}
		if len(body) < off+4 {
			return errShort
		}
		n := int(le32(body[off:]))
		if n > len(body)-off-4 {
			return errShort
		}
		s.Raw = body[off+4 : off+4+n]
	}
	return nil
}

// SampleID is the sample_id_all trailer of non-sample records.
type SampleID struct {
	Pid, Tid uint32
	Time     uint64
	CPU      uint32
}

const sampleIDSize = 32 // tid, time, cpu, identifier

func parseSampleID(body []byte) (SampleID, []byte, error) {
	if len(body) < sampleIDSize {
		return SampleID{}, nil, errShort
	}
	t := body[len(body)-sampleIDSize:]
	return SampleID{Pid: le32(t), Tid: le32(t[4:]), Time: le64(t[8:]), CPU: le32(t[16:])}, body[:len(body)-sampleIDSize], nil
}

// RecordTime returns the timestamp of any record sonde asked for.
func RecordTime(typ uint32, body []byte) uint64 {
	if typ == RecordSample {
		if len(body) >= 32 {
			return le64(body[24:])
		}
		return 0
	}
	id, _, err := parseSampleID(body)
	if err != nil {
		return 0
	}
	return id.Time
}

// Mmap is a PERF_RECORD_MMAP or MMAP2.
type Mmap struct {
	Pid, Tid  uint32
	Addr, Len uint64
	Pgoff     uint64
	Prot      uint32
	Filename  string
	BuildID   []byte
	ID        SampleID
}

// ParseMmap decodes MMAP and MMAP2 records.
func ParseMmap(typ uint32, misc uint16, body []byte) (Mmap, error) {
	id, b, err := parseSampleID(body)
	if err != nil {
		return Mmap{}, err
	}
	m := Mmap{ID: id, Prot: unix.PROT_EXEC}
	if len(b) < 32 {
		return m, errShort
	}
	m.Pid, m.Tid = le32(b), le32(b[4:])
	m.Addr, m.Len, m.Pgoff = le64(b[8:]), le64(b[16:]), le64(b[24:])
	rest := b[32:]
	if typ == RecordMmap2 {
		if len(rest) < 32 {
			return m, errShort
		}
		if misc&MiscMmapBuildID != 0 {
			n := int(rest[0])
			if n > 20 {
				n = 20
			}
			m.BuildID = append([]byte(nil), rest[4:4+n]...)
		}
		m.Prot = le32(rest[24:])
		rest = rest[32:]
	}
	m.Filename = cstring(rest)
	return m, nil
}

// Comm is a PERF_RECORD_COMM.
type Comm struct {
	Pid, Tid uint32
	Comm     string
	Exec     bool
	ID       SampleID
}

// ParseComm decodes a COMM record.
func ParseComm(misc uint16, body []byte) (Comm, error) {
	id, b, err := parseSampleID(body)
	if err != nil || len(b) < 8 {
		return Comm{}, errShort
	}
	return Comm{Pid: le32(b), Tid: le32(b[4:]), Comm: cstring(b[8:]), Exec: misc&MiscCommExec != 0, ID: id}, nil
}

// Task is a FORK or EXIT record.
type Task struct {
	Pid, Ppid, Tid, Ptid uint32
	Time                 uint64
}

// ParseTask decodes FORK/EXIT.
func ParseTask(body []byte) (Task, error) {
	if len(body) < 24 {
		return Task{}, errShort
	}
	return Task{Pid: le32(body), Ppid: le32(body[4:]), Tid: le32(body[8:]), Ptid: le32(body[12:]), Time: le64(body[16:])}, nil
}

// ParseLost returns the count of a LOST or LOST_SAMPLES record.
func ParseLost(typ uint32, body []byte) uint64 {
	if typ == RecordLost {
		if len(body) < 16 {
			return 0
		}
		return le64(body[8:])
	}
	if len(body) < 8 {
		return 0
	}
	return le64(body)
}

func cstring(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
