package unwind

import (
	"testing"

	"github.com/cilium/ebpf"
)

func TestMapsOf(t *testing.T) {
	var rules, stacks ebpf.Map
	objs := struct {
		UnwindRules  *ebpf.Map
		UnwindStacks *ebpf.Map
		Other        *ebpf.Map
	}{UnwindRules: &rules, UnwindStacks: &stacks}
	m := MapsOf(&objs)
	if m.Rules != &rules || m.Stacks != &stacks || m.Rows != nil || m.Notices != nil {
		t.Errorf("MapsOf found %+v", m)
	}
}
