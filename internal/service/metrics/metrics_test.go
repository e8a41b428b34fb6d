package metrics

import (
	"net"
	"net/http"
	"net/http/httptest"
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

// TestMetricsHostCheck: bound to loopback, /metrics answers loopback names
// only (no DNS rebinding from a web page); bound elsewhere, any name.
func TestMetricsHostCheck(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("m 1\n")) })
	lo := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9464}
	all := &net.TCPAddr{IP: net.IPv4zero, Port: 9464}
	for _, c := range []struct {
		addr *net.TCPAddr
		host string
		code int
	}{
		{lo, "127.0.0.1:9464", 200},
		{lo, "localhost:9464", 200},
		{lo, "[::1]:9464", 200},
		{lo, "attacker.example:9464", 403},
		{lo, "10.0.0.5:9464", 403},
		{all, "attacker.example:9464", 200},
		{all, "node7:9464", 200},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/metrics", nil)
		req.Host = c.host
		hostCheck(c.addr, ok).ServeHTTP(rec, req)
		if rec.Code != c.code {
			t.Errorf("bound to %s, Host %s: HTTP %d, want %d", c.addr, c.host, rec.Code, c.code)
		}
	}
}
