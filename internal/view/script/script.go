// Package script prints every sample and event of a recording in time
// order, as perf script does, or as JSON Lines.
package script

import (
	"fmt"
	"io"
	"strings"

	"github.com/sonde-dev/sonde/internal/collect/tracefs"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/model/jsonout"
)

// Fields are the columns script can print, in order.
var Fields = []string{"comm", "pid", "tid", "cpu", "time", "event", "period", "trace", "ip", "sym", "dso"}

// ParseFields checks a --fields list; empty means all.
func ParseFields(list []string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, f := range list {
		ok := false
		for _, v := range Fields {
			ok = ok || v == f
		}
		if !ok {
			return nil, fmt.Errorf("unknown field %q (valid: %s)", f, strings.Join(Fields, ","))
		}
		out[f] = true
	}
	if len(out) == 0 {
		for _, f := range Fields {
			out[f] = true
		}
	}
	return out, nil
}

// Event is one sample as JSON.
type Event struct {
	jsonout.Task
	CPU    *uint32           `json:"cpu,omitempty"`
	TimeNS *uint64           `json:"time_ns,omitempty"` // since boot (CLOCK_MONOTONIC)
	Event  string            `json:"event,omitempty"`
	Period *uint64           `json:"period,omitempty"`
	Trace  map[string]string `json:"fields,omitempty"` // tracepoint fields by name
	Stack  []Frame           `json:"stack,omitempty"`  // leaf first
}

// Frame is one stack frame.
type Frame struct {
	Sym    string `json:"sym"`
	DSO    string `json:"dso"`
	Kernel bool   `json:"kernel"`
	Addr   string `json:"addr,omitempty"`
}

// Write prints p's samples with the chosen fields, as text or JSON Lines.
func Write(w io.Writer, p *model.Profile, fields map[string]bool, asJSON bool) error {
	formats := tracefs.RecordedFields(&p.Meta)
	for _, s := range p.Samples {
		t := p.Threads[s.Thread]
		evName := p.Meta.Event
		if int(s.Event) < len(p.Meta.Events) {
			evName = p.Meta.Events[s.Event].Name
		}
		var trace [][2]string
		if fields["trace"] && int(s.Event) < len(formats) {
			for _, f := range formats[s.Event] {
				if !f.Common {
					trace = append(trace, [2]string{f.Name, f.String(s.Raw)})
				}
			}
		}
		stack := p.Stacks[s.Stack]
		if asJSON {
			if err := jsonout.Line(w, jsonEvent(p, s, t, evName, trace, stack, fields)); err != nil {
				return err
			}
			continue
		}
		var line strings.Builder
		if fields["comm"] {
			fmt.Fprintf(&line, "%16s", t.Comm)
		}
		switch {
		case fields["pid"] && fields["tid"]:
			fmt.Fprintf(&line, " %7d/%-7d", t.Pid, t.Tid)
		case fields["pid"]:
			fmt.Fprintf(&line, " %7d", t.Pid)
		case fields["tid"]:
			fmt.Fprintf(&line, " %7d", t.Tid)
		}
		if fields["cpu"] {
			fmt.Fprintf(&line, " [%03d]", s.CPU)
		}
		if fields["time"] {
			fmt.Fprintf(&line, " %d.%06d:", s.Time/1e9, s.Time%1e9/1e3)
		}
		if fields["period"] && len(trace) == 0 {
			fmt.Fprintf(&line, " %10d", s.Period)
		}
		if fields["event"] {
			fmt.Fprintf(&line, " %s:", evName)
		}
		for _, kv := range trace {
			fmt.Fprintf(&line, " %s=%s", kv[0], kv[1])
		}
		fmt.Fprintln(w, line.String())
		if !fields["sym"] && !fields["ip"] {
			continue
		}
		for _, loc := range stack {
			var fr strings.Builder
			fr.WriteString("\t")
			if fields["ip"] {
				fmt.Fprintf(&fr, "%16x ", p.Locs[loc].Addr)
			}
			if fields["sym"] {
				fr.WriteString(p.FrameName(loc))
			}
			if fields["dso"] {
				fmt.Fprintf(&fr, " (%s)", p.DSOName(loc))
			}
			fmt.Fprintln(w, fr.String())
		}
		if len(stack) > 0 {
			fmt.Fprintln(w)
		}
	}
	return nil
}

func jsonEvent(p *model.Profile, s model.Sample, t model.Thread, evName string, trace [][2]string, stack []int32, fields map[string]bool) Event {
	var e Event
	if fields["comm"] {
		e.Comm = t.Comm
	}
	if fields["pid"] {
		e.PID = int(t.Pid)
	}
	if fields["tid"] {
		e.TID = int(t.Tid)
	}
	if fields["cpu"] {
		e.CPU = &s.CPU
	}
	if fields["time"] {
		e.TimeNS = &s.Time
	}
	if fields["event"] {
		e.Event = evName
	}
	if fields["period"] {
		e.Period = &s.Period
	}
	if len(trace) > 0 {
		e.Trace = map[string]string{}
		for _, kv := range trace {
			e.Trace[kv[0]] = kv[1]
		}
	}
	if fields["sym"] || fields["ip"] {
		for _, loc := range stack {
			fr := Frame{Sym: p.FrameName(loc), DSO: p.DSOName(loc), Kernel: p.Kind(loc).IsKernel()}
			if fields["ip"] {
				fr.Addr = fmt.Sprintf("0x%x", p.Locs[loc].Addr)
			}
			e.Stack = append(e.Stack, fr)
		}
	}
	return e
}
