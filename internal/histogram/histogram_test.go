package histogram

import (
	"bytes"
	"strings"
	"testing"
)

func TestStatsAndBuckets(t *testing.T) {
	var h Hist
	for i := 1; i <= 100; i++ {
		h.Add(uint64(i) * 1000) // 1..100 us
	}
	s := h.Stats()
	if s.Count != 100 || s.P50 != 50000 || s.P90 != 90000 || s.P99 != 99000 || s.Max != 100000 || s.Mean != 50500 {
		t.Errorf("stats %+v", s)
	}
	b := h.Log2(US)
	// 1 → [0,1]; 2-3; 4-7; …; 64-127 holds 64..100.
	if b[0].Count != 1 || b[1].Count != 2 || b[2].Count != 4 || b[6].Count != 37 || b[6].Lo != 64 || b[6].Hi != 127 {
		t.Errorf("buckets %+v", b)
	}
	var buf bytes.Buffer
	WriteBars(&buf, b, "usecs")
	if !strings.Contains(buf.String(), "64 -> 127") || !strings.Contains(buf.String(), "|****************************************|") {
		t.Errorf("bars:\n%s", buf.String())
	}
	l := h.Linear(US, 25)
	if len(l) != 5 || l[0].Count != 24 || l[4].Count != 1 {
		t.Errorf("linear %+v", l)
	}
}

func TestEmpty(t *testing.T) {
	var h Hist
	if s := h.Stats(); s.Count != 0 || h.Percentile(50) != 0 {
		t.Errorf("empty stats %+v", s)
	}
}
