package perfdata

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/sonde-dev/sonde/internal/collect/tracefs"
	"github.com/sonde-dev/sonde/internal/model"
)

// finish renumbers events, fills the recording's description and names
// every location.
func (c *converter) finish(f *File, o Options, res *Result, symbols bool) *model.Profile {
	p := &c.prof
	m := &p.Meta

	// Events: the attributes that have samples, in the file's order (perf
	// adds a "dummy" event for side-band records that never samples).
	evIdx := map[int]uint16{}
	for i, a := range f.Attrs {
		if c.attrHits[i] == 0 && (len(f.Attrs) > 1 || a.Type == TypeSoftware && a.Config == 9) {
			continue
		}
		evIdx[i] = uint16(len(m.Events))
		m.Events = append(m.Events, eventInfo(a, f.Tracing, symbols))
		if a.SampleType&SampleCallchain != 0 {
			m.Callchain = true
		}
		if a.SampleType&SampleStackUser != 0 {
			c.dwarf = true
		}
	}
	for i := range p.Samples {
		p.Samples[i].Event = evIdx[int(p.Samples[i].Event)]
	}
	var names []string
	for _, e := range m.Events {
		names = append(names, e.Name)
	}
	m.Event = strings.Join(names, ",")
	if len(m.Events) > 0 {
		m.Freq, m.Period = m.Events[0].Freq, m.Events[0].Period
	}
	m.Command = f.Cmdline
	m.Target = target(f.Cmdline)
	m.Hostname = f.Hostname
	m.Kernel = f.OSRelease
	m.Arch = goArch(f.Arch)
	m.Unwinder = "perf fp"
	if c.dwarf {
		m.Unwinder = "perf dwarf"
		m.Warnings = append(m.Warnings, "recorded with --call-graph dwarf: user stacks need perf's DWARF unwinding and show only the sampled function here")
	}
	m.DurationNS = sampleSpan(p.Samples)
	var first uint64
	for _, s := range p.Samples {
		if s.Time != 0 && (first == 0 || s.Time < first) {
			first = s.Time
		}
	}
	if f.Clock != nil && first > 0 {
		m.StartUnixNS = int64(f.Clock.WallClockNS) + int64(first) - int64(f.Clock.ClockNS)
	}
	// LOST records and LOST_SAMPLES records count the same dropped samples
	// two ways (perf 6 writes both); take the larger.
	m.Lost = max(f.Stats.Lost, f.Stats.LostSamples)
	m.Throttled = f.Stats.Throttled
	m.Warnings = append(m.Warnings, f.Warnings...)
	var skipped []string
	for t, n := range f.Stats.Skipped {
		skipped = append(skipped, fmt.Sprintf("%d %s", n, RecordName(t)))
	}
	sort.Strings(skipped)
	if len(skipped) > 0 {
		m.Warnings = append(m.Warnings, "perf.data records not imported: "+strings.Join(skipped, ", "))
	}
	if compressed(f) > 0 {
		m.Warnings = append(m.Warnings, errCompressed.Error())
	}
	if f.Stats.UnknownID > 0 {
		m.Warnings = append(m.Warnings, fmt.Sprintf("%d samples of events the file does not describe were skipped", f.Stats.UnknownID))
	}

	if symbols {
		c.symbolize(f, o, res)
	}
	for _, u := range res.Unmatched {
		msg := fmt.Sprintf("%s: frames unnamed (%d samples): %s", u.Name, u.Samples, u.Reason)
		m.Warnings = append(m.Warnings, msg)
	}
	return p
}

// eventInfo describes an event; symbols allows reading this machine's
// tracefs for formats the file lacks.
// errCompressed explains what to do with perf record -z files: their
// records are zstd frames, which this reader does not inflate.
var errCompressed = errors.New("the recording is compressed (perf record -z), which sonde does not read: record without -z, or import the text of perf script -i FILE")

func compressed(f *File) uint64 {
	return f.Stats.Skipped[RecordCompressed] + f.Stats.Skipped[RecordCompressed2]
}

func eventInfo(a *Attr, t *Tracing, symbols bool) model.EventInfo {
	e := model.EventInfo{Name: a.Name, Kind: kindOf(a)}
	if a.Freq() {
		e.Freq = a.SamplePeriod
	} else {
		e.Period = a.SamplePeriod
	}
	if a.Type != TypeTracepoint {
		return e
	}
	e.Period = max(e.Period, 1)
	var format *tracefs.Format
	if t != nil {
		if tf, ok := t.Formats[a.Config]; ok {
			format = tf.Format
		}
	}
	if format == nil && symbols {
		// No tracing data (perf record -o - of old perfs, or stripped): this
		// kernel's tracefs, when the event has the same id here.
		if f, err := tracefs.ReadFormat(a.Name); err == nil && f.ID == a.Config {
			format = f
		}
	}
	if format != nil {
		for _, fd := range format.Fields {
			e.Fields = append(e.Fields, model.Field{Name: fd.Name, Type: fd.Type, Offset: int32(fd.Offset), Size: int32(fd.Size), Signed: fd.Signed, Kind: uint8(fd.Kind)})
		}
	}
	return e
}

// target describes what perf recorded, from its command line.
func target(cmd []string) string {
	for i, a := range cmd {
		switch {
		case a == "-a" || a == "--all-cpus":
			return "system-wide"
		case (a == "-p" || a == "--pid") && i+1 < len(cmd):
			return "pid " + cmd[i+1]
		case strings.HasPrefix(a, "--pid="):
			return "pid " + strings.TrimPrefix(a, "--pid=")
		case (a == "-C" || a == "--cpu") && i+1 < len(cmd):
			return "cpus " + cmd[i+1]
		}
	}
	if len(cmd) > 0 {
		return "command"
	}
	return ""
}

// goArch turns uname -m into Go's architecture names, as sonde's own
// recordings store them.
func goArch(m string) string {
	switch {
	case m == "x86_64":
		return "amd64"
	case m == "aarch64" || m == "arm64":
		return "arm64"
	case strings.HasPrefix(m, "armv"):
		return "arm"
	case m == "i386" || m == "i686":
		return "386"
	}
	return m
}
