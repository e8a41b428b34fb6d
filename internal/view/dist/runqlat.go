package dist

import (
	"fmt"
	"io"
	"time"

	"github.com/sonde-dev/sonde/internal/model/histogram"
	"github.com/sonde-dev/sonde/internal/model/jsonout"
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
	Task
	Dist
}

// NewRunQueue builds the report from distributions keyed by pid or tid
// (key 0 when not split); comm names a key.
func NewRunQueue(o Options, target string, split Split, groups map[uint32]*histogram.Hist, comm func(uint32) string, switches, unknown uint64, d time.Duration) *RunQueue {
	r := &RunQueue{Run: jsonout.Run{Command: "runqlat", Target: target, DurationNS: jsonout.NS(d)},
		Unit: o.Unit.Name, Switches: switches, UnknownStart: unknown, unit: o.Unit, split: split}
	ids, ts := tasks(split, groups, comm)
	for i, id := range ids {
		r.Groups = append(r.Groups, QueueGroup{Task: ts[i], Dist: o.Of(groups[id])})
	}
	return r
}

// WriteText prints bcc runqlat's layout, one block per group.
func (r *RunQueue) WriteText(w io.Writer) {
	for _, g := range r.Groups {
		r.split.writeTask(w, g.Task)
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
