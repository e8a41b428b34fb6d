package stackstat

import "testing"

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
	want := "stacks complete: 95.6% (956 of 1000 reach the thread's first frame); 44 cut short: 41 where /opt/x/libfoo.so has no unwind info, 3 at the frame limit; 41 went through code without unwind info, walked there by frame pointers"
	if got := c.String(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if c.NoUnwindFiles["/opt/x/libfoo.so"] != 41 || c.FrameLimit != 3 || c.Total != 1000 {
		t.Errorf("counters: %+v", c)
	}
	d := Completeness{Unit: "ns"}
	d.Add(l, 7, Stack{End: EndZero}, 3e6)
	d.Add(l, 7, Stack{End: EndUnsupported}, 1e6)
	if got := d.String(); got != "stacks complete: 75.0% (3ms of 4ms reach the thread's first frame); 1ms cut short: 1ms at an unwind rule the walker cannot follow" {
		t.Errorf("ns: %q", got)
	}
}
