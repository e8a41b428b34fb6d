package histogram

import (
	"bytes"
	"math"
	"math/bits"
	"runtime"
	"slices"
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
	if s := h.Stats(); s.Count != 0 || h.Percentile(50) != 0 || len(h.Log2(US)) != 0 {
		t.Errorf("empty stats %+v", s)
	}
}

// rng is a small xorshift generator: deterministic and allocation-free.
type rng uint64

func (r *rng) next() uint64 {
	x := uint64(*r)
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	*r = rng(x)
	return x
}

func (r *rng) float() float64 { return float64(r.next()>>11) / (1 << 53) }

// nearestRank is the reference percentile over sorted values.
func nearestRank(sorted []uint64, p float64) uint64 {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[max(0, min(rank, len(sorted))-1)]
}

func TestPercentileErrorBound(t *testing.T) {
	const n = 200000
	tests := []struct {
		name string
		gen  func(r *rng) uint64
	}{
		{"uniform_1us_10ms", func(r *rng) uint64 { return 1000 + r.next()%10_000_000 }},
		{"exponential_mean_50us", func(r *rng) uint64 { return uint64(-math.Log(1-r.float()) * 50_000) }},
		{"lognormal_wide", func(r *rng) uint64 {
			// Box–Muller normal, then e^(mu + sigma·z): spans many octaves.
			z := math.Sqrt(-2*math.Log(1-r.float())) * math.Cos(2*math.Pi*r.float())
			return uint64(math.Exp(11 + 3*z))
		}},
		{"bimodal_dns", func(r *rng) uint64 {
			if r.next()%10 == 0 {
				return 30_000_000 + r.next()%70_000_000 // 30–100 ms
			}
			return 2_000 + r.next()%3_000
		}},
		{"small_below_128", func(r *rng) uint64 { return r.next() % 128 }},
		{"constant", func(r *rng) uint64 { return 123_456_789 }},
		{"huge", func(r *rng) uint64 { return 1<<62 + r.next()%(1<<62) }},
		{"pareto_tail", func(r *rng) uint64 { return uint64(1000 / math.Pow(1-r.float(), 1/1.2)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rng(0x9e3779b97f4a7c15)
			var h Hist
			vals := make([]uint64, n)
			var sum float64
			for i := range vals {
				vals[i] = tt.gen(&r)
				h.Add(vals[i])
				sum += float64(vals[i])
			}
			if h.Exact() {
				t.Fatal("still exact after 200000 values")
			}
			slices.Sort(vals)
			for _, p := range []float64{0, 1, 10, 25, 50, 75, 90, 99, 99.9, 99.99, 100} {
				want, got := nearestRank(vals, p), h.Percentile(p)
				rel := math.Abs(float64(got)-float64(want)) / math.Max(float64(want), 1)
				if want < subCount && got != want || rel > RelError {
					t.Errorf("p%v = %d, want %d (relative error %.5f > %.5f)", p, got, want, rel, RelError)
				}
			}
			s := h.Stats()
			if s.Count != n || s.Min != vals[0] || s.Max != vals[n-1] || math.Abs(s.Mean-sum/n) > 1e-9*sum/n {
				t.Errorf("stats %+v, want count %d min %d max %d mean %f", s, n, vals[0], vals[n-1], sum/n)
			}
		})
	}
}

func TestBucketBounds(t *testing.T) {
	// Every value lies in its bucket, buckets tile the line without gaps,
	// and no bucket is wider than lo/128.
	prevHi := uint64(0)
	first := true
	for o := range octaves {
		for s := range subCount {
			if o > 0 && s == 0 && o == 0 {
				continue
			}
			lo, hi := bounds(o, s)
			if !first && lo != prevHi+1 {
				t.Fatalf("gap before bucket (%d,%d): lo %d after hi %d", o, s, lo, prevHi)
			}
			first = false
			if o > 0 && float64(hi-lo+1) > float64(lo)/subCount {
				t.Fatalf("bucket (%d,%d) [%d,%d] wider than lo/%d", o, s, lo, hi, subCount)
			}
			for _, v := range []uint64{lo, hi, lo + (hi-lo)/2} {
				if go_, gs := index(v); go_ != o || gs != s {
					t.Fatalf("index(%d) = (%d,%d), want (%d,%d)", v, go_, gs, o, s)
				}
			}
			prevHi = hi
		}
	}
	if prevHi != math.MaxUint64 {
		t.Fatalf("last bucket ends at %d, not 2^64-1", prevHi)
	}
}

func TestAddNMatchesRepeatedAdd(t *testing.T) {
	var a, b Hist
	r := rng(7)
	for range 5000 {
		v, n := r.next()%1_000_000, r.next()%50
		a.AddN(v, n)
		for range n {
			b.Add(v)
		}
	}
	if a.Stats() != b.Stats() || !slices.Equal(a.Log2(NS), b.Log2(NS)) || !slices.Equal(a.Linear(US, 10), b.Linear(US, 10)) {
		t.Errorf("AddN %+v differs from repeated Add %+v", a.Stats(), b.Stats())
	}
	// A huge count costs O(1) and stays exact in count, sum and extremes.
	var c Hist
	c.AddN(1000, 1<<40)
	c.AddN(3000, 1<<40)
	near := func(got, want uint64) bool { return math.Abs(float64(got)-float64(want)) <= RelError*float64(want) }
	if s := c.Stats(); s.Count != 1<<41 || s.Mean != 2000 || s.Min != 1000 || s.Max != 3000 || !near(s.P50, 1000) || !near(s.P99, 3000) {
		t.Errorf("stats after AddN(…, 2^40) twice: %+v", s)
	}
}

func TestMerge(t *testing.T) {
	gen := func(seed rng, n int) []uint64 {
		out := make([]uint64, n)
		for i := range out {
			out[i] = uint64(math.Exp(8 + 4*seed.float()))
		}
		return out
	}
	tests := []struct {
		name   string
		na, nb int
	}{
		{"exact_exact_stays_exact", 100, 200},
		{"exact_exact_overflows", 400, 400},
		{"exact_into_bucketed", 100000, 50},
		{"bucketed_into_exact", 50, 100000},
		{"bucketed_bucketed", 70000, 90000},
		{"into_empty", 0, 3000},
		{"empty_into", 3000, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			va, vb := gen(1, tt.na), gen(2, tt.nb)
			var a, b, all Hist
			for _, v := range va {
				a.Add(v)
				all.Add(v)
			}
			for _, v := range vb {
				b.Add(v)
				all.Add(v)
			}
			bStats := b.Stats()
			a.Merge(&b)
			if b.Stats() != bStats {
				t.Errorf("merge changed its argument")
			}
			// Bucketed sums may differ in the last float bit by order.
			as, ws := a.Stats(), all.Stats()
			if math.Abs(as.Mean-ws.Mean) > 1e-9*ws.Mean {
				t.Errorf("mean %f, want %f", as.Mean, ws.Mean)
			}
			as.Mean = ws.Mean
			if as != ws || !slices.Equal(a.Log2(NS), all.Log2(NS)) || a.Exact() != all.Exact() {
				t.Errorf("merged %+v (exact %v), want %+v (exact %v)", as, a.Exact(), ws, all.Exact())
			}
			if tt.na+tt.nb <= ExactLimit && !a.Exact() {
				t.Errorf("%d values merged, no longer exact", tt.na+tt.nb)
			}
		})
	}
}

func TestLog2ExactInNanoseconds(t *testing.T) {
	// Buckets never straddle a power of two, so ns log2 rows are exact
	// even after bucketing.
	var h Hist
	want := map[int]uint64{}
	r := rng(3)
	for range 100000 {
		v := r.next() >> (r.next() % 64)
		h.Add(v)
		want[bits.Len64(v|1)-1]++
	}
	for i, b := range h.Log2(NS) {
		if b.Count != want[i] {
			t.Errorf("row %d [%d,%d]: %d, want %d", i, b.Lo, b.Hi, b.Count, want[i])
		}
	}
}

func TestReset(t *testing.T) {
	var h Hist
	for i := range uint64(10000) {
		h.Add(i * 1000)
	}
	h.Reset()
	if h.Count() != 0 || h.Stats() != (Stats{}) || len(h.Log2(US)) != 0 {
		t.Fatalf("after reset: %+v", h.Stats())
	}
	h.Add(5)
	if s := h.Stats(); s.Count != 1 || s.Min != 5 || s.P99 != 5 || !h.Exact() {
		t.Errorf("after reset and one value: %+v", s)
	}
}

// TestMemoryFlat adds 100 M values spread over many powers of two and
// checks the heap does not grow after warm-up.
func TestMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("100 M values")
	}
	const total, warm = 100_000_000, 1_000_000
	var h Hist
	r := rng(11)
	add := func(n int) {
		for range n {
			x := r.next()
			h.Add(x >> (40 + x%24)) // values from 0 to 2^24: 24 octaves
		}
	}
	var ms runtime.MemStats
	heap := func() (live, allocated uint64) {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc, ms.TotalAlloc
	}
	add(warm)
	base, baseAlloc := heap()
	var peak, alloc uint64
	for range 9 {
		add((total - warm) / 9)
		live, a := heap()
		peak, alloc = max(peak, live), a
	}
	t.Logf("%d values: heap %d bytes after warm-up, at most %d after; %d bytes allocated after warm-up",
		h.Count(), base, peak, alloc-baseAlloc)
	if h.Count() < total {
		t.Errorf("count %d, want ≥ %d", h.Count(), total)
	}
	// A list of values would need 800 MB; a few KiB of slack is the
	// runtime's own (GC metadata, test logging), not the histogram's.
	if peak > base+16<<10 || alloc-baseAlloc > 16<<10 {
		t.Errorf("heap grew from %d to %d bytes (%d allocated) over %d values", base, peak, alloc-baseAlloc, total)
	}
}

// AddSlots of the flat layout gives the same percentiles as adding the
// values one by one (past the exact limit both are bucketed).
func TestAddSlots(t *testing.T) {
	var direct, slots Hist
	counts := make([]uint64, Slots)
	var sum, lo, hi uint64 = 0, ^uint64(0), 0
	for i := uint64(0); i < 100000; i++ {
		v := 50 + i*i%9_000_000
		direct.Add(v)
		counts[Slot(v)]++
		sum += v
		lo, hi = min(lo, v), max(hi, v)
	}
	slots.AddSlots(counts, sum, lo, hi)
	if direct.Stats() != slots.Stats() {
		t.Errorf("direct %+v\nslots  %+v", direct.Stats(), slots.Stats())
	}
}

// LogLinearValue lands in the slot it stands for: log_linear_slot
// (bpf/include/sonde_bits.h), written again here, puts it back there.
func TestLogLinearValue(t *testing.T) {
	slotOf := func(v uint64) uint32 {
		if v < 8 {
			return uint32(v)
		}
		msb := uint32(bits.Len64(v) - 1)
		return msb<<3 | uint32(v>>(msb-3)&7)
	}
	for _, v := range []uint64{0, 7, 8, 9, 15, 16, 1000, 123456789, 1 << 40} {
		s := slotOf(v)
		if got := slotOf(LogLinearValue(s)); got != s {
			t.Errorf("value %d: slot %d, its value %d is in slot %d", v, s, LogLinearValue(s), got)
		}
	}
}
