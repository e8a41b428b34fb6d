// Package latency pairs a start event with an end event by key fields
// (dev,sector for block requests; a pid; a probe argument) and turns the
// time between them into distributions — seed 000's perf-script analysis of
// block_rq_insert/issue/complete as a built-in.
package latency

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/sonde-dev/sonde/internal/collect/tracefs"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/model/histogram"
)

// Options name the events and how to pair and split them.
type Options struct {
	Start, End string   // event names as recorded
	Key        []string // fields present in both events; empty pairs by thread
	Per        string   // "", "comm", "pid" or a field name (e.g. dev)
	Events     bool     // keep every pair
}

// Pair is one matched start/end.
type Pair struct {
	Key     string `json:"key"`
	Group   string `json:"group,omitempty"`
	StartNS uint64 `json:"start_ns"`
	Latency uint64 `json:"duration_ns"`
	Comm    string `json:"comm"`
	Pid     int32  `json:"pid"`
	Aux     string `json:"aux,omitempty"`
	// Before is a chain's start → mid time (pairbpf.Options.Mid; biosnoop
	// shows it as queued_ns), nil when its start was not seen.
	Before *uint64 `json:"-"`
}

// Result holds a distribution per group.
type Result struct {
	Groups    map[string]*histogram.Hist
	Pairs     []Pair
	Starts    int // start events seen
	Ends      int // end events seen
	Unmatched int // ends without a start (began before recording)
	Pending   int // starts still open at the end
}

// GroupNames returns the groups sorted by name.
func (r *Result) GroupNames() []string {
	var out []string
	for g := range r.Groups {
		out = append(out, g)
	}
	sort.Strings(out)
	return out
}

type open struct {
	time   uint64
	thread int32
	group  string
}

func fieldsOf(ev model.EventInfo) []tracefs.Field {
	var out []tracefs.Field
	for _, f := range ev.Fields {
		out = append(out, tracefs.Field{Name: f.Name, Type: f.Type, Offset: int(f.Offset), Size: int(f.Size), Signed: f.Signed, Kind: tracefs.FieldKind(f.Kind)})
	}
	return out
}

func pick(fields []tracefs.Field, names []string, ev string) ([]tracefs.Field, error) {
	var out []tracefs.Field
	for _, n := range names {
		found := false
		for _, f := range fields {
			if f.Name == n {
				out = append(out, f)
				found = true
				break
			}
		}
		if !found {
			var have []string
			for _, f := range fields {
				if !strings.HasPrefix(f.Name, "common_") {
					have = append(have, f.Name)
				}
			}
			return nil, fmt.Errorf("event %s has no field %q (fields: %s)", ev, n, strings.Join(have, ", "))
		}
	}
	return out, nil
}

// pairKey is what pairs a start with its end: the --key fields of the
// event (fields), or without --key the thread.
func pairKey(p *model.Profile, o Options, fields []tracefs.Field, s *model.Sample) string {
	if len(o.Key) == 0 {
		return strconv.Itoa(int(p.Threads[s.Thread].Tid))
	}
	return keyString(fields, s.Raw)
}

func keyString(fields []tracefs.Field, raw []byte) string {
	var b strings.Builder
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(f.String(raw))
	}
	return b.String()
}

// Compute pairs the samples of p (in time order).
func Compute(p *model.Profile, o Options) (*Result, error) {
	si, ei := -1, -1
	var names []string
	for i, ev := range p.Meta.Events {
		names = append(names, ev.Name)
		if ev.Name == o.Start {
			si = i
		}
		if ev.Name == o.End {
			ei = i
		}
	}
	if si < 0 || ei < 0 {
		return nil, fmt.Errorf("the recording has no %q or %q (it has: %s)", o.Start, o.End, strings.Join(names, ", "))
	}
	sf, ef := fieldsOf(p.Meta.Events[si]), fieldsOf(p.Meta.Events[ei])
	skey, err := pick(sf, o.Key, o.Start)
	if err != nil {
		return nil, err
	}
	ekey, err := pick(ef, o.Key, o.End)
	if err != nil {
		return nil, err
	}
	var perField []tracefs.Field
	switch o.Per {
	case "", "comm", "pid":
	default:
		if perField, err = pick(sf, []string{o.Per}, o.Start); err != nil {
			return nil, err
		}
	}
	res := &Result{Groups: map[string]*histogram.Hist{}}
	pending := map[string]open{}
	samples := append([]model.Sample(nil), p.Samples...)
	sort.SliceStable(samples, func(i, j int) bool { return samples[i].Time < samples[j].Time })
	for _, s := range samples {
		ev := int(s.Event)
		if ev != si && ev != ei {
			continue
		}
		if ev == si {
			res.Starts++
			k := pairKey(p, o, skey, &s)
			g := ""
			t := p.Threads[s.Thread]
			switch o.Per {
			case "comm":
				g = t.Comm
			case "pid":
				g = fmt.Sprintf("%d (%s)", t.Pid, t.Comm)
			case "":
			default:
				g = o.Per + " " + perField[0].String(s.Raw)
			}
			pending[k] = open{time: s.Time, thread: s.Thread, group: g}
			if si != ei {
				continue
			}
		}
		if ev == ei {
			res.Ends++
			k := pairKey(p, o, ekey, &s)
			st, ok := pending[k]
			if !ok || st.time > s.Time {
				res.Unmatched++
				continue
			}
			delete(pending, k)
			lat := s.Time - st.time
			h := res.Groups[st.group]
			if h == nil {
				h = &histogram.Hist{}
				res.Groups[st.group] = h
			}
			h.Add(lat)
			if o.Events {
				t := p.Threads[st.thread]
				res.Pairs = append(res.Pairs, Pair{Key: k, Group: st.group, StartNS: st.time, Latency: lat, Comm: t.Comm, Pid: t.Pid})
			}
		}
	}
	res.Pending = len(pending)
	return res, nil
}
