// Package blocked shows where threads wait: the stacks of offcpu (blocked
// time per stack) and wakeup (blocked stack joined with its waker's), as
// bcc's offcputime prints them and as typed JSON.
package blocked

import (
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/model/jsonout"
	"github.com/sonde-dev/sonde/internal/model/stackstat"
)

// Report is one offcpu or wakeup report.
type Report struct {
	jsonout.Run
	Stacks         []Stack  `json:"stacks"` // by blocked time, largest first
	TotalBlockedNS uint64   `json:"total_blocked_ns"`
	Errors         Errors   `json:"bpf_errors"`
	Attach         string   `json:"attach"` // how sched_switch was attached (tp_btf or raw_tp)
	Warnings       []string `json:"warnings,omitempty"`
	// UserStacks says how complete the user stacks are (nil: not walked);
	// WakerStacks the same of the wakers' stacks (wakeup).
	UserStacks  *stackstat.Completeness `json:"user_stacks,omitempty"`
	WakerStacks *stackstat.Completeness `json:"waker_user_stacks,omitempty"`
	top         int
}

// Errors are the BPF program's failure counts.
type Errors struct {
	StackFailures uint64 `json:"stack_failures"`
	LostMapFull   uint64 `json:"lost_map_full"`
}

// Stack is the time one thread (or process) spent blocked in one stack.
type Stack struct {
	Comm      string  `json:"comm"`
	Pid       int32   `json:"pid"`
	Tid       int32   `json:"tid,omitempty"` // only when threads are kept apart
	BlockedNS uint64  `json:"blocked_ns"`
	Frames    []Frame `json:"frames"` // innermost first; wakeup puts the waker's before a "--" frame
}

// Frame is one stack frame.
type Frame = jsonout.Frame

// Options choose what a report shows.
type Options struct {
	Command string // "offcpu" or "wakeup"
	Target  string // what was traced, as the text names it
	Top     int    // stacks in the text report (JSON has all)
}

// New builds a report from a profile whose sample periods are blocked
// nanoseconds. It shows every sample: a --comm filter is applied to the
// profile before (offcpu.Options.Only), so every output agrees.
func New(p *model.Profile, attach string, errs Errors, o Options) *Report {
	r := &Report{Run: jsonout.Run{Command: o.Command, Target: o.Target, DurationNS: jsonout.Nanos(p.Meta.DurationNS)},
		Errors: errs, Attach: attach, Warnings: p.Meta.Warnings, top: o.Top}
	for _, s := range p.Samples {
		t := p.Threads[s.Thread]
		st := Stack{Comm: t.Comm, Pid: t.Pid, BlockedNS: s.Period}
		if t.Tid != t.Pid {
			st.Tid = t.Tid
		}
		for _, loc := range p.Stacks[s.Stack] {
			st.Frames = append(st.Frames, Frame{Sym: p.FrameName(loc), DSO: p.DSOName(loc), Kernel: p.Kind(loc).IsKernel()})
		}
		r.Stacks = append(r.Stacks, st)
		r.TotalBlockedNS += s.Period
	}
	sort.SliceStable(r.Stacks, func(i, j int) bool { return r.Stacks[i].BlockedNS > r.Stacks[j].BlockedNS })
	return r
}

// WriteText prints the top stacks, each followed by its thread and blocked
// time in microseconds, then a footer.
func (r *Report) WriteText(w io.Writer) {
	total := float64(r.TotalBlockedNS) / 1e3
	for i, s := range r.Stacks {
		if i >= r.top {
			break
		}
		for _, f := range s.Frames {
			fmt.Fprintf(w, "    %s\n", f.Sym)
		}
		us := float64(s.BlockedNS) / 1e3
		fmt.Fprintf(w, "    -                %s (%d)\n        %.0f us (%.1f%%)\n\n", s.Comm, s.Pid, us, 100*us/total)
	}
	fmt.Fprintf(w, "# %s: %d stacks, %.0f us blocked in %s (%s); %d stack walks failed, %d lost to full maps\n\n",
		r.Command, len(r.Stacks), total, time.Duration(r.DurationNS).Round(time.Millisecond), r.Attach, r.Errors.StackFailures, r.Errors.LostMapFull)
	for _, n := range r.Notes() {
		fmt.Fprintf(w, "%s\n\n", n)
	}
}

// Notes are the completeness lines of the report's stacks, for the text
// view and, with folded output, for stderr.
func (r *Report) Notes() []string {
	var out []string
	if r.UserStacks != nil {
		out = append(out, "# blocked user "+r.UserStacks.String())
	}
	if r.WakerStacks != nil {
		out = append(out, "# waker user "+r.WakerStacks.String())
	}
	return out
}

// WriteJSON writes the report as one document.
func (r *Report) WriteJSON(w io.Writer) error { return jsonout.Write(w, r) }
