// Package events turns what users type after -e into events perf can open:
// generic software/hardware events with modifiers, tracepoints and their
// globs (block:*), and probe events. Unknown names get the nearest ones.
package events

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sonde-dev/sonde/internal/collect/perf"
	"github.com/sonde-dev/sonde/internal/collect/probe"
	"github.com/sonde-dev/sonde/internal/collect/tracefs"
)

// Spec is one resolved event.
type Spec struct {
	perf.Event
	Format *tracefs.Format // tracepoints only
}

// Tracepoint reports whether the spec is a tracepoint.
func (s Spec) Tracepoint() bool { return s.Def.Kind == perf.KindTracepoint }

// Split splits a -e list on commas that are not inside braces or quotes.
func Split(list string) []string {
	var out []string
	depth, start := 0, 0
	var quote rune
	for i, c := range list {
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '{' || c == '(':
			depth++
		case c == '}' || c == ')':
			depth--
		case c == ',' && depth == 0:
			out = append(out, strings.TrimSpace(list[start:i]))
			start = i + 1
		}
	}
	if s := strings.TrimSpace(list[start:]); s != "" {
		out = append(out, s)
	}
	return out
}

// Resolve resolves each -e argument (each may be a comma list).
func Resolve(args []string) ([]Spec, error) {
	var out []Spec
	var tps []string
	for _, a := range args {
		for _, name := range Split(a) {
			if strings.HasPrefix(name, "u:") {
				s, err := inlineProbe(name)
				if err != nil {
					return nil, err
				}
				out = append(out, s)
				continue
			}
			if tracefs.IsTracepointSpec(name) {
				if _, err := perf.ParseEvent(name); err == nil {
					// A generic event with modifiers, e.g. cpu-clock:u.
					ev, _ := perf.ParseEvent(name)
					out = append(out, Spec{Event: ev})
					continue
				}
				if tps == nil {
					var err error
					if tps, err = tracefs.Events(); err != nil {
						return nil, err
					}
				}
				matches, err := tracefs.Glob(name, tps)
				if err != nil {
					return nil, fmt.Errorf("unknown event %q (nearest: %s)", name, strings.Join(nearestTracepoints(name, tps), ", "))
				}
				for _, m := range matches {
					s, err := Tracepoint(m)
					if err != nil {
						return nil, err
					}
					out = append(out, s)
				}
				continue
			}
			ev, err := perf.ParseEvent(name)
			if err != nil {
				if strings.HasPrefix(err.Error(), "unknown event") {
					if tps == nil {
						tps, _ = tracefs.Events()
					}
					return nil, fmt.Errorf("unknown event %q (nearest: %s)", name, strings.Join(perf.NearestOf(name, append(perf.Names(), tps...), 3), ", "))
				}
				return nil, err
			}
			out = append(out, Spec{Event: ev})
		}
	}
	return out, nil
}

// Tracepoint resolves one exact "subsys:name".
func Tracepoint(name string) (Spec, error) {
	id, err := tracefs.ID(name)
	if err != nil {
		return Spec{}, err
	}
	f, err := tracefs.ReadFormat(name)
	if err != nil {
		return Spec{}, err
	}
	return Spec{
		Event:  perf.Event{Def: perf.EventDef{Name: name, Kind: perf.KindTracepoint, Type: unix.PERF_TYPE_TRACEPOINT, Config: id}},
		Format: f,
	}, nil
}

// nearestTracepoints suggests names for a tracepoint spec that matched
// nothing: the nearest subsystems when the subsystem is wrong, else the
// nearest events inside it.
func nearestTracepoints(spec string, all []string) []string {
	sys, name, _ := strings.Cut(spec, ":")
	subs := map[string]bool{}
	var subList, inSys []string
	for _, e := range all {
		s, _, _ := strings.Cut(e, ":")
		if !subs[s] {
			subs[s] = true
			subList = append(subList, s)
		}
		if s == sys {
			inSys = append(inSys, e)
		}
	}
	if !subs[sys] {
		var out []string
		for _, s := range perf.NearestOf(sys, subList, 3) {
			if strings.ContainsAny(name, "*?[") {
				out = append(out, s+":"+name)
			} else {
				out = append(out, s+":*")
			}
		}
		return out
	}
	return perf.NearestOf(spec, inSys, 3)
}

// inlineProbe creates a temporary user probe for "u:/path/bin:func[%return] [args]".
func inlineProbe(spec string) (Spec, error) {
	rest := strings.TrimPrefix(spec, "u:")
	head, args, _ := strings.Cut(rest, " ")
	i := strings.LastIndexByte(head, ':')
	if i <= 0 {
		return Spec{}, fmt.Errorf("bad probe %q: want u:/path/to/binary:function", spec)
	}
	bin, fn := head[:i], head[i+1:]
	p, err := probe.Parse(strings.TrimSpace(fn+" "+args), bin, probe.TempGroup())
	if err != nil {
		return Spec{}, err
	}
	p.Event = probe.Sanitize(strings.TrimSuffix(filepath.Base(bin), ".so")) + "_" + p.Event
	if p.Note != "" {
		fmt.Fprintln(os.Stderr, "sonde: "+p.Note)
	}
	if err := probe.AddTemp(p); err != nil {
		return Spec{}, err
	}
	return Tracepoint(p.Name())
}
