package dist

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/sonde-dev/sonde/internal/histogram"
)

// Functions is funclat's report: one distribution per function.
type Functions struct {
	Unit       string     `json:"unit"`
	Functions  []Function `json:"functions"`
	Lost       uint64     `json:"lost"` // calls dropped with the ring buffer full
	DurationNS int64      `json:"duration_ns"`
	unit       histogram.Unit
}

// Function is one function's latency.
type Function struct {
	Function string `json:"function"`
	Dist
}

// NewFunctions builds the report; names[i] labels hists[i].
func NewFunctions(o Options, names []string, hists []*histogram.Hist, lost uint64, d time.Duration) *Functions {
	r := &Functions{Unit: o.Unit.Name, Lost: lost, DurationNS: d.Nanoseconds(), unit: o.Unit}
	for i, h := range hists {
		r.Functions = append(r.Functions, Function{Function: names[i], Dist: o.Of(h)})
	}
	return r
}

// WriteText prints each function's bars and summary, then a footer.
func (r *Functions) WriteText(w io.Writer) {
	for _, f := range r.Functions {
		fmt.Fprintf(w, "%s\n", f.Function)
		f.WriteText(w, r.unit)
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "# %d functions, %s, %d calls lost (ring buffer full)\n\n",
		len(r.Functions), time.Duration(r.DurationNS).Round(time.Millisecond), r.Lost)
}

// WriteJSON writes the report as one line.
func (r *Functions) WriteJSON(w io.Writer) error {
	return json.NewEncoder(w).Encode(r)
}
