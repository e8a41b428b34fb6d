package dist

import (
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/sonde-dev/sonde/internal/model/histogram"
	"github.com/sonde-dev/sonde/internal/model/jsonout"
)

// Split says what runqlat's distributions are kept apart by.
type Split int

const (
	All       Split = iota // one distribution
	ByProcess              // one per pid
	ByThread               // one per tid
)

// RunQueue is runqlat's report: run-queue latency, overall or per task.
type RunQueue struct {
	jsonout.Run
	Unit   string       `json:"unit"`
	Groups []QueueGroup `json:"groups"`
	// Switches counts switch-ins seen; UnknownStart those of tasks that
	// became runnable before tracing began (their wait is not counted).
	Switches     uint64 `json:"switches"`
	UnknownStart uint64 `json:"unknown_start"`
	unit         histogram.Unit
	split        Split
}

// QueueGroup is one distribution: the system's, or one process's or thread's.
type QueueGroup struct {
	Pid  uint32 `json:"pid,omitempty"`
	Tid  uint32 `json:"tid,omitempty"`
	Comm string `json:"comm,omitempty"`
	Dist
}

// NewRunQueue builds the report from distributions keyed by pid or tid
// (key 0 when not split); comm names a key.
func NewRunQueue(o Options, target string, split Split, groups map[uint32]*histogram.Hist, comm func(uint32) string, switches, unknown uint64, d time.Duration) *RunQueue {
	r := &RunQueue{Run: jsonout.Run{Command: "runqlat", Target: target, DurationNS: jsonout.NS(d)},
		Unit: o.Unit.Name, Switches: switches, UnknownStart: unknown, unit: o.Unit, split: split}
	ids := make([]uint32, 0, len(groups))
	for id := range groups {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		g := QueueGroup{Dist: o.Of(groups[id])}
		switch split {
		case ByProcess:
			g.Pid, g.Comm = id, comm(id)
		case ByThread:
			g.Tid, g.Comm = id, comm(id)
		}
		r.Groups = append(r.Groups, g)
	}
	return r
}

// WriteText prints bcc runqlat's layout, one block per group.
func (r *RunQueue) WriteText(w io.Writer) {
	for _, g := range r.Groups {
		switch r.split {
		case ByProcess:
			fmt.Fprintf(w, "pid = %d %s\n", g.Pid, g.Comm)
		case ByThread:
			fmt.Fprintf(w, "tid = %d %s\n", g.Tid, g.Comm)
		}
		g.WriteText(w, r.unit)
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "# run-queue latency over %s", time.Duration(r.DurationNS).Round(time.Millisecond))
	if r.Switches > 0 {
		fmt.Fprintf(w, "; %d switch-ins, %d of tasks runnable before tracing began", r.Switches, r.UnknownStart)
	}
	fmt.Fprint(w, "\n\n")
}

// WriteJSON writes the report as one document.
func (r *RunQueue) WriteJSON(w io.Writer) error { return jsonout.Write(w, r) }
