package latencyview

import (
	"strings"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/model/histogram"
	"github.com/sonde-dev/sonde/internal/model/jsonout"
	"github.com/sonde-dev/sonde/internal/testutil"
	"github.com/sonde-dev/sonde/internal/tools/latency"
)

// report: disk 8,0 saw requests of 100, 200 and 300 µs, disk 8,16 one of
// 5 ms; one end had no start, two starts stayed open.
func report() *Report {
	a, b := &histogram.Hist{}, &histogram.Hist{}
	for _, v := range []uint64{100e3, 200e3, 300e3} {
		a.Add(v)
	}
	b.Add(5e6)
	res := &latency.Result{Groups: map[string]*histogram.Hist{"8,0": a, "8,16": b}, Starts: 6, Ends: 5, Unmatched: 1, Pending: 2,
		Pairs: []latency.Pair{{Key: "8,0 1234", StartNS: 1e9, Latency: 100e3, Comm: "dd", Pid: 42}}}
	return &Report{Start: "block:block_rq_issue", End: "block:block_rq_complete", Key: []string{"dev", "sector"},
		Result: res, Unit: histogram.US, Duration: 1500 * time.Millisecond, Lost: 3}
}

func TestText(t *testing.T) {
	r := report()
	r.Events = true
	out := testutil.Text(r)
	for _, want := range []string{
		"block:block_rq_issue → block:block_rq_complete by dev,sector: 4 pairs, 1 ends without a start, 2 starts still open, 3 lost, 1.5s",
		"8,0\n", "8,16\n", "usecs", "dd", "100.000",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "8,0\n") > strings.Index(out, "8,16\n") {
		t.Errorf("groups not in name order:\n%s", out)
	}
}

func TestJSON(t *testing.T) {
	var d Doc
	raw := testutil.DecodeView(t, report(), &d)
	if d.Command != "latency" || d.DurationNS != 1500e6 || d.Unit != "usecs" || d.UnmatchedEnds != 1 || d.OpenStarts != 2 || d.Lost != 3 {
		t.Errorf("header %+v", d)
	}
	if len(d.Groups) != 2 || d.Groups[0].Group != "8,0" || d.Groups[0].Stats.Count != 3 || d.Groups[0].Stats.Max != 300e3 {
		t.Errorf("groups %+v", d.Groups)
	}
	if len(d.Pairs) != 1 || d.Pairs[0].Latency != 100e3 {
		t.Errorf("pairs %+v", d.Pairs)
	}
	if !strings.Contains(raw, `"duration_ns": 100000`) {
		t.Errorf("a pair's latency is not duration_ns:\n%s", raw)
	}
	if bad := jsonout.Undocumented(d); len(bad) > 0 {
		t.Errorf("undocumented keys %v", bad)
	}
}
