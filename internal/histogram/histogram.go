// Package histogram holds latency distributions: exact percentiles from the
// kept values and bcc-style log2 (or linear) bar charts. "Distributions, not
// averages" (seed 004): every latency view prints both.
package histogram

import (
	"fmt"
	"io"
	"math"
	"math/bits"
	"sort"
	"strings"
)

// Unit scales nanoseconds for display.
type Unit struct {
	Name string
	NS   uint64
}

var (
	NS   = Unit{"nsecs", 1}
	US   = Unit{"usecs", 1000}
	MS   = Unit{"msecs", 1000000}
	Secs = Unit{"secs", 1000000000}
)

// ParseUnit accepts ns, us, ms, s.
func ParseUnit(s string) (Unit, error) {
	switch s {
	case "ns", "nsecs":
		return NS, nil
	case "us", "usecs", "":
		return US, nil
	case "ms", "msecs":
		return MS, nil
	case "s", "secs":
		return Secs, nil
	}
	return Unit{}, fmt.Errorf("unknown unit %q (ns, us, ms, s)", s)
}

// Hist collects values in nanoseconds.
type Hist struct {
	values []uint64
	sorted bool
	sum    float64
}

// Add records one value (ns).
func (h *Hist) Add(v uint64) {
	h.values = append(h.values, v)
	h.sorted = false
	h.sum += float64(v)
}

// AddN records a value n times (for in-kernel bucket counts).
func (h *Hist) AddN(v, n uint64) {
	for i := uint64(0); i < n; i++ {
		h.Add(v)
	}
}

// Count is the number of values.
func (h *Hist) Count() int { return len(h.values) }

// Stats summarizes the distribution.
type Stats struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean_ns"`
	Min   uint64  `json:"min_ns"`
	P50   uint64  `json:"p50_ns"`
	P90   uint64  `json:"p90_ns"`
	P99   uint64  `json:"p99_ns"`
	Max   uint64  `json:"max_ns"`
}

func (h *Hist) sort() {
	if !h.sorted {
		sort.Slice(h.values, func(i, j int) bool { return h.values[i] < h.values[j] })
		h.sorted = true
	}
}

// Percentile returns the nearest-rank percentile p (0–100).
func (h *Hist) Percentile(p float64) uint64 {
	if len(h.values) == 0 {
		return 0
	}
	h.sort()
	rank := int(math.Ceil(p/100*float64(len(h.values)))) - 1
	rank = max(0, min(rank, len(h.values)-1))
	return h.values[rank]
}

// Stats computes count, mean, percentiles and extremes.
func (h *Hist) Stats() Stats {
	if len(h.values) == 0 {
		return Stats{}
	}
	h.sort()
	return Stats{
		Count: len(h.values), Mean: h.sum / float64(len(h.values)),
		Min: h.values[0], P50: h.Percentile(50), P90: h.Percentile(90), P99: h.Percentile(99), Max: h.values[len(h.values)-1],
	}
}

// Bucket is one histogram row, bounds in display units.
type Bucket struct {
	Lo    uint64 `json:"lo"`
	Hi    uint64 `json:"hi"`
	Count uint64 `json:"count"`
}

// Log2 buckets values in unit: [0,1], [2,3], [4,7], …
func (h *Hist) Log2(u Unit) []Bucket {
	var counts []uint64
	for _, v := range h.values {
		x := v / u.NS
		idx := 0
		if x > 0 {
			idx = bits.Len64(x) - 1
		}
		for len(counts) <= idx {
			counts = append(counts, 0)
		}
		counts[idx]++
	}
	out := make([]Bucket, len(counts))
	for i, c := range counts {
		lo, hi := uint64(0), uint64(1)
		if i > 0 {
			lo, hi = 1<<uint(i), 1<<uint(i+1)-1
		}
		out[i] = Bucket{Lo: lo, Hi: hi, Count: c}
	}
	return out
}

// Linear buckets values in unit with a fixed step.
func (h *Hist) Linear(u Unit, step uint64) []Bucket {
	if step == 0 {
		step = 1
	}
	var counts []uint64
	for _, v := range h.values {
		idx := int(v / u.NS / step)
		if idx > 1<<16 {
			idx = 1 << 16 // the last bucket holds the tail
		}
		for len(counts) <= idx {
			counts = append(counts, 0)
		}
		counts[idx]++
	}
	var out []Bucket
	for i, c := range counts {
		out = append(out, Bucket{Lo: uint64(i) * step, Hi: uint64(i+1)*step - 1, Count: c})
	}
	return out
}

// WriteBars prints buckets in the layout bcc's tools use, so readers
// (and scripts) used to them feel at home.
func WriteBars(w io.Writer, buckets []Bucket, unit string) {
	var maxc, maxHi uint64
	for _, b := range buckets {
		maxc = max(maxc, b.Count)
		maxHi = max(maxHi, b.Hi)
	}
	num, pad, col := 10, 5, 19
	if maxHi >= 1<<32 {
		num, pad, col = 20, 15, 29
	}
	fmt.Fprintf(w, "%*s%-*s : count    distribution\n", pad, "", col, unit)
	const width = 40
	for _, b := range buckets {
		n := 0
		if maxc > 0 {
			n = int(b.Count * width / maxc)
		}
		fmt.Fprintf(w, "%*d -> %-*d : %-8d |%-*s|\n", num, b.Lo, num, b.Hi, b.Count, width, strings.Repeat("*", n))
	}
}

// WriteSummary prints count, mean and percentiles in unit.
func WriteSummary(w io.Writer, s Stats, u Unit) {
	f := func(v float64) string { return fmt.Sprintf("%.3f", v/float64(u.NS)) }
	fmt.Fprintf(w, "count %d  mean %s  p50 %s  p90 %s  p99 %s  max %s  (%s)\n",
		s.Count, f(s.Mean), f(float64(s.P50)), f(float64(s.P90)), f(float64(s.P99)), f(float64(s.Max)), u.Name)
}
