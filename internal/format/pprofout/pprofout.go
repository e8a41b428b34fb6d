// Package pprofout converts a profile to the pprof format (google/pprof's
// profile package) so `go tool pprof` and other pprof readers can load it.
package pprofout

import (
	"fmt"
	"io"
	"time"

	"github.com/google/pprof/profile"

	"github.com/sonde-dev/sonde/internal/model"
)

// Convert builds a pprof profile with two values per sample: the sample
// count and the event count (ns for cpu-clock).
func Convert(p *model.Profile) (*profile.Profile, error) {
	unit := "count"
	if p.Meta.Event == "cpu-clock" || p.Meta.Event == "task-clock" || len(p.Meta.Event) > 9 && p.Meta.Event[:9] == "cpu-clock" {
		unit = "nanoseconds"
	}
	out := &profile.Profile{
		SampleType:    []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: p.Meta.Event, Unit: unit}},
		PeriodType:    &profile.ValueType{Type: p.Meta.Event, Unit: unit},
		Period:        int64(p.Meta.Period),
		TimeNanos:     p.Meta.StartUnixNS,
		DurationNanos: int64(p.Meta.DurationNS),
	}
	if p.Meta.Freq > 0 {
		out.Period = int64(time.Second) / int64(p.Meta.Freq)
	}
	maps := make([]*profile.Mapping, len(p.DSOs))
	for i, d := range p.DSOs {
		m := &profile.Mapping{ID: uint64(i + 1), File: d.Name, BuildID: d.BuildID, HasFunctions: true, HasFilenames: true, HasLineNumbers: true}
		maps[i] = m
		out.Mapping = append(out.Mapping, m)
	}
	funcs := make([]*profile.Function, len(p.Funcs))
	for i, f := range p.Funcs {
		fn := &profile.Function{ID: uint64(i + 1), Name: f.Name, SystemName: f.Name}
		funcs[i] = fn
		out.Function = append(out.Function, fn)
	}
	// Locations without a symbol get a synthetic function named like the
	// report names them, so pprof never shows a bare address.
	extra := map[string]*profile.Function{}
	locs := make([]*profile.Location, len(p.Locs))
	for i, l := range p.Locs {
		loc := &profile.Location{ID: uint64(i + 1), Address: l.Addr}
		if l.DSO >= 0 {
			loc.Mapping = maps[l.DSO]
		}
		var fn *profile.Function
		if l.Func >= 0 {
			fn = funcs[l.Func]
		} else {
			name := p.FrameName(int32(i))
			fn = extra[name]
			if fn == nil {
				fn = &profile.Function{ID: uint64(len(out.Function) + 1), Name: name, SystemName: name}
				extra[name] = fn
				out.Function = append(out.Function, fn)
			}
		}
		line := profile.Line{Function: fn}
		if l.File >= 0 {
			fn.Filename = p.Files[l.File]
			line.Line = int64(l.Line)
		}
		loc.Line = []profile.Line{line}
		locs[i] = loc
		out.Location = append(out.Location, loc)
	}
	type key struct{ thread, stack int32 }
	agg := map[key]*profile.Sample{}
	for _, s := range p.SampleGroups() {
		k := key{s.Thread, s.Stack}
		ps := agg[k]
		if ps == nil {
			st := p.Stacks[s.Stack]
			ps = &profile.Sample{Value: []int64{0, 0}, Location: make([]*profile.Location, len(st))}
			for j, id := range st {
				ps.Location[j] = locs[id]
			}
			t := p.Threads[s.Thread]
			ps.Label = map[string][]string{"comm": {t.Comm}}
			ps.NumLabel = map[string][]int64{"pid": {int64(t.Pid)}, "tid": {int64(t.Tid)}}
			agg[k] = ps
			out.Sample = append(out.Sample, ps)
		}
		ps.Value[0] += int64(s.Count)
		ps.Value[1] += int64(s.Period)
	}
	if p.Meta.Lost > 0 {
		out.Comments = append(out.Comments, fmt.Sprintf("lost samples: %d", p.Meta.Lost))
	}
	if err := out.CheckValid(); err != nil {
		return nil, fmt.Errorf("building pprof profile: %w", err)
	}
	return out, nil
}

// Write writes p as gzipped pprof protobuf.
func Write(w io.Writer, p *model.Profile) error {
	pp, err := Convert(p)
	if err != nil {
		return err
	}
	return pp.Write(w)
}
