package eventlist

import (
	"bytes"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		arg, name string
		want      bool
	}{
		{"", "cpu-clock", true},
		{"clock", "cpu-clock", true}, // a bare word matches anywhere
		{"clock", "page-faults", false},
		{"sched:*", "sched:sched_switch", true},
		{"sched:*", "block:block_rq_issue", false},
	} {
		if got := Match(c.arg)(c.name); got != c.want {
			t.Errorf("Match(%q)(%q) = %v", c.arg, c.name, got)
		}
	}
}

func TestWriteText(t *testing.T) {
	evs := []Event{
		{Name: "sched:sched_switch", Kind: "tracepoint", Usable: true},
		{Name: "cycles", Kind: "hardware", Usable: false, Reason: "no usable hardware PMU (common in VMs)"},
		{Name: "cpu-clock", Kind: "software", Usable: true},
	}
	var b bytes.Buffer
	WriteText(&b, evs)
	out := b.String()
	hw, sw, tp := strings.Index(out, "cycles"), strings.Index(out, "cpu-clock"), strings.Index(out, "sched:sched_switch")
	if !(hw < sw && sw < tp) {
		t.Errorf("not grouped hardware, software, tracepoint:\n%s", out)
	}
	if !strings.Contains(out, "[Hardware event, not usable here: no usable hardware PMU (common in VMs)]") {
		t.Errorf("unusable event without its reason:\n%s", out)
	}
}
