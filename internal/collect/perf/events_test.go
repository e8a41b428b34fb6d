package perf

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
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

// TestFilterMessages: a filter is quoted whole when short; a generated one
// of thousands of clauses is cut to its start with its size, so the error
// stays one short line.
func TestFilterMessages(t *testing.T) {
	if got := ShortFilter("nr_sector > 8"); got != `"nr_sector > 8"` {
		t.Errorf("short filter quoted as %s", got)
	}
	long := strings.Repeat("prev_pid == 12345 || ", 2999) + "prev_pid == 1"
	err := FilterError(long, "sched:sched_switch", []string{"prev_comm", "prev_pid"}, errors.New("invalid argument"))
	msg := err.Error()
	if len(msg) > 300 || strings.Contains(msg, "\n") || !strings.Contains(msg, "(62992 bytes, 3000 clauses)") ||
		!strings.Contains(msg, "the kernel takes at most") || !strings.HasSuffix(msg, "fields: prev_comm, prev_pid") {
		t.Errorf("a 3,000-clause filter gives %d bytes: %s", len(msg), msg)
	}
	short := FilterError("prev_pid = 1", "sched:sched_switch", []string{"prev_pid"}, errors.New("invalid argument"))
	if want := `bad filter "prev_pid = 1" for sched:sched_switch: the kernel rejected it (invalid argument); fields: prev_pid`; short.Error() != want {
		t.Errorf("got  %s\nwant %s", short, want)
	}
	// A cut never splits a character.
	if s := ShortFilter(strings.Repeat("é", 100)); !utf8.ValidString(s) {
		t.Errorf("cut inside a character: %q", s)
	}
}
