package dist

import (
	"fmt"
	"io"
	"time"

	"github.com/sonde-dev/sonde/internal/model/histogram"
	"github.com/sonde-dev/sonde/internal/model/jsonout"
)

// Functions is funclat's report: one distribution per function.
type Functions struct {
	jsonout.Run
	Unit      string     `json:"unit"`
	Functions []Function `json:"functions"`
	Lost      uint64     `json:"lost"`             // calls not counted (no histogram slot for them)
	Attach    string     `json:"attach,omitempty"` // how the functions were probed
	unit      histogram.Unit
}

// Function is one function's latency.
type Function struct {
	Name string `json:"name"` // binary:function, as resolved
	// Untimed counts calls seen returning without a matched entry (a Go
	// function whose goroutine stack moved): counted, not in the histogram.
	Untimed uint64 `json:"untimed,omitempty"`
	Dist
}

// Calls are what a run measured: per function (names[i] labels hists[i])
// the latencies and the untimed calls (nil for none).
type Calls struct {
	Names   []string
	Hists   []*histogram.Hist
	Untimed []uint64
	Lost    uint64
	Attach  string
}

// NewFunctions builds the report of a run of d.
func NewFunctions(o Options, target string, c Calls, d time.Duration) *Functions {
	r := &Functions{Run: jsonout.Run{Command: "funclat", Target: target, DurationNS: jsonout.NS(d)},
		Unit: o.Unit.Name, Lost: c.Lost, Attach: c.Attach, unit: o.Unit}
	for i, h := range c.Hists {
		f := Function{Name: c.Names[i], Dist: o.Of(h)}
		if i < len(c.Untimed) {
			f.Untimed = c.Untimed[i]
		}
		r.Functions = append(r.Functions, f)
	}
	return r
}

// WriteText prints each function's bars and summary, then a footer.
func (r *Functions) WriteText(w io.Writer) {
	for _, f := range r.Functions {
		fmt.Fprintf(w, "%s\n", f.Name)
		f.WriteText(w, r.unit)
		if f.Untimed > 0 {
			fmt.Fprintf(w, "%d more calls returned untimed (the goroutine's stack moved during the call)\n", f.Untimed)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "# %d functions, %s, %d calls lost\n\n",
		len(r.Functions), time.Duration(r.DurationNS).Round(time.Millisecond), r.Lost)
}

// WriteJSON writes the report as one document.
func (r *Functions) WriteJSON(w io.Writer) error { return jsonout.Write(w, r) }
