package web

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/view/flamegraph"
)

// Frame kinds as the UI colours them: flamegraph's.
const (
	kindKernel = uint8(flamegraph.KindKernel)
	kindOther  = uint8(flamegraph.KindOther) // process names, unknown memory
)

// input is one served recording with the lookups every request needs,
// computed once: a frame's name, kind and object per location.
type input struct {
	name    string // base name of the file: the UI never sees a path
	p       *model.Profile
	groups  []model.SampleGroup // samples by (thread, stack, cpu, event)
	samples []sample            // in the recorded order
	tmin    uint64              // first and last sample time
	tmax    uint64

	syms     []string // interned frame and process names
	symKind  []uint8
	symIndex map[string]int32 // name with its kind byte appended
	locSym   []int32
	locKind  []uint8
	locDSO   []string
	commSym  []int32 // per thread
}

// sample is a recorded sample. The server keeps the model's own: a
// compact copy would halve their memory once loaded, but both would live
// while copying, and that peak is the server's largest.
type sample = model.Sample

func newInput(name string, p *model.Profile) *input {
	in := &input{name: name, p: p, groups: p.SampleGroups(), samples: p.Samples, symIndex: map[string]int32{}}
	in.tmin, in.tmax = math.MaxUint64, 0
	for i := range p.Samples {
		t := p.Samples[i].Time
		in.tmin, in.tmax = min(in.tmin, t), max(in.tmax, t)
	}
	if in.tmin > in.tmax {
		in.tmin, in.tmax = 0, 0
	}
	in.locSym = make([]int32, len(p.Locs))
	in.locKind = make([]uint8, len(p.Locs))
	in.locDSO = make([]string, len(p.Locs))
	for i := range p.Locs {
		loc := int32(i)
		k := uint8(flamegraph.KindOf(p, loc))
		in.locKind[i] = k
		in.locDSO[i] = p.DSOName(loc)
		in.locSym[i] = in.intern(p.FrameName(loc), k)
	}
	in.commSym = make([]int32, len(p.Threads))
	for i, t := range p.Threads {
		in.commSym[i] = in.intern(t.Comm, kindOther)
	}
	return in
}

func (in *input) intern(name string, k uint8) int32 {
	key := name + string(rune('0'+k))
	if id, ok := in.symIndex[key]; ok {
		return id
	}
	id := int32(len(in.syms))
	in.syms = append(in.syms, name)
	in.symKind = append(in.symKind, k)
	in.symIndex[key] = id
	return id
}

// filter is the selection every view shares, parsed from the request's
// query (the UI keeps the same keys in its URL hash).
type filter struct {
	comms            map[string]bool
	pids, tids, cpus map[int64]bool
	event            string // recorded event name, "" for all
	frames           string // "", "user" or "kernel"
	hasTime          bool
	t0, t1           uint64 // ns since the first sample, t0 <= t < t1
	focus            string // keep stacks through this function, from it down
	merge            map[string]bool
	hide             map[string]bool // object base names
}

func parseFilter(q url.Values) (*filter, error) {
	f := &filter{event: q.Get("event"), frames: q.Get("frames"), focus: q.Get("focus")}
	if f.frames != "" && f.frames != "user" && f.frames != "kernel" {
		return nil, fmt.Errorf("frames=%q: want user or kernel", f.frames)
	}
	f.comms = set(q.Get("comm"))
	f.merge = set(q.Get("merge"))
	f.hide = set(q.Get("hide"))
	var err error
	for _, x := range []struct {
		key string
		dst *map[int64]bool
	}{{"pid", &f.pids}, {"tid", &f.tids}, {"cpu", &f.cpus}} {
		if *x.dst, err = intSet(q.Get(x.key)); err != nil {
			return nil, fmt.Errorf("%s: %w", x.key, err)
		}
	}
	if s0, s1 := q.Get("t0"), q.Get("t1"); s0 != "" || s1 != "" {
		f.hasTime = true
		if f.t0, err = strconv.ParseUint(s0, 10, 64); err != nil {
			return nil, fmt.Errorf("t0: want nanoseconds: %w", err)
		}
		if f.t1, err = strconv.ParseUint(s1, 10, 64); err != nil || f.t1 <= f.t0 {
			return nil, fmt.Errorf("t1: want nanoseconds after t0")
		}
	}
	return f, nil
}

func set(s string) map[string]bool {
	if s == "" {
		return nil
	}
	m := map[string]bool{}
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			m[v] = true
		}
	}
	return m
}

func intSet(s string) (map[int64]bool, error) {
	if s == "" {
		return nil, nil
	}
	m := map[int64]bool{}
	for _, v := range strings.Split(s, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", v)
		}
		m[n] = true
	}
	return m, nil
}

// threadsOK says per thread whether the filter keeps it.
func (in *input) threadsOK(f *filter) []bool {
	ok := make([]bool, len(in.p.Threads))
	for i, t := range in.p.Threads {
		ok[i] = (f.comms == nil || f.comms[t.Comm]) && (f.pids == nil || f.pids[int64(t.Pid)]) &&
			(f.tids == nil || f.tids[int64(t.Tid)])
	}
	return ok
}

// eventIndex is the filter's event as an index into the recording's
// events: -1 for all, -2 for one it does not have.
func (in *input) eventIndex(f *filter) int {
	if f.event == "" {
		return -1
	}
	for i, e := range in.p.Meta.Events {
		if e.Name == f.event {
			return i
		}
	}
	if len(in.p.Meta.Events) == 0 && f.event == in.p.Meta.Event {
		return -1
	}
	return -2
}

// each calls fn for the selected samples, grouped where it can: without a
// time range the precomputed groups, else one call per sample. ignoreTime
// is for the time view, which shows the whole recording around a selection.
func (in *input) each(f *filter, ignoreTime bool, fn func(thread, stack int32, count, period uint64)) {
	ok := in.threadsOK(f)
	ev := in.eventIndex(f)
	if ev == -2 {
		return
	}
	keep := func(thread int32, cpu uint32, event uint16) bool {
		return ok[thread] && (f.cpus == nil || f.cpus[int64(cpu)]) && (ev < 0 || int(event) == ev)
	}
	if !f.hasTime || ignoreTime || len(in.samples) == 0 {
		for i := range in.groups {
			g := &in.groups[i]
			if keep(g.Thread, g.CPU, g.Event) {
				fn(g.Thread, g.Stack, g.Count, g.Period)
			}
		}
		return
	}
	lo, hi := in.span(f)
	for i := range in.samples {
		s := &in.samples[i]
		if s.Time >= lo && s.Time < hi && keep(s.Thread, s.CPU, s.Event) {
			fn(s.Thread, s.Stack, 1, s.Period)
		}
	}
}

// span is the filter's time range in sample times, clamped to the
// recording.
func (in *input) span(f *filter) (lo, hi uint64) {
	d := in.tmax - in.tmin + 1
	return in.tmin + min(f.t0, d), in.tmin + min(f.t1, d)
}

// path appends to buf the frames of one sample, root first (the process
// name, then outermost caller to leaf), after the filter's frame kinds and
// transforms. ok is false when focus drops the stack.
func (in *input) path(f *filter, thread, stack int32, buf []int32) ([]int32, bool) {
	buf = append(buf[:0], in.commSym[thread])
	st := in.p.Stacks[stack]
	for i := len(st) - 1; i >= 0; i-- {
		loc := st[i]
		k := in.locKind[loc]
		if (f.frames == "user" && k == kindKernel) || (f.frames == "kernel" && k != kindKernel) {
			continue
		}
		if f.hide != nil && f.hide[in.locDSO[loc]] {
			continue
		}
		s := in.locSym[loc]
		if f.merge != nil && f.merge[in.syms[s]] {
			continue
		}
		buf = append(buf, s)
	}
	if f.focus != "" {
		i := slices.IndexFunc(buf, func(s int32) bool { return in.syms[s] == f.focus })
		if i < 0 {
			return buf, false
		}
		buf = append(buf[:0], buf[i:]...)
	}
	return buf, true
}

// paths calls fn with the transformed path of the selected samples, once
// per (process name, stack): a path depends on nothing else, and groups
// differing only in thread, CPU or event would walk the same frames again.
func (in *input) paths(f *filter, fn func(path []int32, count, period uint64)) {
	type key struct{ comm, stack int32 }
	type weight struct {
		thread        int32
		count, period uint64
	}
	agg := map[key]*weight{}
	var keys []key
	in.each(f, false, func(thread, stack int32, count, period uint64) {
		k := key{in.commSym[thread], stack}
		w := agg[k]
		if w == nil {
			w = &weight{thread: thread}
			agg[k] = w
			keys = append(keys, k)
		}
		w.count += count
		w.period += period
	})
	var buf []int32
	for _, k := range keys {
		w := agg[k]
		var ok bool
		if buf, ok = in.path(f, w.thread, k.stack, buf); ok {
			fn(buf, w.count, w.period)
		}
	}
}
