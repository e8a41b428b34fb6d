package model

import "strings"

// tracingFrames begin the names of the kernel functions that run a BPF
// program from its hook (bpf_prog_…, the trace calls, the tracepoint's
// iterator): frames of the tool, not of the traced task.
var tracingFrames = []string{"bpf_prog_", "bpf_trace_run", "__bpf_trace_", "__traceiter_", "perf_trace_"}

// TracingFrame says whether a kernel frame named name is the tracing
// program's own path (tracingFrames, trace_call_bpf).
func TracingFrame(name string) bool {
	if name == "trace_call_bpf" {
		return true
	}
	for _, p := range tracingFrames {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// TrimTracing drops the tracing program's own kernel frames
// (TracingFrame) from every stack: a stack walked inside a tracepoint or
// probe begins with them.
func (p *Profile) TrimTracing() {
	for i, st := range p.Stacks {
		out := st[:0:0]
		for _, loc := range st {
			if p.Kind(loc).IsKernel() && TracingFrame(p.FrameName(loc)) {
				continue
			}
			out = append(out, loc)
		}
		p.Stacks[i] = out
	}
}
