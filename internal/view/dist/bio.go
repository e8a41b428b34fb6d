package dist

import (
	"fmt"
	"io"
	"strings"

	"github.com/sonde-dev/sonde/internal/model/histogram"
	"github.com/sonde-dev/sonde/internal/model/jsonout"
	"github.com/sonde-dev/sonde/internal/tools/bio"
	"github.com/sonde-dev/sonde/internal/tools/pairbpf"
)

// BlockIO is biolat's report: one distribution per stage (and disk).
type BlockIO struct {
	jsonout.Run
	Unit   string      `json:"unit"`
	Stages []StageDist `json:"stages"`
	Lost   uint64      `json:"lost"` // requests dropped with a map or ring buffer full
	unit   histogram.Unit
	stages []stageSum
}

// StageDist is one stage's distribution, on one disk when split by disk.
type StageDist struct {
	Stage string `json:"stage"`
	Disk  string `json:"disk,omitempty"` // major,minor
	Dist
}

// stageSum is what the text report says of a stage as a whole.
type stageSum struct {
	name        string
	ios, lost   uint64
	first, next int // its distributions: Stages[first:next]
}

// NewBlockIO builds the report; res[i] is stages[i]'s result.
func NewBlockIO(o Options, stages []bio.Stage, res []*pairbpf.Result) *BlockIO {
	r := &BlockIO{Run: jsonout.Run{Command: "biolat", Target: "system wide"}, Unit: o.Unit.Name, unit: o.Unit}
	for i, pr := range res {
		s := stageSum{name: stages[i].Name, lost: bio.Lost(pr), first: len(r.Stages)}
		for _, g := range pr.GroupNames() {
			h := pr.Groups[g]
			s.ios += uint64(h.Count())
			r.Stages = append(r.Stages, StageDist{Stage: stages[i].Name, Disk: strings.TrimPrefix(g, "dev "), Dist: o.Of(h)})
		}
		s.next = len(r.Stages)
		r.stages = append(r.stages, s)
		r.Lost += s.lost
		r.DurationNS = max(r.DurationNS, jsonout.NS(pr.Elapsed))
	}
	return r
}

// WriteText prints each stage's bars (per disk when split) and summary.
func (r *BlockIO) WriteText(w io.Writer) {
	for _, s := range r.stages {
		fmt.Fprintf(w, "%s: %d I/Os\n", s.name, s.ios)
		for _, d := range r.Stages[s.first:s.next] {
			if d.Disk != "" {
				fmt.Fprintf(w, "disk %s\n", d.Disk)
			}
			d.WriteText(w, r.unit)
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "# %d lost\n\n", s.lost)
	}
}

// WriteJSON writes the report as one document.
func (r *BlockIO) WriteJSON(w io.Writer) error { return jsonout.Write(w, r) }
