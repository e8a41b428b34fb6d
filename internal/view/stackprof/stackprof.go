// Package stackprof shows the stack profiles the BPF tools build: profile's
// perf-style report with the program's failure counts, and the files that
// profile, offcpu and wakeup can also write (data file, flame graph).
package stackprof

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sonde-dev/sonde/internal/format/datafile"
	"github.com/sonde-dev/sonde/internal/format/outfile"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/model/jsonout"
	"github.com/sonde-dev/sonde/internal/model/stackstat"
	"github.com/sonde-dev/sonde/internal/view/emit"
	"github.com/sonde-dev/sonde/internal/view/flamegraph"
	"github.com/sonde-dev/sonde/internal/view/report"
)

// Report is profile's report: report's entries by comm, dso and symbol.
type Report struct {
	jsonout.Run
	*report.Report
	BPFErrors Errors `json:"bpf_errors"`
	// UserStacks says how complete the user stacks are (nil: not walked).
	UserStacks *stackstat.Completeness `json:"user_stacks,omitempty"`
}

// Errors are the profile program's failure counts.
type Errors struct {
	UserStack   uint64 `json:"user_stack_failures"`
	KernelStack uint64 `json:"kernel_stack_failures"`
	LostMapFull uint64 `json:"lost_map_full"` // samples
}

// New builds profile's report of target from every sample of p (a --comm
// filter is applied to the profile before, so every output agrees).
func New(p *model.Profile, errs Errors, target string) *Report {
	return &Report{
		Run:       jsonout.Run{Command: "profile", Target: target, DurationNS: jsonout.Nanos(p.Meta.DurationNS)},
		Report:    report.Build(p, report.Options{Sort: []string{"comm", "dso", "sym"}, Graph: "none"}),
		BPFErrors: errs,
	}
}

// WriteText prints the report and a line of failure counts.
func (r *Report) WriteText(w io.Writer) {
	r.Report.WriteText(w)
	fmt.Fprintf(w, "# BPF: %d user and %d kernel stack walks failed, %d samples lost (map full)\n", r.BPFErrors.UserStack, r.BPFErrors.KernelStack, r.BPFErrors.LostMapFull)
	for _, n := range r.Notes() {
		fmt.Fprintln(w, n)
	}
	fmt.Fprintln(w)
}

// Notes are the completeness line of the report's user stacks, for the
// text view and, with folded output, for stderr.
func (r *Report) Notes() []string {
	if r.UserStacks == nil {
		return nil
	}
	return []string{"# user " + r.UserStacks.String()}
}

// WriteJSON writes the report as one document.
func (r *Report) WriteJSON(w io.Writer) error { return jsonout.Write(w, r) }

// Files are the files a run writes beside its report, and whether the
// report gives way to collapsed stacks.
type Files struct {
	Data   string // data file for report and flamegraph ("" for none)
	Flame  string // flame graph, .svg or else HTML ("" for none)
	Folded bool   // print collapsed stacks instead of the report
	// Title and What head the flame graph: "sonde offcpu", "blocked time in µs".
	Title, What string
	// Notes, with Folded, receives the report's completeness lines
	// (stderr): they are not part of the folded data.
	Notes io.Writer
}

// Write writes the files asked for from p.
func (f Files) Write(p *model.Profile) error {
	if f.Data != "" {
		if err := datafile.WriteFile(f.Data, p); err != nil {
			return err
		}
	}
	if f.Flame == "" {
		return nil
	}
	sub := fmt.Sprintf("%s, %s", f.What, time.Duration(p.Meta.DurationNS).Round(time.Millisecond))
	return writeFlame(f.Flame, flamegraph.FromProfile(p), flamegraph.Options{Title: f.Title, Subtitle: sub})
}

// Finish writes the files asked for, then the report or the collapsed
// stacks of p to w.
func (f Files) Finish(w *emit.Writer, p *model.Profile, report emit.Report) error {
	if err := f.Write(p); err != nil {
		return err
	}
	if !f.Folded {
		return w.Final(report)
	}
	if err := flamegraph.WriteFolded(w, flamegraph.FromProfile(p)); err != nil {
		return fmt.Errorf("writing collapsed stacks: %w", err)
	}
	// Folded stacks are data for other tools: how complete they are goes
	// beside them, on stderr, as the text report's footer says it.
	if n, ok := report.(interface{ Notes() []string }); ok && f.Notes != nil {
		for _, line := range n.Notes() {
			fmt.Fprintln(f.Notes, line)
		}
	}
	return w.Flush()
}

func writeFlame(path string, root *flamegraph.Node, o flamegraph.Options) error {
	err := outfile.Write(path, func(w io.Writer) error {
		if strings.HasSuffix(path, ".svg") {
			return flamegraph.WriteSVG(w, root, o)
		}
		return flamegraph.WriteHTML(w, root, o)
	})
	if err != nil {
		return fmt.Errorf("flame graph: %w", err)
	}
	return nil
}
