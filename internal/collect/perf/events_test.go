package perf

import (
	"strings"
	"testing"
)

func TestParseEvent(t *testing.T) {
	cases := []struct {
		in       string
		name     string
		exUser   bool
		exKernel bool
		err      string
	}{
		{"cpu-clock", "cpu-clock", false, false, ""},
		{"cpu-clock:u", "cpu-clock", false, true, ""},
		{"task-clock:k", "task-clock", true, false, ""},
		{"faults", "page-faults", false, false, ""},
		{"cs:uk", "context-switches", false, false, ""},
		{"cycles:ppp", "cycles", false, false, ""},
		{"cpu-clok", "", false, false, "nearest: cpu-clock"},
		{"cpu-clock:x", "", false, false, "unknown modifier"},
	}
	for _, c := range cases {
		ev, err := ParseEvent(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || ev.Def.Name != c.name || ev.ExcludeUser != c.exUser || ev.ExcludeKernel != c.exKernel {
			t.Errorf("%s: got %+v %v", c.in, ev, err)
		}
	}
}

func TestParseCPUList(t *testing.T) {
	got, err := ParseCPUList("0-2,5")
	if err != nil || len(got) != 4 || got[3] != 5 {
		t.Errorf("got %v %v", got, err)
	}
	for _, bad := range []string{"", "a", "3-1", "-1"} {
		if _, err := ParseCPUList(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseSampleShort(t *testing.T) {
	var s Sample
	if err := ParseSample(make([]byte, 10), false, &s); err == nil {
		t.Error("short sample accepted")
	}
	body := make([]byte, 56)
	body[48] = 200 // claims 200 frames
	if err := ParseSample(body, true, &s); err == nil {
		t.Error("overlong callchain accepted")
	}
}
