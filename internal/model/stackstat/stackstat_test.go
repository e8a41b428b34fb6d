package stackstat

import (
	"strings"
	"testing"
)

func TestCompletenessString(t *testing.T) {
	var c Completeness
	if got := c.String(); got != "stacks complete: 100.0%" {
		t.Errorf("empty: %q", got)
	}
	l := func(pid uint32, pc uint64) string {
		if pid == 7 && pc >= 0x1000 && pc < 0x2000 {
			return "/opt/x/libfoo.so"
		}
		return ""
	}
	for i := 0; i < 956; i++ {
		c.Add(l, 7, Stack{End: EndStop}, 1)
	}
	for i := 0; i < 41; i++ {
		c.Add(l, 7, Stack{End: EndRead, Flags: FlagFallback, FallbackPC: 0x1800}, 1)
	}
	for i := 0; i < 3; i++ {
		c.Add(l, 7, Stack{End: EndFrameLimit}, 1)
	}
	want := "stacks complete: 95.6% (41 through code without unwind info, by frame pointers) — 44 truncated: 41 no unwind info for /opt/x/libfoo.so; 3 at the frame limit"
	if got := c.String(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if c.NoUnwindFiles["/opt/x/libfoo.so"] != 41 || c.FrameLimit != 3 || c.Total != 1000 {
		t.Errorf("counters: %+v", c)
	}
	d := Completeness{Unit: "ns"}
	d.Add(l, 7, Stack{End: EndZero}, 3e6)
	d.Add(l, 7, Stack{End: EndUnsupported}, 1e6)
	if got := d.String(); !strings.Contains(got, "75.0%") || !strings.Contains(got, "1ms at an unsupported unwind rule") {
		t.Errorf("ns: %q", got)
	}
}
