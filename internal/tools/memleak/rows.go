package memleak

import (
	"sort"
	"strings"

	"github.com/sonde-dev/sonde/internal/model"
)

// sortRows puts the largest holders first.
func sortRows(r *Result) {
	sort.SliceStable(r.Rows, func(i, j int) bool { return r.Rows[i].Bytes > r.Rows[j].Bytes })
}

// tracingFrame says whether a kernel frame belongs to the tracepoint's
// own path to the program (perf_trace_kmalloc, trace_call_bpf, bpf_prog_…)
// rather than to the allocation.
func tracingFrame(name string) bool {
	for _, p := range []string{"bpf_", "perf_trace", "trace_call_bpf", "__traceiter_", "__bpf_trace", "trace_event_raw_event"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// trimTracing drops the tracing frames from the leaf end of kernel stacks.
func trimTracing(p *model.Profile) {
	for i, st := range p.Stacks {
		n := 0
		for n < len(st) && p.Kind(st[n]).IsKernel() && tracingFrame(p.FrameName(st[n])) {
			n++
		}
		p.Stacks[i] = st[n:]
	}
}
