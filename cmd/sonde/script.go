package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/sonde-dev/sonde/internal/datafile"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/tracefs"
)

var scriptFieldNames = []string{"comm", "pid", "tid", "cpu", "time", "event", "period", "trace", "ip", "sym", "dso"}

func runScript(args []string) (int, error) {
	fs := newFlags("script", "[-i FILE] [--fields comm,tid,cpu,time,event,trace,ip,sym,dso] [--json]")
	input := fs.String("i", "sonde.data", "data file to read")
	fieldsFlag := fs.String("fields", "", "fields to print (default: all that the recording has)")
	asJSON := fs.Bool("json", false, "one JSON object per line")
	if err := parseFlags(fs, args); err != nil {
		return 2, err
	}
	fields := map[string]bool{}
	for _, f := range splitList(*fieldsFlag) {
		ok := false
		for _, v := range scriptFieldNames {
			ok = ok || v == f
		}
		if !ok {
			return 2, usageError{fmt.Sprintf("unknown field %q (valid: %s)", f, strings.Join(scriptFieldNames, ","))}
		}
		fields[f] = true
	}
	if len(fields) == 0 {
		for _, f := range scriptFieldNames {
			fields[f] = true
		}
	}
	p, err := datafile.ReadFile(*input)
	if err != nil {
		return 1, err
	}
	w := bufio.NewWriterSize(os.Stdout, 1<<16)
	defer w.Flush()
	formats := eventFields(p)
	enc := json.NewEncoder(w)
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
		if *asJSON {
			obj := map[string]any{}
			if fields["comm"] {
				obj["comm"] = t.Comm
			}
			if fields["pid"] {
				obj["pid"] = t.Pid
			}
			if fields["tid"] {
				obj["tid"] = t.Tid
			}
			if fields["cpu"] {
				obj["cpu"] = s.CPU
			}
			if fields["time"] {
				obj["time"] = float64(s.Time) / 1e9
			}
			if fields["event"] {
				obj["event"] = evName
			}
			if fields["period"] {
				obj["period"] = s.Period
			}
			if len(trace) > 0 {
				tf := map[string]string{}
				for _, kv := range trace {
					tf[kv[0]] = kv[1]
				}
				obj["fields"] = tf
			}
			if fields["sym"] || fields["ip"] {
				var frames []map[string]any
				for _, loc := range stack {
					fr := map[string]any{"sym": p.FrameName(loc), "dso": p.DSOName(loc), "kernel": p.Kind(loc).IsKernel()}
					if fields["ip"] {
						fr["addr"] = fmt.Sprintf("0x%x", p.Locs[loc].Addr)
					}
					frames = append(frames, fr)
				}
				obj["stack"] = frames
			}
			if err := enc.Encode(obj); err != nil {
				return 1, err
			}
			continue
		}
		var line strings.Builder
		if fields["comm"] {
			fmt.Fprintf(&line, "%16s", t.Comm)
		}
		if fields["pid"] || fields["tid"] {
			if fields["pid"] && fields["tid"] {
				fmt.Fprintf(&line, " %7d/%-7d", t.Pid, t.Tid)
			} else if fields["pid"] {
				fmt.Fprintf(&line, " %7d", t.Pid)
			} else {
				fmt.Fprintf(&line, " %7d", t.Tid)
			}
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
		if fields["sym"] || fields["ip"] {
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
	}
	if p.Meta.Lost > 0 {
		fmt.Fprintf(os.Stderr, "sonde: %d samples were lost while recording\n", p.Meta.Lost)
	}
	return 0, nil
}

// eventFields converts each recorded event's format for decoding.
func eventFields(p *model.Profile) [][]tracefs.Field {
	out := make([][]tracefs.Field, len(p.Meta.Events))
	for i, ev := range p.Meta.Events {
		for _, f := range ev.Fields {
			out[i] = append(out[i], tracefs.Field{Name: f.Name, Type: f.Type, Offset: int(f.Offset), Size: int(f.Size), Signed: f.Signed, Kind: tracefs.FieldKind(f.Kind), Common: strings.HasPrefix(f.Name, "common_")})
		}
	}
	return out
}
