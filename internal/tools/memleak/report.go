package memleak

import (
	"fmt"
	"io"
	"time"

	"github.com/sonde-dev/sonde/internal/model/jsonout"
	"github.com/sonde-dev/sonde/internal/model/stackstat"
)

// Report is one memleak report, as text (bcc's shape) or JSON.
type Report struct {
	jsonout.Run
	Stacks           []Stack       `json:"stacks"` // by outstanding bytes, largest first
	OutstandingBytes uint64        `json:"outstanding_bytes"`
	OutstandingCount uint64        `json:"outstanding_count"`
	OlderThanNS      jsonout.Nanos `json:"older_than_ns,omitempty"`
	NeverFreed       bool          `json:"never_freed"` // the command exited: what it never freed
	Sampling         string        `json:"sampling"`
	Allocator        string        `json:"allocator"`
	Counters
	Warnings   []string                `json:"warnings,omitempty"`
	UserStacks *stackstat.Completeness `json:"user_stacks,omitempty"`
	top        int
	at         time.Time
}

// Stack is what one stack of one process still holds.
type Stack struct {
	Comm        string          `json:"comm"`
	Pid         uint32          `json:"pid"`
	Bytes       uint64          `json:"bytes"`
	Count       uint64          `json:"count"`
	OldestAgeNS jsonout.Nanos   `json:"oldest_age_ns"`
	Frames      []jsonout.Frame `json:"frames"` // innermost first
}

// ReportOptions choose what a report shows.
type ReportOptions struct {
	Target string
	Top    int // stacks in the text report (JSON has all)
	Older  time.Duration
}

// NewReport turns a result into a report.
func NewReport(r *Result, o ReportOptions) *Report {
	rep := &Report{Run: jsonout.Run{Command: "memleak", Target: o.Target, DurationNS: jsonout.NS(r.Elapsed)},
		OlderThanNS: jsonout.NS(o.Older), NeverFreed: r.Exited, Sampling: r.Sampling, Allocator: r.Source,
		Counters: r.Counters, Warnings: r.Profile.Meta.Warnings, top: o.Top, at: time.Now()}
	if r.Exited {
		code := r.ExitCode
		rep.ExitCode = &code
	}
	if r.Stacks.Total > 0 {
		rep.UserStacks = &r.Stacks
	}
	p := r.Profile
	for _, row := range r.Rows {
		s := p.Samples[row.Stack]
		st := Stack{Comm: p.Threads[s.Thread].Comm, Pid: row.Pid, Bytes: row.Bytes, Count: row.Count, OldestAgeNS: jsonout.NS(row.Oldest)}
		for _, loc := range p.Stacks[s.Stack] {
			st.Frames = append(st.Frames, jsonout.Frame{Sym: p.FrameName(loc), DSO: p.DSOName(loc), Kernel: p.Kind(loc).IsKernel()})
		}
		rep.Stacks = append(rep.Stacks, st)
		rep.OutstandingBytes += row.Bytes
		rep.OutstandingCount += row.Count
	}
	return rep
}

// WriteText prints the top stacks as bcc's memleak does, then what was
// traced, how it was sampled and what the program counted.
func (r *Report) WriteText(w io.Writer) {
	what := "outstanding allocations"
	if r.NeverFreed {
		what = "allocations never freed (the command exited)"
	}
	if r.OlderThanNS > 0 {
		what += fmt.Sprintf(" older than %s", time.Duration(r.OlderThanNS))
	}
	fmt.Fprintf(w, "[%s] top %d stacks of %s:\n", r.at.Format("15:04:05"), min(r.top, len(r.Stacks)), what)
	for i, s := range r.Stacks {
		if i >= r.top {
			break
		}
		fmt.Fprintf(w, "\t%d bytes in %d allocations from stack, oldest %s ago (%s %d)\n", s.Bytes, s.Count,
			time.Duration(s.OldestAgeNS).Round(time.Millisecond), s.Comm, s.Pid)
		for _, f := range s.Frames {
			fmt.Fprintf(w, "\t\t%s [%s]\n", f.Sym, f.DSO)
		}
	}
	fmt.Fprintf(w, "# memleak: %d B in %d allocations from %d stacks outstanding after %s\n", r.OutstandingBytes, r.OutstandingCount,
		len(r.Stacks), time.Duration(r.DurationNS).Round(time.Millisecond))
	fmt.Fprintf(w, "# traced: %s\n# sampling: %s\n", r.Allocator, r.Sampling)
	fmt.Fprintf(w, "# %d allocation calls, %d tracked, %d tracked frees; %d frees of untracked addresses, %d allocations lost to full maps, %d stack walks failed\n",
		r.Calls, r.Tracked, r.Frees, r.MissedFrees, r.MapFull, r.StackFails)
	for _, m := range r.Warnings {
		fmt.Fprintf(w, "# warning: %s\n", m)
	}
	if r.UserStacks != nil {
		fmt.Fprintf(w, "# user %s\n", r.UserStacks)
	}
	fmt.Fprintln(w)
}

// WriteJSON writes the report as one document.
func (r *Report) WriteJSON(w io.Writer) error { return jsonout.Write(w, r) }
