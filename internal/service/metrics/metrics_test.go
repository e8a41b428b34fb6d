package metrics

import (
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/sonde-dev/sonde/internal/model/histogram"
)

// TestHistogramBuckets: each value lands under the first bound at or
// above it, and the count and sum carry over.
func TestHistogramBuckets(t *testing.T) {
	h := &histogram.Hist{}
	h.AddN(1500, 3)      // 1.5 µs: under 2.048 µs
	h.AddN(1_000_000, 2) // 1 ms: under 1.048576 ms
	var m dto.Metric
	if err := promHistogram(runqDesc, h).Write(&m); err != nil {
		t.Fatal(err)
	}
	hm := m.GetHistogram()
	if hm.GetSampleCount() != 5 {
		t.Errorf("count %d, want 5", hm.GetSampleCount())
	}
	want := map[float64]uint64{1.024e-6: 0, 2.048e-6: 3, 0.000524288: 3, 0.001048576: 5}
	for _, b := range hm.GetBucket() {
		if w, ok := want[b.GetUpperBound()]; ok && b.GetCumulativeCount() != w {
			t.Errorf("le=%g: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), w)
		}
	}
	if s := hm.GetSampleSum(); s < 0.0015 || s > 0.0025 {
		t.Errorf("sum %g s, want about 2 ms", s)
	}
}
