package web

import (
	"bufio"
	"math/bits"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/sonde-dev/sonde/internal/collect/tracefs"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/view/annotate"
	"github.com/sonde-dev/sonde/internal/view/report"
)

// eachSample calls fn for every selected sample one by one (the views that
// need times or tracepoint payloads); ignoreTime keeps samples outside the
// filter's time range.
func (in *input) eachSample(f *filter, ignoreTime bool, fn func(i int32, s *sample)) {
	ok := in.threadsOK(f)
	ev := in.eventIndex(f)
	if ev == -2 {
		return
	}
	lo, hi := uint64(0), ^uint64(0)
	if f.hasTime && !ignoreTime {
		lo, hi = in.span(f)
	}
	for i := range in.samples {
		s := &in.samples[i]
		if s.Time >= lo && s.Time < hi && ok[s.Thread] && (f.cpus == nil || f.cpus[int64(s.CPU)]) && (ev < 0 || int(s.Event) == ev) {
			fn(int32(i), s)
		}
	}
}

// Lane is one thread's samples over time.
type Lane struct {
	Pid     int32    `json:"pid"`
	Tid     int32    `json:"tid"`
	Comm    string   `json:"comm"`
	Samples uint64   `json:"samples"`
	Counts  []uint64 `json:"counts"` // samples per bin
}

// TimeDoc is the time view: a lane per thread, busiest first, the
// recording cut into Bins equal bins from its first sample.
type TimeDoc struct {
	DurationNS uint64 `json:"duration_ns"`
	Bins       int    `json:"bins"`
	Lanes      []Lane `json:"lanes"`
	Omitted    int    `json:"omitted,omitempty"` // quieter threads left out
}

const (
	timeBins = 400
	maxLanes = 64
)

func (in *input) timeline(f *filter) *TimeDoc {
	d := &TimeDoc{DurationNS: in.tmax - in.tmin + 1, Bins: timeBins, Lanes: []Lane{}}
	lanes := map[int32]*Lane{}
	in.eachSample(f, true, func(_ int32, s *sample) {
		l := lanes[s.Thread]
		if l == nil {
			t := in.p.Threads[s.Thread]
			l = &Lane{Pid: t.Pid, Tid: t.Tid, Comm: t.Comm, Counts: make([]uint64, timeBins)}
			lanes[s.Thread] = l
		}
		l.Samples++
		l.Counts[(s.Time-in.tmin)*timeBins/d.DurationNS]++
	})
	for _, l := range lanes {
		d.Lanes = append(d.Lanes, *l)
	}
	sort.Slice(d.Lanes, func(i, j int) bool {
		a, b := d.Lanes[i], d.Lanes[j]
		if a.Samples != b.Samples {
			return a.Samples > b.Samples
		}
		return a.Tid < b.Tid
	})
	if len(d.Lanes) > maxLanes {
		d.Omitted = len(d.Lanes) - maxLanes
		d.Lanes = d.Lanes[:maxLanes]
	}
	return d
}

// SourceLine is one line of a function's source with its samples.
type SourceLine struct {
	Line    int     `json:"line"`
	Text    string  `json:"text"`
	Samples uint64  `json:"samples"`
	Percent float64 `json:"percent"` // of the function's samples
}

// SourceDoc is annotate's view of one function in the selection, with the
// text of its hottest file's lines when that file is at hand.
type SourceDoc struct {
	annotate.Func
	File   string       `json:"file,omitempty"`
	Source []SourceLine `json:"source,omitempty"`
	// Reason says why there is nothing to show (no code for the function).
	Reason string `json:"reason,omitempty"`
}

// maxSourceBytes bounds the source file read for the panel.
const maxSourceBytes = 8 << 20

func (in *input) source(f *filter, fn string) *SourceDoc {
	// annotate aggregates the groups it is given: hand it the selection.
	sel := *in.p
	sel.Groups = []model.SampleGroup{}
	in.each(f, false, func(thread, stack int32, count, period uint64) {
		sel.Groups = append(sel.Groups, model.SampleGroup{Thread: thread, Stack: stack, Count: count, Period: period})
	})
	sel.Files = append([]string(nil), in.p.Files...) // annotate may append the binary's files
	funcs, err := annotate.Build(&sel, annotate.Options{Symbol: fn})
	if err != nil {
		return &SourceDoc{Func: annotate.Func{Name: fn}, Reason: err.Error()}
	}
	d := &SourceDoc{Func: funcs[0]}
	lines := map[int]uint64{}
	lo, hi := 0, 0
	if len(d.HotLines) > 0 {
		d.File = d.HotLines[0].File
	} else {
		for _, i := range d.Insns {
			if i.File != "" {
				d.File = i.File
				break
			}
		}
	}
	for _, i := range d.Insns {
		if i.File != d.File || i.Line <= 0 {
			continue
		}
		lines[i.Line] += i.Samples
		if lo == 0 || i.Line < lo {
			lo = i.Line
		}
		hi = max(hi, i.Line)
	}
	if d.File == "" {
		return d
	}
	text := readLines(d.File, max(lo-3, 1), hi+2)
	for n := max(lo-3, 1); n <= hi+2; n++ {
		t, ok := text[n]
		if !ok && lines[n] == 0 {
			continue
		}
		sl := SourceLine{Line: n, Text: t, Samples: lines[n]}
		if d.Samples > 0 {
			sl.Percent = 100 * float64(sl.Samples) / float64(d.Samples)
		}
		d.Source = append(d.Source, sl)
	}
	return d
}

// readLines reads lines lo..hi of a source file the recording names, when
// it is a regular file on this machine; nil otherwise.
func readLines(path string, lo, hi int) map[int]string {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() || st.Size() > maxSourceBytes {
		return nil
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer fh.Close()
	out := map[int]string{}
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan() && n <= hi; n++ {
		if n >= lo {
			out[n] = strings.ReplaceAll(sc.Text(), "\t", "    ")
		}
	}
	return out
}

// Bucket is one log2 bucket: values in [lo, hi].
type Bucket struct {
	Lo    uint64 `json:"lo"`
	Hi    uint64 `json:"hi"`
	Count uint64 `json:"count"`
}

// Histogram is a distribution the recording carries.
type Histogram struct {
	Name    string   `json:"name"`
	Unit    string   `json:"unit,omitempty"`
	Buckets []Bucket `json:"buckets"`
}

// log2Hist counts values in power-of-two buckets (0 has its own).
type log2Hist [65]uint64

func (h *log2Hist) add(v uint64) { h[bits.Len64(v)]++ }

func (h *log2Hist) buckets() []Bucket {
	first, last := -1, -1
	for i, c := range h {
		if c > 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	var out []Bucket
	for i := first; i >= 0 && i <= last; i++ {
		b := Bucket{Count: h[i]}
		if i > 0 {
			b.Lo = 1 << (i - 1)
			b.Hi = b.Lo<<1 - 1
		}
		out = append(out, b)
	}
	return out
}

// maxFieldHists bounds the tracepoint fields drawn as distributions.
const maxFieldHists = 24

// HistDoc holds the selection's distributions: blocked time per off-CPU
// sample, and the numeric fields of recorded tracepoints.
type HistDoc struct {
	Histograms []Histogram `json:"histograms"`
}

func (in *input) histograms(f *filter) *HistDoc {
	d := &HistDoc{Histograms: []Histogram{}}
	var blocked log2Hist
	fields := tracefs.RecordedFields(&in.p.Meta)
	type fh struct {
		ev, field int
		h         log2Hist
	}
	var fhs []*fh
	for e, fs := range fields {
		for i, fd := range fs {
			if !fd.Common && fd.Kind != tracefs.KindString && fd.Kind != tracefs.KindDataLoc && fd.Kind != tracefs.KindArray && len(fhs) < maxFieldHists {
				fhs = append(fhs, &fh{ev: e, field: i})
			}
		}
	}
	ns := in.p.Meta.Unit == "ns"
	in.eachSample(f, false, func(i int32, s *sample) {
		if ns {
			blocked.add(s.Period)
		}
		for _, h := range fhs {
			if int(s.Event) == h.ev {
				if _, u, ok := fields[h.ev][h.field].Int(in.samples[i].Raw); ok {
					h.h.add(u)
				}
			}
		}
	})
	if ns {
		d.Histograms = append(d.Histograms, Histogram{Name: "blocked time per sample", Unit: "ns", Buckets: blocked.buckets()})
	}
	for _, h := range fhs {
		if b := h.h.buckets(); len(b) > 0 {
			d.Histograms = append(d.Histograms, Histogram{Name: in.p.Meta.Events[h.ev].Name + ": " + fields[h.ev][h.field].Name, Buckets: b})
		}
	}
	return d
}

// FieldTable is the recorded events of one tracepoint with their fields.
type FieldTable struct {
	Event   string     `json:"event"`
	Columns []string   `json:"columns"`
	Rows    [][]string `json:"rows"`
	Count   uint64     `json:"count"` // events in the selection; Rows holds the first maxFieldRows
}

// FieldsDoc is the fields view.
type FieldsDoc struct {
	Tables []FieldTable `json:"tables"`
}

const maxFieldRows = 1000

func (in *input) fieldTables(f *filter) *FieldsDoc {
	fields := tracefs.RecordedFields(&in.p.Meta)
	d := &FieldsDoc{Tables: []FieldTable{}}
	idx := make([]int, len(fields))
	for e, fs := range fields {
		idx[e] = -1
		if len(fs) == 0 {
			continue
		}
		t := FieldTable{Event: in.p.Meta.Events[e].Name, Columns: []string{"time_ns", "comm", "pid", "tid", "cpu"}, Rows: [][]string{}}
		for _, fd := range fs {
			if !fd.Common {
				t.Columns = append(t.Columns, fd.Name)
			}
		}
		idx[e] = len(d.Tables)
		d.Tables = append(d.Tables, t)
	}
	in.eachSample(f, false, func(i int32, s *sample) {
		if int(s.Event) >= len(idx) || idx[s.Event] < 0 {
			return
		}
		t := &d.Tables[idx[s.Event]]
		t.Count++
		if len(t.Rows) >= maxFieldRows {
			return
		}
		th := in.p.Threads[s.Thread]
		row := []string{strconv.FormatUint(s.Time-in.tmin, 10), th.Comm, strconv.Itoa(int(th.Pid)), strconv.Itoa(int(th.Tid)), strconv.Itoa(int(s.CPU))}
		for _, fd := range fields[s.Event] {
			if !fd.Common {
				row = append(row, fd.String(in.samples[i].Raw))
			}
		}
		t.Rows = append(t.Rows, row)
	})
	return d
}

// ThreadDoc is one recorded thread.
type ThreadDoc struct {
	Pid  int32  `json:"pid"`
	Tid  int32  `json:"tid"`
	Comm string `json:"comm"`
}

// InputDoc describes one served recording; the UI names inputs by their
// index in Inputs.
type InputDoc struct {
	Name      string           `json:"name"`
	Recording report.Recording `json:"recording"`
	Events    []string         `json:"events"`
	Samples   uint64           `json:"samples"`
	Threads   []ThreadDoc      `json:"threads"`
	CPUs      []uint32         `json:"cpus"`
	DSOs      []string         `json:"dsos"`
	Timed     bool             `json:"timed"`  // samples carry times: the time view works
	Fields    bool             `json:"fields"` // tracepoint fields were recorded
}

// MetaDoc lists the served inputs.
type MetaDoc struct {
	Inputs []InputDoc `json:"inputs"`
}

func (in *input) meta() InputDoc {
	m := in.p.Meta
	d := InputDoc{Name: in.name, Recording: report.RecordingOf(m), Samples: in.p.SampleCount(), Timed: len(in.samples) > 0,
		Events: []string{}, Threads: []ThreadDoc{}}
	for _, e := range m.Events {
		d.Events = append(d.Events, e.Name)
		d.Fields = d.Fields || len(e.Fields) > 0
	}
	for _, t := range in.p.Threads {
		d.Threads = append(d.Threads, ThreadDoc{Pid: t.Pid, Tid: t.Tid, Comm: t.Comm})
	}
	cpus := map[uint32]bool{}
	for _, g := range in.groups {
		cpus[g.CPU] = true
	}
	for c := range cpus {
		d.CPUs = append(d.CPUs, c)
	}
	sort.Slice(d.CPUs, func(i, j int) bool { return d.CPUs[i] < d.CPUs[j] })
	dsos := map[string]bool{}
	for _, x := range in.p.DSOs {
		if n := model.BaseName(x.Name); !dsos[n] {
			dsos[n] = true
			d.DSOs = append(d.DSOs, n)
		}
	}
	sort.Strings(d.DSOs)
	return d
}
