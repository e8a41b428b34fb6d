package why

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// WriteFolded writes the target threads' wall time as folded stacks (one
// line a stack: frames root first, joined by ";", then the ns): under
// each thread's name, a frame for where the time went ("on-CPU",
// "runnable", "throttled", "blocked: net", ...), then the stack. A flame
// graph of it is a wall-clock profile: every thread's time is in it once.
func WriteFolded(w io.Writer, d *Data) error {
	targets := map[int]*Thread{}
	for i := range d.Threads {
		if d.Threads[i].Depth == 0 {
			targets[d.Threads[i].TID] = &d.Threads[i]
		}
	}
	sums := map[string]uint64{}
	add := func(comm, state string, frames []Frame, ns uint64) {
		sums[foldStack(frames, fold(comm), state)] += ns
	}
	onCPU := map[int]uint64{}
	for _, c := range d.CPU {
		if t := targets[c.Tid]; t != nil {
			add(t.Comm, "on-CPU", userOnly(c.Frames), c.NS)
			onCPU[c.Tid] += c.NS
		}
	}
	for _, wt := range d.Waits {
		if t := targets[wt.Tid]; t != nil {
			add(t.Comm, "blocked: "+Classify(wt.Frames, wt.Syscall), wt.Frames, wt.NS)
		}
	}
	for _, t := range targets {
		if t.OnCPUNS > onCPU[t.TID] {
			add(t.Comm, "on-CPU", nil, t.OnCPUNS-onCPU[t.TID]) // slices no stack was taken for (running at the stop)
		}
		add(t.Comm, "runnable", nil, t.RunnableNS)
		add(t.Comm, "throttled", nil, t.ThrottledNS)
	}
	return writeSums(w, sums)
}

// WriteFindingFolded writes finding i's stacks (0 is the first) as folded
// stacks under each thread's name, weighted by the ns charged to them:
// its flame graph. Waits and runnable time have the blocked threads'
// stacks, CPU findings the user stacks their slices ended at; waiting
// for a CPU has no stack (the threads' names only).
func (r *Report) WriteFindingFolded(w io.Writer, i int) error {
	sums := map[string]uint64{}
	for _, s := range r.Findings[i].stacks {
		sums[foldStack(s.frames, fold(s.comm))] += s.ns
	}
	return writeSums(w, sums)
}

// foldStack is a folded line's stack: the prefix, then frames root first
// (kernel ones marked _[k], as flamegraph.pl's --kernel colors them).
func foldStack(frames []Frame, prefix ...string) string {
	parts := prefix
	for i := len(frames) - 1; i >= 0; i-- {
		name := fold(frames[i].Sym)
		if frames[i].Kernel {
			name += "_[k]"
		}
		parts = append(parts, name)
	}
	return strings.Join(parts, ";")
}

// writeSums writes folded stacks in order, leaving out the empty ones.
func writeSums(w io.Writer, sums map[string]uint64) error {
	keys := make([]string, 0, len(sums))
	for k, v := range sums {
		if v > 0 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, err := fmt.Fprintf(w, "%s %d\n", k, sums[k]); err != nil {
			return err
		}
	}
	return nil
}

// fold keeps a name from breaking the folded format (";" separates frames,
// the last space the count).
func fold(s string) string {
	return strings.NewReplacer(";", ":", " ", "_", "\n", "_").Replace(s)
}

// userOnly drops the kernel frames of an on-CPU slice's stack: they are
// the scheduler's or an interrupt's, taken as the slice ended.
func userOnly(fs []Frame) []Frame {
	var out []Frame
	for _, f := range fs {
		if !f.Kernel {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return fs
	}
	return out
}
