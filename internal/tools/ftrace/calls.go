package ftrace

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/sonde-dev/sonde/internal/model"
)

// A recording is a model.Profile in sonde's data file: one sample per
// completed call (Time: entry, Period: duration in ns, Stack: the
// function's one-frame stack, Raw: depth, flags, arguments and return
// value), so the file survives a kill chunk by chunk like `record`'s, and
// the generic views (report, flamegraph) read it as time per function.

// EventName is the one event of an ftrace recording; its Kind names the
// mechanism that made the calls (uprobe_multi, uprobe, preload).
const EventName = "ftrace:call"

// Call flags (in Raw).
const (
	flagRet        = 1 // Ret holds the return value
	flagUnfinished = 2 // still running when the recording ended: Dur is up to then
)

// Call is one call of a traced function.
type Call struct {
	Thread     int32  // index into Profile.Threads
	Fn         int32  // index into Profile.Funcs
	Start, Dur uint64 // ns, CLOCK_MONOTONIC
	Depth      int
	Args       []uint64
	Ret        uint64
	HasRet     bool
	Unfinished bool
}

// End is when the call returned.
func (c *Call) End() uint64 { return c.Start + c.Dur }

func encodeRaw(c *Call) []byte {
	b := make([]byte, 0, 16+8*len(c.Args))
	b = binary.AppendUvarint(b, uint64(c.Depth))
	var fl uint64
	if c.HasRet {
		fl |= flagRet
	}
	if c.Unfinished {
		fl |= flagUnfinished
	}
	b = binary.AppendUvarint(b, fl)
	b = binary.AppendUvarint(b, uint64(len(c.Args)))
	for _, a := range c.Args {
		b = binary.AppendUvarint(b, a)
	}
	if c.HasRet {
		b = binary.AppendUvarint(b, c.Ret)
	}
	return b
}

func decodeRaw(c *Call, b []byte) error {
	next := func() (uint64, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	d, ok1 := next()
	fl, ok2 := next()
	na, ok3 := next()
	if !ok1 || !ok2 || !ok3 || na > 6 || d > 1<<20 {
		return fmt.Errorf("bad call record")
	}
	c.Depth = int(d)
	c.HasRet, c.Unfinished = fl&flagRet != 0, fl&flagUnfinished != 0
	for i := uint64(0); i < na; i++ {
		v, ok := next()
		if !ok {
			return fmt.Errorf("bad call record")
		}
		c.Args = append(c.Args, v)
	}
	if c.HasRet {
		v, ok := next()
		if !ok {
			return fmt.Errorf("bad call record")
		}
		c.Ret = v
	}
	return nil
}

// Sample is c as a data-file sample.
func (c *Call) Sample() model.Sample {
	return model.Sample{Time: c.Start, Thread: c.Thread, Stack: c.Fn, Period: c.Dur, Raw: encodeRaw(c)}
}

// Trace is a recording read back: its calls per thread, by start time
// (a caller before its callees).
type Trace struct {
	P     *model.Profile
	Calls []Call
}

// Mechanism says what made the calls.
func (t *Trace) Mechanism() string {
	if len(t.P.Meta.Events) > 0 {
		return t.P.Meta.Events[0].Kind
	}
	return ""
}

// FuncName is the name of function i.
func (t *Trace) FuncName(i int32) string {
	if i < 0 || int(i) >= len(t.P.Funcs) {
		return fmt.Sprintf("?%d", i)
	}
	return t.P.Funcs[i].Name
}

// FromProfile reads the calls of an ftrace recording.
func FromProfile(p *model.Profile) (*Trace, error) {
	if len(p.Meta.Events) == 0 || p.Meta.Events[0].Name != EventName {
		return nil, fmt.Errorf("not an ftrace recording (record one with sonde ftrace record)")
	}
	t := &Trace{P: p, Calls: make([]Call, 0, len(p.Samples))}
	for i := range p.Samples {
		s := &p.Samples[i]
		if s.Stack < 0 || int(s.Stack) >= len(p.Funcs) || s.Thread < 0 || int(s.Thread) >= len(p.Threads) {
			return nil, fmt.Errorf("call %d: function or thread out of range", i)
		}
		c := Call{Thread: s.Thread, Fn: s.Stack, Start: s.Time, Dur: s.Period}
		if err := decodeRaw(&c, s.Raw); err != nil {
			return nil, fmt.Errorf("call %d: %w", i, err)
		}
		t.Calls = append(t.Calls, c)
	}
	sortCalls(t.Calls)
	return t, nil
}

// sortCalls orders calls by thread, then start, a caller before a callee
// that started in the same nanosecond.
func sortCalls(cs []Call) {
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := &cs[i], &cs[j]
		if a.Thread != b.Thread {
			return a.Thread < b.Thread
		}
		if a.Start != b.Start {
			return a.Start < b.Start
		}
		return a.Depth < b.Depth
	})
}

// NewProfile starts the profile of a recording of fs made by mechanism.
func NewProfile(fs []Func, mechanism, filter string) *model.Profile {
	p := &model.Profile{Meta: model.Meta{Event: EventName, Unit: "ns",
		Events: []model.EventInfo{{Name: EventName, Kind: mechanism, Filter: filter}}}}
	dso := map[string]int32{}
	for i, f := range fs {
		d, ok := dso[f.Binary]
		if !ok {
			d = int32(len(p.DSOs))
			dso[f.Binary] = d
			p.DSOs = append(p.DSOs, model.DSO{Name: f.Binary})
		}
		p.Funcs = append(p.Funcs, model.Func{Name: f.Name, DSO: d, Start: f.Addr, Size: f.Size})
		p.Locs = append(p.Locs, model.Loc{DSO: d, Addr: f.Addr, Func: int32(i), File: -1})
		p.Stacks = append(p.Stacks, []int32{int32(i)})
	}
	return p
}
