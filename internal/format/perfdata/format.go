package perfdata

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// Magic is how every perf.data file (and perf's pipe stream) starts, in
// the byte order of the machine that wrote it.
const Magic = "PERFILE2"

// magicSwapped is Magic as a big-endian machine writes it.
const magicSwapped = "2ELIFREP"

// IsPerfData reports whether head (the first bytes of a file) is perf.data,
// written by perf on a machine of either byte order.
func IsPerfData(head []byte) bool {
	return len(head) >= 8 && (string(head[:8]) == Magic || string(head[:8]) == magicSwapped)
}

// Record types. The kernel writes 1..63; perf itself adds 64 and up.
const (
	RecordMmap            = 1
	RecordLost            = 2
	RecordComm            = 3
	RecordExit            = 4
	RecordThrottle        = 5
	RecordUnthrottle      = 6
	RecordFork            = 7
	RecordRead            = 8
	RecordSample          = 9
	RecordMmap2           = 10
	RecordAux             = 11
	RecordItraceStart     = 12
	RecordLostSamples     = 13
	RecordSwitch          = 14
	RecordSwitchCPUWide   = 15
	RecordNamespaces      = 16
	RecordKsymbol         = 17
	RecordBPFEvent        = 18
	RecordCgroup          = 19
	RecordTextPoke        = 20
	RecordAuxOutputHWID   = 21
	RecordHeaderAttr      = 64
	RecordHeaderEventType = 65
	RecordHeaderTracing   = 66
	RecordHeaderBuildID   = 67
	RecordFinishedRound   = 68
	RecordIDIndex         = 69
	RecordAuxtraceInfo    = 70
	RecordAuxtrace        = 71
	RecordAuxtraceError   = 72
	RecordThreadMap       = 73
	RecordCPUMap          = 74
	RecordStatConfig      = 75
	RecordStat            = 76
	RecordStatRound       = 77
	RecordEventUpdate     = 78
	RecordTimeConv        = 79
	RecordHeaderFeature   = 80
	RecordCompressed      = 81
	RecordFinishedInit    = 82
	RecordCompressed2     = 83
)

var recordNames = map[uint32]string{
	RecordMmap: "MMAP", RecordLost: "LOST", RecordComm: "COMM", RecordExit: "EXIT",
	RecordThrottle: "THROTTLE", RecordUnthrottle: "UNTHROTTLE", RecordFork: "FORK",
	RecordRead: "READ", RecordSample: "SAMPLE", RecordMmap2: "MMAP2", RecordAux: "AUX",
	RecordItraceStart: "ITRACE_START", RecordLostSamples: "LOST_SAMPLES", RecordSwitch: "SWITCH",
	RecordSwitchCPUWide: "SWITCH_CPU_WIDE", RecordNamespaces: "NAMESPACES", RecordKsymbol: "KSYMBOL",
	RecordBPFEvent: "BPF_EVENT", RecordCgroup: "CGROUP", RecordTextPoke: "TEXT_POKE",
	RecordAuxOutputHWID: "AUX_OUTPUT_HW_ID", RecordHeaderAttr: "ATTR", RecordHeaderEventType: "EVENT_TYPE",
	RecordHeaderTracing: "TRACING_DATA", RecordHeaderBuildID: "BUILD_ID", RecordFinishedRound: "FINISHED_ROUND",
	RecordIDIndex: "ID_INDEX", RecordAuxtraceInfo: "AUXTRACE_INFO", RecordAuxtrace: "AUXTRACE",
	RecordAuxtraceError: "AUXTRACE_ERROR", RecordThreadMap: "THREAD_MAP", RecordCPUMap: "CPU_MAP",
	RecordStatConfig: "STAT_CONFIG", RecordStat: "STAT", RecordStatRound: "STAT_ROUND",
	RecordEventUpdate: "EVENT_UPDATE", RecordTimeConv: "TIME_CONV", RecordHeaderFeature: "FEATURE",
	RecordCompressed: "COMPRESSED", RecordFinishedInit: "FINISHED_INIT", RecordCompressed2: "COMPRESSED2",
}

// RecordName is perf's name for a record type ("SAMPLE", "MMAP2"), or the
// number for types this reader does not know.
func RecordName(t uint32) string {
	if n, ok := recordNames[t]; ok {
		return n
	}
	return fmt.Sprintf("type %d", t)
}

// Misc bits of a record header.
const (
	MiscCPUModeMask = 0x7
	MiscKernel      = 1
	MiscUser        = 2
	MiscHypervisor  = 3
	MiscGuestKernel = 4
	MiscGuestUser   = 5
	MiscCommExec    = 1 << 13 // COMM: the name changed by exec
	MiscMmapBuildID = 1 << 14 // MMAP2: a build-id instead of device and inode
	MiscBuildIDSize = 1 << 15 // BUILD_ID: the size byte is valid
)

// Sample type bits (perf_event_attr.sample_type), in the order the kernel
// writes the fields of a sample.
const (
	SampleIP           = 1 << 0
	SampleTID          = 1 << 1
	SampleTime         = 1 << 2
	SampleAddr         = 1 << 3
	SampleRead         = 1 << 4
	SampleCallchain    = 1 << 5
	SampleID           = 1 << 6
	SampleCPU          = 1 << 7
	SamplePeriod       = 1 << 8
	SampleStreamID     = 1 << 9
	SampleRaw          = 1 << 10
	SampleBranchStack  = 1 << 11
	SampleRegsUser     = 1 << 12
	SampleStackUser    = 1 << 13
	SampleWeight       = 1 << 14
	SampleDataSrc      = 1 << 15
	SampleIdentifier   = 1 << 16
	SampleTransaction  = 1 << 17
	SampleRegsIntr     = 1 << 18
	SamplePhysAddr     = 1 << 19
	SampleAux          = 1 << 20
	SampleCgroup       = 1 << 21
	SampleDataPageSize = 1 << 22
	SampleCodePageSize = 1 << 23
	SampleWeightStruct = 1 << 24
)

// Read format bits.
const (
	ReadTotalTimeEnabled = 1 << 0
	ReadTotalTimeRunning = 1 << 1
	ReadID               = 1 << 2
	ReadGroup            = 1 << 3
	ReadLost             = 1 << 4
)

// Attribute flag bits (the bitfield word of perf_event_attr) this reader uses.
const (
	AttrFlagExcludeUser   = 1 << 4
	AttrFlagExcludeKernel = 1 << 5
	AttrFlagFreq          = 1 << 10
	AttrFlagSampleIDAll   = 1 << 18
)

// Callchain context markers: entries at or above ContextMax switch the
// address space of the entries that follow.
const (
	ContextHV          = ^uint64(32) + 1   // -32
	ContextKernel      = ^uint64(128) + 1  // -128
	ContextUser        = ^uint64(512) + 1  // -512
	ContextGuest       = ^uint64(2048) + 1 // -2048
	ContextGuestKernel = ^uint64(2176) + 1 // -2176
	ContextGuestUser   = ^uint64(2560) + 1 // -2560
	ContextMax         = ^uint64(4095) + 1 // -4095
)

// Event types (perf_event_attr.type).
const (
	TypeHardware   = 0
	TypeSoftware   = 1
	TypeTracepoint = 2
	TypeHWCache    = 3
	TypeRaw        = 4
	TypeBreakpoint = 5
)

// Feature bits of the file header, each with a section after the data.
const (
	FeatTracingData   = 1
	FeatBuildID       = 2
	FeatHostname      = 3
	FeatOSRelease     = 4
	FeatVersion       = 5
	FeatArch          = 6
	FeatNrCPUs        = 7
	FeatCPUDesc       = 8
	FeatCPUID         = 9
	FeatTotalMem      = 10
	FeatCmdline       = 11
	FeatEventDesc     = 12
	FeatCPUTopology   = 13
	FeatNUMATopology  = 14
	FeatBranchStack   = 15
	FeatPMUMappings   = 16
	FeatGroupDesc     = 17
	FeatAuxtrace      = 18
	FeatStat          = 19
	FeatCache         = 20
	FeatSampleTime    = 21
	FeatMemTopology   = 22
	FeatClockID       = 23
	FeatDirFormat     = 24
	FeatBPFProgInfo   = 25
	FeatBPFBTF        = 26
	FeatCompressed    = 27
	FeatCPUPMUCaps    = 28
	FeatClockData     = 29
	FeatHybridTopo    = 30
	FeatPMUCaps       = 31
	featBits          = 256
	fileHeaderSize    = 104
	pipeHeaderSize    = 16
	recordHeaderSize  = 8
	minAttrSize       = 64 // PERF_ATTR_SIZE_VER0
	maxAttrSize       = 4096
	fileSectionSize   = 16
	maxIDsPerAttr     = 1 << 20
	maxFeatureSection = 256 << 20
)

// Attr is one recorded event: its perf_event_attr fields sonde uses, the
// sample ids the kernel gave its instances, and its name.
type Attr struct {
	Type             uint32
	Size             uint32
	Config           uint64
	SamplePeriod     uint64 // a frequency in Hz when Freq()
	SampleType       uint64
	ReadFormat       uint64
	Flags            uint64
	Config1, Config2 uint64
	BranchSampleType uint64
	SampleRegsUser   uint64
	SampleStackUser  uint32
	ClockID          int32
	SampleRegsIntr   uint64
	IDs              []uint64
	Name             string // from EVENT_DESC or EVENT_UPDATE; "" when the file has none
}

// Freq reports sampling by frequency (SamplePeriod is then in Hz).
func (a *Attr) Freq() bool { return a.Flags&AttrFlagFreq != 0 }

// SampleIDAll reports whether non-sample records carry a sample id trailer.
func (a *Attr) SampleIDAll() bool { return a.Flags&AttrFlagSampleIDAll != 0 }

// parseAttr decodes a perf_event_attr of any version (the kernel grew it
// over time; missing trailing fields read as zero).
func parseAttr(b []byte, bo binary.ByteOrder) (Attr, error) {
	if len(b) < minAttrSize {
		return Attr{}, fmt.Errorf("event attribute of %d bytes, want at least %d", len(b), minAttrSize)
	}
	u64 := func(off int) uint64 {
		if off+8 > len(b) {
			return 0
		}
		return bo.Uint64(b[off:])
	}
	u32 := func(off int) uint32 {
		if off+4 > len(b) {
			return 0
		}
		return bo.Uint32(b[off:])
	}
	a := Attr{
		Type: u32(0), Size: u32(4), Config: u64(8), SamplePeriod: u64(16), SampleType: u64(24),
		ReadFormat: u64(32), Flags: u64(40), Config1: u64(56), Config2: u64(64),
		BranchSampleType: u64(72), SampleRegsUser: u64(80), SampleStackUser: u32(88),
		ClockID: int32(u32(92)), SampleRegsIntr: u64(96),
	}
	if bo == binary.BigEndian {
		// The flags word is a C bitfield: a big-endian writer packs it from
		// the top bit down.
		a.Flags = bits.Reverse64(a.Flags)
	}
	return a, nil
}

// sampleIDSize is the size of the sample_id_all trailer for sample type t.
func sampleIDSize(t uint64) int {
	n := 0
	for _, bit := range []uint64{SampleTID, SampleTime, SampleID, SampleStreamID, SampleCPU, SampleIdentifier} {
		if t&bit != 0 {
			n += 8
		}
	}
	return n
}

// idPos is where a sample's id sits, in u64 words from the start of the
// record body; -1 when samples carry no id.
func idPos(t uint64) int {
	if t&SampleIdentifier != 0 {
		return 0
	}
	if t&SampleID == 0 {
		return -1
	}
	n := 0
	for _, bit := range []uint64{SampleIP, SampleTID, SampleTime, SampleAddr} {
		if t&bit != 0 {
			n++
		}
	}
	return n
}

// isPos is where a non-sample record's id sits, in u64 words back from the
// end of its sample_id trailer (1 = the last word); 0 when it has none.
func isPos(t uint64) int {
	if t&SampleIdentifier != 0 {
		return 1
	}
	if t&SampleID == 0 {
		return 0
	}
	n := 1
	if t&SampleStreamID != 0 {
		n++
	}
	if t&SampleCPU != 0 {
		n++
	}
	return n
}
