package statview

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/model/jsonout"
	"github.com/sonde-dev/sonde/internal/tools/stat"
)

func count(ev string, v float64) stat.Count {
	return stat.Count{Event: ev, Value: v, Raw: uint64(v), Enabled: 100, Running: 100, Supported: true}
}

func TestDerived(t *testing.T) {
	counts := []stat.Count{
		count("task-clock", 500e6), // 0.5 s of CPU
		count("cycles", 2000), count("instructions", 3000),
		count("branches", 400), count("branch-misses", 10),
		count("page-faults", 2500),
		count("context-switches", 2),
	}
	cases := []struct {
		event string
		want  string
	}{
		{"task-clock", "0.250 CPUs utilized"}, // 0.5 s over 2 s elapsed
		{"instructions", "1.50  insn per cycle"},
		{"branch-misses", "2.50% of all branches"},
		{"page-faults", "5.000 K/sec"}, // per second of task-clock, as perf
		{"context-switches", "4.000 /sec"},
	}
	for _, c := range cases {
		var got string
		for _, x := range counts {
			if x.Event == c.event {
				got = strings.TrimSpace(Derived(x, x.Value, counts, 2*time.Second))
			}
		}
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.event, got, c.want)
		}
	}
}

func TestValue(t *testing.T) {
	for _, c := range []struct {
		c    stat.Count
		want string
	}{
		{count("page-faults", 1234567), "1,234,567"},
		{count("task-clock", 173.39e6), "173.39"},
		{stat.Count{Event: "cycles"}, "<not supported>"},
		{stat.Count{Event: "cycles", Supported: true}, "<not counted>"},
	} {
		if got := Value(c.c); got != c.want {
			t.Errorf("Value(%s=%v) = %q, want %q", c.c.Event, c.c.Value, got, c.want)
		}
	}
}

// Three runs of 1, 2 and 3 page faults: mean 2, standard deviation 1,
// standard error 1/√3 = 28.87% of the mean.
func TestRepeatedRuns(t *testing.T) {
	var runs []*stat.Result
	for _, v := range []float64{1, 2, 3} {
		runs = append(runs, &stat.Result{Counts: []stat.Count{count("page-faults", v)}, Elapsed: time.Second, ExitCode: 3})
	}
	var text bytes.Buffer
	WriteText(&text, runs, "'work'")
	if !strings.Contains(text.String(), "(3 runs)") || !strings.Contains(text.String(), "( +- 28.87% )") {
		t.Errorf("text lacks the run count or the spread:\n%s", text.String())
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, runs, "'work'"); err != nil {
		t.Fatal(err)
	}
	var d Doc
	if err := json.Unmarshal(js.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	if d.Runs != 3 || d.DurationNS != jsonout.NS(time.Second) || *d.ExitCode != 3 || d.Command != "stat" {
		t.Errorf("header %+v", d.Run)
	}
	if r := d.Counts[0]; r.Value != 2 || math.Abs(r.StdErrPct-100/math.Sqrt(3)/2) > 1e-9 {
		t.Errorf("row %+v, want mean 2 and stderr %.4f%%", r, 100/math.Sqrt(3)/2)
	}
	if bad := jsonout.Undocumented(d); len(bad) > 0 {
		t.Errorf("undocumented keys %v", bad)
	}
	var csv bytes.Buffer
	WriteCSV(&csv, runs, ";")
	if f := strings.Split(strings.TrimSpace(csv.String()), ";"); len(f) != 6 || f[0] != "2" || f[2] != "page-faults" {
		t.Errorf("CSV %q: want value;unit;event;±%%;running;running%%", csv.String())
	}
}

func TestIntervals(t *testing.T) {
	var b bytes.Buffer
	iw := &IntervalWriter{W: &b}
	iw.Write(time.Second, []stat.Count{count("cpu-clock", 2e9)})
	iw.Write(2*time.Second, []stat.Count{count("cpu-clock", 1e9)})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "#") || !strings.Contains(lines[2], "2.000000000") || !strings.Contains(lines[2], "1000.00 msec") {
		t.Errorf("interval text:\n%s", b.String())
	}
	b.Reset()
	iw = &IntervalWriter{W: &b, JSON: true}
	iw.Write(1500*time.Millisecond, []stat.Count{count("cpu-clock", 2e9)})
	var in Interval
	if err := json.Unmarshal(b.Bytes(), &in); err != nil || in.DurationNS != 1500e6 || in.Value != 2e9 {
		t.Errorf("interval JSON %q: %+v %v", b.String(), in, err)
	}
}
