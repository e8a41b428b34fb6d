// Package dist shows latency distributions the way bcc's tools print them
// (log2 or linear bars, then count, mean and percentiles) and as typed JSON
// whose numbers are the same ones the text shows. funclat, runqlat, biolat
// and latency build their reports from it.
package dist

import (
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/sonde-dev/sonde/internal/model/histogram"
)

// Options say how distributions are bucketed for display.
type Options struct {
	Unit   histogram.Unit
	Linear uint64 // bucket width in Unit; 0 buckets by powers of two
}

// Dist is one distribution as shown: its summary (nanoseconds) and its
// buckets (bounds in the report's unit).
type Dist struct {
	Stats   histogram.Stats    `json:"stats"`
	Buckets []histogram.Bucket `json:"buckets"`
}

// Split says what a report's distributions are kept apart by (runqlat's
// and cpudist's -P and -L).
type Split int

const (
	All       Split = iota // one distribution
	ByProcess              // one per pid
	ByThread               // one per tid
)

// Task is the process or thread a distribution of a split report is of
// (empty when not split).
type Task struct {
	Pid  uint32 `json:"pid,omitempty"`
	Tid  uint32 `json:"tid,omitempty"`
	Comm string `json:"comm,omitempty"`
}

// tasks are the keys of groups (pids or tids, 0 when not split) in order,
// each with the task it names; comm names a key.
func tasks[G any](s Split, groups map[uint32]G, comm func(uint32) string) ([]uint32, []Task) {
	ids := slices.Sorted(maps.Keys(groups))
	ts := make([]Task, len(ids))
	for i, id := range ids {
		switch s {
		case ByProcess:
			ts[i] = Task{Pid: id, Comm: comm(id)}
		case ByThread:
			ts[i] = Task{Tid: id, Comm: comm(id)}
		}
	}
	return ids, ts
}

// writeTask heads a group's block as bcc does ("pid = 42 name"; nothing
// when not split).
func (s Split) writeTask(w io.Writer, t Task) {
	switch s {
	case ByProcess:
		fmt.Fprintf(w, "pid = %d %s\n", t.Pid, t.Comm)
	case ByThread:
		fmt.Fprintf(w, "tid = %d %s\n", t.Tid, t.Comm)
	}
}

// Of buckets h for display.
func (o Options) Of(h *histogram.Hist) Dist {
	b := h.Log2(o.Unit)
	if o.Linear > 0 {
		b = h.Linear(o.Unit, o.Linear)
	}
	return Dist{Stats: h.Stats(), Buckets: b}
}

// WriteText prints the bars and the summary line in unit u.
func (d Dist) WriteText(w io.Writer, u histogram.Unit) {
	histogram.WriteBars(w, d.Buckets, u.Name)
	histogram.WriteSummary(w, d.Stats, u)
}
