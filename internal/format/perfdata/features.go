package perfdata

import (
	"fmt"

	"github.com/sonde-dev/sonde/internal/collect/perf"
)

var featureNames = map[int]string{
	FeatTracingData: "TRACING_DATA", FeatBuildID: "BUILD_ID", FeatHostname: "HOSTNAME",
	FeatOSRelease: "OSRELEASE", FeatVersion: "VERSION", FeatArch: "ARCH", FeatNrCPUs: "NRCPUS",
	FeatCPUDesc: "CPUDESC", FeatCPUID: "CPUID", FeatTotalMem: "TOTAL_MEM", FeatCmdline: "CMDLINE",
	FeatEventDesc: "EVENT_DESC", FeatCPUTopology: "CPU_TOPOLOGY", FeatNUMATopology: "NUMA_TOPOLOGY",
	FeatBranchStack: "BRANCH_STACK", FeatPMUMappings: "PMU_MAPPINGS", FeatGroupDesc: "GROUP_DESC",
	FeatAuxtrace: "AUXTRACE", FeatStat: "STAT", FeatCache: "CACHE", FeatSampleTime: "SAMPLE_TIME",
	FeatMemTopology: "MEM_TOPOLOGY", FeatClockID: "CLOCKID", FeatDirFormat: "DIR_FORMAT",
	FeatBPFProgInfo: "BPF_PROG_INFO", FeatBPFBTF: "BPF_BTF", FeatCompressed: "COMPRESSED",
	FeatCPUPMUCaps: "CPU_PMU_CAPS", FeatClockData: "CLOCK_DATA", FeatHybridTopo: "HYBRID_TOPOLOGY",
	FeatPMUCaps: "PMU_CAPS",
}

func featureName(bit int) string {
	if n, ok := featureNames[bit]; ok {
		return n
	}
	return fmt.Sprintf("%d", bit)
}

func (rd *reader) wantFeature(bit int) bool {
	switch bit {
	case FeatTracingData, FeatBuildID, FeatHostname, FeatOSRelease, FeatVersion, FeatArch,
		FeatNrCPUs, FeatCPUDesc, FeatCPUID, FeatTotalMem, FeatCmdline, FeatEventDesc,
		FeatSampleTime, FeatClockID, FeatClockData, FeatDirFormat:
		return true
	}
	return false
}

// feature decodes one feature section (the same bytes in a file's section
// and in a pipe's FEATURE record).
func (rd *reader) feature(bit int, b []byte) error {
	c := cursor{b: b, bo: rd.bo}
	f := rd.f
	// The features that are one perf_header_string.
	strs := map[int]*string{FeatHostname: &f.Hostname, FeatOSRelease: &f.OSRelease, FeatVersion: &f.PerfVersion,
		FeatArch: &f.Arch, FeatCPUDesc: &f.CPUDesc, FeatCPUID: &f.CPUID}
	var err error
	if s, ok := strs[bit]; ok {
		*s, err = c.str()
		return err
	}
	switch bit {
	case FeatTracingData:
		f.Tracing, err = parseTracing(b)
	case FeatBuildID:
		err = rd.buildIDs(b)
	case FeatNrCPUs:
		f.NrCPUsAvail, f.NrCPUsOnline = c.u32(), c.u32()
	case FeatTotalMem:
		f.TotalMemKB = c.u64()
	case FeatCmdline:
		f.Cmdline, err = c.strList()
	case FeatSampleTime:
		f.SampleTimeStart, f.SampleTimeEnd = c.u64(), c.u64()
	case FeatClockID:
		f.ClockResNS = c.u64()
	case FeatClockData:
		c.u32() // version
		cd := &ClockData{ClockID: c.u32(), WallClockNS: c.u64(), ClockNS: c.u64()}
		if c.err == nil {
			f.Clock = cd
		}
	case FeatEventDesc:
		err = rd.eventDesc(&c)
	case FeatDirFormat:
		// perf record --dir writes data in several files; one file is
		// all this reader takes.
		return fmt.Errorf("directory-format recordings (perf record --dir) are not supported; convert with perf inject")
	}
	if err == nil {
		err = c.err // the fixed-size features read without a check of their own
	}
	return err
}

// str reads a perf_header_string: a u32 length (padding included) and a
// NUL-terminated string.
func (c *cursor) str() (string, error) {
	n := c.u32()
	b := c.bytes(uint64(n))
	if c.err != nil {
		return "", fmt.Errorf("string of %d bytes: %w", n, c.err)
	}
	return cstring(b), nil
}

func (c *cursor) strList() ([]string, error) {
	n := c.u32()
	if c.err == nil && uint64(n) > uint64(len(c.b)-c.off)/4 {
		return nil, fmt.Errorf("list of %d strings in %d bytes: %w", n, len(c.b), errShort)
	}
	var out []string
	for i := uint32(0); i < n; i++ {
		s, err := c.str()
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, c.err
}

// eventDesc names attributes: each entry is an attribute, its ids and the
// event string the user typed.
func (rd *reader) eventDesc(c *cursor) error {
	n := c.u32()
	asz := c.u32()
	if c.err != nil {
		return c.err
	}
	if asz < minAttrSize || asz > maxAttrSize || uint64(n) > uint64(len(c.b))/uint64(asz) {
		return fmt.Errorf("%d event descriptions of %d bytes: corrupt", n, asz)
	}
	for i := uint32(0); i < n; i++ {
		c.skip(uint64(asz))
		nids := c.u32()
		name, err := c.str()
		if err != nil {
			return err
		}
		if uint64(nids) > uint64(len(c.b)-c.off)/8 {
			return fmt.Errorf("event %q with %d ids: %w", name, nids, errShort)
		}
		named := false
		for j := uint32(0); j < nids; j++ {
			id := c.u64()
			if idx, ok := rd.ids[id]; ok && !named {
				rd.f.Attrs[idx].Name = name
				named = true
			}
		}
		// Descriptions come in attribute order; events without ids (a
		// single event recorded without PERF_SAMPLE_ID) match by position.
		if !named && int(i) < len(rd.f.Attrs) && rd.f.Attrs[i].Name == "" {
			rd.f.Attrs[i].Name = name
		}
	}
	return c.err
}

// buildIDs parses BUILD_ID records (perf_record_header_build_id).
func (rd *reader) buildIDs(b []byte) error {
	bo := rd.bo
	for len(b) > 0 {
		if len(b) < recordHeaderSize {
			return fmt.Errorf("build-id table: %w", errShort)
		}
		misc := bo.Uint16(b[4:])
		size := int(bo.Uint16(b[6:]))
		const fixed = recordHeaderSize + 4 + 24
		if size < fixed || size > len(b) {
			return fmt.Errorf("build-id entry of %d bytes (%d left): corrupt", size, len(b))
		}
		e := b[:size]
		n := 20
		if misc&MiscBuildIDSize != 0 {
			n = min(int(e[12+20]), 20)
		}
		id := append([]byte(nil), e[12:12+n]...)
		if misc&MiscBuildIDSize == 0 {
			// Old files pad short ids with zeros.
			for len(id) > 0 && id[len(id)-1] == 0 {
				id = id[:len(id)-1]
			}
		}
		rd.f.BuildIDs = append(rd.f.BuildIDs, BuildID{
			Pid: int32(bo.Uint32(e[8:])), CPUMode: misc & MiscCPUModeMask, ID: id, Filename: cstring(e[fixed:]),
		})
		b = b[size:]
	}
	return nil
}

// finishNames gives every attribute a name: the one perf stored, else the
// tracepoint's from the tracing data, else the generic event's.
func (rd *reader) finishNames() {
	for _, a := range rd.f.Attrs {
		if a.Name != "" {
			continue
		}
		a.Name = attrName(a, rd.f.Tracing)
	}
}

func attrName(a *Attr, t *Tracing) string {
	switch a.Type {
	case TypeTracepoint:
		if t != nil {
			if f, ok := t.Formats[a.Config]; ok {
				return f.System + ":" + f.Format.Name
			}
		}
		return fmt.Sprintf("tracepoint:%d", a.Config)
	case TypeSoftware, TypeHardware:
		for _, d := range perf.Builtin {
			if d.Type == a.Type && d.Config == a.Config {
				return d.Name
			}
		}
	}
	return fmt.Sprintf("raw:type=%d,config=%#x", a.Type, a.Config)
}

// kindOf says what kind of event an attribute is, in sonde's words.
func kindOf(a *Attr) string {
	switch a.Type {
	case TypeHardware:
		return perf.KindHardware.String()
	case TypeHWCache:
		return perf.KindHWCache.String()
	case TypeTracepoint:
		return perf.KindTracepoint.String()
	case TypeSoftware:
		return perf.KindSoftware.String()
	}
	return "raw"
}
