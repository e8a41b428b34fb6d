package dist

import (
	"fmt"
	"io"
	"time"

	"github.com/sonde-dev/sonde/internal/model/histogram"
	"github.com/sonde-dev/sonde/internal/model/jsonout"
)

// Runs is one distribution of run (or wait) lengths with its exact count
// and total, as cpudist keeps them.
type Runs struct {
	Hist    *histogram.Hist
	Count   uint64
	TotalNS uint64
}

// CPURuns is cpudist's report: on-CPU time per run (off-CPU time per wait
// with offcpu), overall or per task, with the exact count and total of each.
type CPURuns struct {
	jsonout.Run
	OffCPU bool       `json:"offcpu"`
	Unit   string     `json:"unit"`
	Groups []RunGroup `json:"groups"`
	// UnknownStart counts runs begun before tracing (not counted); Lost,
	// runs not counted because a map was full.
	UnknownStart uint64 `json:"begun_before_tracing"`
	Lost         uint64 `json:"lost"`
	unit         histogram.Unit
	split        Split
}

// RunGroup is one distribution: the system's, or one process's or thread's.
type RunGroup struct {
	Task
	Runs    uint64 `json:"count"`
	TotalNS uint64 `json:"total_ns"`
	Dist
}

// NewCPURuns builds the report from distributions keyed by pid or tid (key
// 0 when not split); comm names a key.
func NewCPURuns(o Options, target string, offcpu bool, split Split, groups map[uint32]Runs, comm func(uint32) string, unknown, lost uint64, d time.Duration) *CPURuns {
	r := &CPURuns{Run: jsonout.Run{Command: "cpudist", Target: target, DurationNS: jsonout.NS(d)},
		OffCPU: offcpu, Unit: o.Unit.Name, UnknownStart: unknown, Lost: lost, unit: o.Unit, split: split}
	ids, ts := tasks(split, groups, comm)
	for i, id := range ids {
		g := groups[id]
		r.Groups = append(r.Groups, RunGroup{Task: ts[i], Runs: g.Count, TotalNS: g.TotalNS, Dist: o.Of(g.Hist)})
	}
	return r
}

// WriteText prints bcc cpudist's layout, one block per group, each with
// its exact total.
func (r *CPURuns) WriteText(w io.Writer) {
	what, each := "on-CPU time per run", "runs"
	if r.OffCPU {
		what, each = "off-CPU time per wait", "waits"
	}
	for _, g := range r.Groups {
		r.split.writeTask(w, g.Task)
		g.WriteText(w, r.unit)
		fmt.Fprintf(w, "total %s in %d %s\n\n", time.Duration(g.TotalNS), g.Runs, each)
	}
	fmt.Fprintf(w, "# %s over %s; %d %s begun before tracing not counted, %d lost (map full)\n\n",
		what, time.Duration(r.DurationNS).Round(time.Millisecond), r.UnknownStart, each, r.Lost)
}

// WriteJSON writes the report as one document.
func (r *CPURuns) WriteJSON(w io.Writer) error { return jsonout.Write(w, r) }
