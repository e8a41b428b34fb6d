// Package eventlist finds the events this machine offers (built-in perf
// events, PMU events, tracepoints, probes), tries whether each opens here,
// and writes the list as perf list does, or as JSON.
package eventlist

import (
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sonde-dev/sonde/internal/collect/perf"
	"github.com/sonde-dev/sonde/internal/collect/probe"
	"github.com/sonde-dev/sonde/internal/collect/tracefs"
	"github.com/sonde-dev/sonde/internal/model/jsonout"
)

// Event is one listed event.
type Event struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"` // hardware, software, hardware-cache, pmu, tracepoint, probe
	Usable bool   `json:"usable"`
	Reason string `json:"reason,omitempty"` // why not usable, or how usability was judged
}

// Match turns a list argument into a glob: a bare word matches anywhere.
func Match(arg string) func(string) bool {
	glob := "*"
	if arg != "" {
		glob = arg
		if !strings.ContainsAny(glob, "*?[") {
			glob = "*" + glob + "*"
		}
	}
	return func(n string) bool { ok, _ := path.Match(glob, n); return ok }
}

// Collect lists the events whose names match, trying each built-in one.
func Collect(match func(string) bool) []Event {
	var out []Event
	for _, d := range perf.Builtin {
		if !match(d.Name) {
			continue
		}
		e := Event{Name: d.Name, Kind: d.Kind.String(), Usable: true}
		if err := tryOpen(d); err != nil {
			e.Usable, e.Reason = false, err.Error()
		}
		out = append(out, e)
	}
	// PMUs the kernel exposes, with their named events.
	pmus, _ := filepath.Glob("/sys/bus/event_source/devices/*")
	for _, p := range pmus {
		name := filepath.Base(p)
		evs, _ := os.ReadDir(filepath.Join(p, "events"))
		for _, ev := range evs {
			if strings.Contains(ev.Name(), ".") {
				continue // .scale/.unit companions
			}
			n := name + "/" + ev.Name() + "/"
			if match(n) {
				out = append(out, Event{Name: n, Kind: "pmu", Usable: true, Reason: "listed by the kernel"})
			}
		}
	}
	tps, tpErr := tracefs.Events()
	probes := map[string]bool{}
	if ps, err := probe.List(); err == nil {
		for _, p := range ps {
			probes[p.Name()] = true
		}
	}
	for _, t := range tps {
		if match(t) {
			kind := "tracepoint"
			if probes[t] {
				kind = "probe"
			}
			out = append(out, Event{Name: t, Kind: kind, Usable: true})
		}
	}
	if tpErr != nil {
		out = append(out, Event{Name: "tracepoints", Kind: "tracepoint", Usable: false, Reason: tpErr.Error()})
	}
	return out
}

// WriteJSON writes the list as one JSON array.
func WriteJSON(w io.Writer, evs []Event) error {
	if evs == nil {
		evs = []Event{}
	}
	return jsonout.Write(w, evs)
}

var kinds = []struct{ kind, title string }{
	{"hardware", "Hardware"}, {"software", "Software"}, {"hardware-cache", "Hardware cache"},
	{"pmu", "Kernel PMU"}, {"tracepoint", "Tracepoint"}, {"probe", "Probe"},
}

func kindOrder(k string) int {
	for i, x := range kinds {
		if x.kind == k {
			return i
		}
	}
	return len(kinds)
}

// WriteText writes the list grouped by kind, as perf list does.
func WriteText(w io.Writer, evs []Event) error {
	evs = append([]Event(nil), evs...)
	sort.SliceStable(evs, func(i, j int) bool { return kindOrder(evs[i].Kind) < kindOrder(evs[j].Kind) })
	fmt.Fprint(w, "\nList of events (use with -e):\n\n")
	for _, e := range evs {
		state := ""
		if !e.Usable {
			state = ", not usable here: " + e.Reason
		}
		title := e.Kind
		if i := kindOrder(e.Kind); i < len(kinds) {
			title = kinds[i].title
		}
		fmt.Fprintf(w, "  %-50s [%s event%s]\n", e.Name, title, state)
	}
	_, err := fmt.Fprintln(w)
	return err
}

// tryOpen opens a counting event on this thread to see if it works here.
func tryOpen(d perf.EventDef) error {
	attr := unix.PerfEventAttr{Type: d.Type, Config: d.Config, Bits: unix.PerfBitDisabled | unix.PerfBitExcludeHv}
	attr.Size = uint32(perf.AttrSize)
	fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		switch err {
		case unix.ENOENT, unix.EOPNOTSUPP, unix.ENODEV:
			return fmt.Errorf("no usable hardware PMU (common in VMs)")
		case unix.EACCES, unix.EPERM:
			return fmt.Errorf("no permission (CAP_PERFMON or kernel.perf_event_paranoid)")
		}
		return err
	}
	unix.Close(fd)
	return nil
}
