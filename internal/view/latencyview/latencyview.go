// Package latencyview writes a latency result (start → end pairs) as
// bcc-style histograms with a summary, or as JSON.
package latencyview

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sonde-dev/sonde/internal/model/histogram"
	"github.com/sonde-dev/sonde/internal/model/jsonout"
	"github.com/sonde-dev/sonde/internal/tools/latency"
	"github.com/sonde-dev/sonde/internal/view/dist"
)

// Report is what the view shows about one run.
type Report struct {
	Start, End string
	Key        []string
	Result     *latency.Result
	Unit       histogram.Unit
	Linear     uint64 // bucket width in Unit; 0 for log2 buckets
	Events     bool   // list every pair
	Lost       uint64
	Duration   time.Duration
	Extra      string // appended to the summary line (live counters)
}

// Group is one distribution in JSON.
type Group struct {
	Group string `json:"group,omitempty"`
	dist.Dist
}

// Doc is the JSON document.
type Doc struct {
	jsonout.Run
	Start         string         `json:"start"`
	End           string         `json:"end"`
	Key           []string       `json:"key,omitempty"`
	Unit          string         `json:"unit"` // of bucket bounds
	Groups        []Group        `json:"groups"`
	Pairs         []latency.Pair `json:"pairs,omitempty"`
	Starts        int            `json:"starts"`
	Ends          int            `json:"ends"`
	UnmatchedEnds int            `json:"unmatched_ends"`
	OpenStarts    int            `json:"open_starts"`
	Lost          uint64         `json:"lost"`
}

func (r *Report) dist(h *histogram.Hist) dist.Dist {
	return dist.Options{Unit: r.Unit, Linear: r.Linear}.Of(h)
}

// WriteJSON writes one document.
func (r *Report) WriteJSON(w io.Writer) error {
	res := r.Result
	d := Doc{Run: jsonout.Run{Command: "latency", DurationNS: jsonout.NS(r.Duration)}, Start: r.Start, End: r.End, Key: r.Key,
		Unit: r.Unit.Name, Groups: []Group{}, Pairs: res.Pairs, Starts: res.Starts, Ends: res.Ends,
		UnmatchedEnds: res.Unmatched, OpenStarts: res.Pending, Lost: r.Lost}
	for _, g := range res.GroupNames() {
		h := res.Groups[g]
		d.Groups = append(d.Groups, Group{Group: g, Dist: r.dist(h)})
	}
	return jsonout.Write(w, d)
}

// WriteText writes the pairs (with Events), a summary line and one
// histogram per group.
func (r *Report) WriteText(w io.Writer) {
	res := r.Result
	if r.Events {
		fmt.Fprintf(w, "%-18s %-16s %7s %-24s %12s\n", "START(s)", "COMM", "PID", "KEY", "LAT("+r.Unit.Name+")")
		for _, pr := range res.Pairs {
			fmt.Fprintf(w, "%-18.6f %-16s %7d %-24s %12.3f\n", float64(pr.StartNS)/1e9, pr.Comm, pr.Pid, pr.Key, float64(pr.Latency)/float64(r.Unit.NS))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%s → %s", r.Start, r.End)
	if len(r.Key) > 0 {
		fmt.Fprintf(w, " by %s", strings.Join(r.Key, ","))
	}
	var pairs uint64
	for _, h := range res.Groups {
		pairs += h.Count()
	}
	fmt.Fprintf(w, ": %d pairs, %d ends without a start%s, %d starts still open, %d lost, %s\n\n",
		pairs, res.Unmatched, r.Extra, res.Pending, r.Lost, r.Duration.Round(time.Millisecond))
	for _, g := range res.GroupNames() {
		h := res.Groups[g]
		if g != "" {
			fmt.Fprintf(w, "%s\n", g)
		}
		r.dist(h).WriteText(w, r.Unit)
		fmt.Fprintln(w)
	}
}
