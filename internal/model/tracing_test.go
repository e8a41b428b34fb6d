package model

import "testing"

func TestTracingFrame(t *testing.T) {
	for name, want := range map[string]bool{
		"bpf_prog_6deef7357e7b4530_sched_switch": true, "bpf_trace_run4": true, "__bpf_trace_sched_switch": true,
		"__traceiter_sched_switch": true, "perf_trace_sched_switch": true, "trace_call_bpf": true,
		"__schedule": false, "bpf_map_kmalloc_node": false, "trace_call_bpf_x": false, "do_nanosleep": false,
	} {
		if got := TracingFrame(name); got != want {
			t.Errorf("TracingFrame(%q) = %v, want %v", name, got, want)
		}
	}
}
