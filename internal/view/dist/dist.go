// Package dist shows latency distributions the way bcc's tools print them
// (log2 or linear bars, then count, mean and percentiles) and as typed JSON
// whose numbers are the same ones the text shows. funclat, runqlat, biolat
// and latency build their reports from it.
package dist

import (
	"io"

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
