package dist

import (
	"fmt"
	"io"
	"time"

	"github.com/sonde-dev/sonde/internal/histogram"
	"github.com/sonde-dev/sonde/internal/view/jsonout"
)

// Functions is funclat's report: one distribution per function.
type Functions struct {
	jsonout.Run
	Unit      string     `json:"unit"`
	Functions []Function `json:"functions"`
	Lost      uint64     `json:"lost"` // calls dropped with the ring buffer full
	unit      histogram.Unit
}

// Function is one function's latency.
type Function struct {
	Name string `json:"name"` // binary:function, as resolved
	Dist
}

// NewFunctions builds the report; names[i] labels hists[i].
func NewFunctions(o Options, target string, names []string, hists []*histogram.Hist, lost uint64, d time.Duration) *Functions {
	r := &Functions{Run: jsonout.Run{Command: "funclat", Target: target, DurationNS: jsonout.NS(d)}, Unit: o.Unit.Name, Lost: lost, unit: o.Unit}
	for i, h := range hists {
		r.Functions = append(r.Functions, Function{Name: names[i], Dist: o.Of(h)})
	}
	return r
}

// WriteText prints each function's bars and summary, then a footer.
func (r *Functions) WriteText(w io.Writer) {
	for _, f := range r.Functions {
		fmt.Fprintf(w, "%s\n", f.Name)
		f.WriteText(w, r.unit)
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "# %d functions, %s, %d calls lost (ring buffer full)\n\n",
		len(r.Functions), time.Duration(r.DurationNS).Round(time.Millisecond), r.Lost)
}

// WriteJSON writes the report as one document.
func (r *Functions) WriteJSON(w io.Writer) error { return jsonout.Write(w, r) }
