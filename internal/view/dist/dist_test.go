package dist

import (
	"strings"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/model/histogram"
	"github.com/sonde-dev/sonde/internal/testutil"
)

func hist(ns ...uint64) *histogram.Hist {
	h := &histogram.Hist{}
	for _, v := range ns {
		h.Add(v)
	}
	return h
}

func TestFunctionsText(t *testing.T) {
	o := Options{Unit: histogram.MS}
	r := NewFunctions(o, "system wide", Calls{Names: []string{"srv:reverse_lookup"}, Hists: []*histogram.Hist{hist(40e6, 50e6, 90e6)}, Lost: 3}, 2*time.Second)
	got := testutil.Text(r)
	want := `srv:reverse_lookup
     msecs               : count    distribution
         0 -> 1          : 0        |                                        |
         2 -> 3          : 0        |                                        |
         4 -> 7          : 0        |                                        |
         8 -> 15         : 0        |                                        |
        16 -> 31         : 0        |                                        |
        32 -> 63         : 2        |****************************************|
        64 -> 127        : 1        |********************                    |
count 3  mean 60.000  p50 50.000  p90 90.000  p99 90.000  max 90.000  (msecs)

# 1 functions, 2s, 3 calls lost

`
	if got != want {
		t.Errorf("text:\n%s\nwant:\n%s", got, want)
	}
}

func TestFunctionsJSON(t *testing.T) {
	o := Options{Unit: histogram.US, Linear: 10}
	r := NewFunctions(o, "system wide", Calls{Names: []string{"a", "b"}, Hists: []*histogram.Hist{hist(5_000, 25_000), hist()}, Untimed: []uint64{0, 4}}, 1500*time.Millisecond)
	var got struct {
		Unit      string `json:"unit"`
		Duration  int64  `json:"duration_ns"`
		Functions []struct {
			Name    string             `json:"name"`
			Untimed uint64             `json:"untimed"`
			Stats   histogram.Stats    `json:"stats"`
			Buckets []histogram.Bucket `json:"buckets"`
		} `json:"functions"`
	}
	testutil.DecodeView(t, r, &got)
	f := got.Functions[0]
	if got.Unit != "usecs" || got.Duration != 1.5e9 || f.Name != "a" || f.Stats.Count != 2 || len(f.Buckets) != 3 ||
		f.Buckets[2] != (histogram.Bucket{Lo: 20, Hi: 29, Count: 1}) || got.Functions[1].Untimed != 4 {
		t.Errorf("got %+v", got)
	}
}

func TestRunQueue(t *testing.T) {
	groups := map[uint32]*histogram.Hist{42: hist(3_000), 7: hist(1_000, 2_000)}
	comm := func(id uint32) string { return map[uint32]string{7: "a", 42: "b"}[id] }
	r := NewRunQueue(Options{Unit: histogram.US}, "system wide", ByThread, groups, comm, 100, 4, time.Second)
	txt := testutil.Text(r)
	if !strings.HasPrefix(txt, "tid = 7 a\n") || !strings.Contains(txt, "\ntid = 42 b\n") ||
		!strings.HasSuffix(txt, "# run-queue latency over 1s; 100 switch-ins, 4 of tasks runnable before tracing began\n\n") {
		t.Errorf("text:\n%s", txt)
	}
	var got struct {
		Groups []map[string]any `json:"groups"`
	}
	testutil.DecodeView(t, r, &got)
	// Split by thread, groups name a tid and no pid.
	g := got.Groups[0]
	if g["tid"] != 7.0 || g["comm"] != "a" || g["pid"] != nil {
		t.Errorf("group %v", g)
	}
	// Not split: one group, no identity, no heading.
	r = NewRunQueue(Options{Unit: histogram.US}, "system wide", All, map[uint32]*histogram.Hist{0: hist(1_000)}, comm, 0, 0, time.Second)
	if txt = testutil.Text(r); strings.Contains(txt, "pid =") || strings.Contains(txt, "switch-ins") {
		t.Errorf("unsplit text:\n%s", txt)
	}
}
