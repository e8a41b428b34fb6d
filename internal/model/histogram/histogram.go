// Package histogram holds latency distributions in bounded memory: values
// are kept exactly while they are few, then counted in log-linear buckets
// (HdrHistogram's idea), so a tool can run for days without its memory
// growing. Percentiles, bcc-style log2 (or linear) bar charts and a summary
// are printed from either form. "Distributions, not averages" (seed 004):
// every latency view prints both.
//
// Accuracy: while a histogram holds at most ExactLimit values everything is
// exact. After that each power of two is split into 2^SubBits = 128 equal
// buckets; values below 128 keep a bucket each. A bucket [lo, hi] is at most
// lo/128 wide and is reported by its midpoint, clamped to the exact minimum
// and maximum, so a percentile is within RelError = 1/256 (0.4%) of the
// true nearest-rank value. Count, sum (mean), minimum and maximum stay exact.
//
// Memory: a Hist is about 500 bytes, plus 8 bytes per exact value (at most
// ExactLimit), plus 1 KiB for each power of two that holds bucketed values
// (at most 58 of them, 58 KiB, whatever the number of values).
package histogram

import (
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
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

const (
	// SubBits is log2 of the buckets per power of two.
	SubBits = 7
	// ExactLimit is how many values are kept exactly before bucketing.
	ExactLimit = 512
	// RelError bounds the relative error of a bucketed percentile.
	RelError = 1.0 / (2 << SubBits)

	subCount = 1 << SubBits
	// octaves: octave 0 holds 0..subCount-1 one value per bucket; octave
	// k ≥ 1 holds [2^(k+SubBits-1), 2^(k+SubBits)) in buckets 2^(k-1) wide.
	octaves = 64 - SubBits + 1
)

// Hist collects values in nanoseconds. The zero value is empty and ready.
type Hist struct {
	exact    []uint64 // every value, while n ≤ ExactLimit and not bucketed
	sorted   bool
	bucketed bool
	oct      [octaves]*[subCount]uint64 // allocated when first used
	n        uint64
	sumHi    uint64 // 128-bit sum, so the mean stays exact for days
	sumLo    uint64
	min      uint64
	max      uint64
}

// index maps a value to its octave and sub-bucket.
func index(v uint64) (int, int) {
	if v < subCount {
		return 0, int(v)
	}
	msb := bits.Len64(v) - 1 // ≥ SubBits
	return msb - SubBits + 1, int(v>>(msb-SubBits)) - subCount
}

// bounds are the smallest and largest values of a bucket.
func bounds(o, s int) (lo, hi uint64) {
	if o == 0 {
		return uint64(s), uint64(s)
	}
	shift := uint(o - 1)
	lo = uint64(subCount+s) << shift
	return lo, lo + (uint64(1) << shift) - 1
}

// Add records one value (ns).
func (h *Hist) Add(v uint64) { h.AddN(v, 1) }

// AddN records a value n times in O(1) (in-kernel slot counts go here).
func (h *Hist) AddN(v, n uint64) {
	if n == 0 {
		return
	}
	if h.n == 0 || v < h.min {
		h.min = v
	}
	h.max = max(h.max, v)
	hi, lo := bits.Mul64(v, n)
	var c uint64
	h.sumLo, c = bits.Add64(h.sumLo, lo, 0)
	h.sumHi += hi + c
	h.n += n
	if !h.bucketed && h.n <= ExactLimit {
		for range n {
			h.exact = append(h.exact, v)
		}
		h.sorted = false
		return
	}
	h.bucketize()
	h.bucketAdd(v, n)
}

// bucketize moves the exact values into buckets, once.
func (h *Hist) bucketize() {
	if h.bucketed {
		return
	}
	h.bucketed = true
	for _, v := range h.exact {
		h.bucketAdd(v, 1)
	}
	h.exact = nil
}

func (h *Hist) bucketAdd(v, n uint64) {
	o, s := index(v)
	b := h.oct[o]
	if b == nil {
		b = new([subCount]uint64)
		h.oct[o] = b
	}
	b[s] += n
}

// Merge adds every value of o to h (o is unchanged).
func (h *Hist) Merge(o *Hist) {
	if o == nil || o.n == 0 {
		return
	}
	if !o.bucketed {
		for _, v := range o.exact {
			h.Add(v)
		}
		return
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	var c uint64
	h.sumLo, c = bits.Add64(h.sumLo, o.sumLo, 0)
	h.sumHi += o.sumHi + c
	h.n += o.n
	h.bucketize()
	for i, b := range o.oct {
		if b == nil {
			continue
		}
		if h.oct[i] == nil {
			h.oct[i] = new([subCount]uint64)
		}
		for j, c := range b {
			h.oct[i][j] += c
		}
	}
}

// Reset empties h, keeping its buckets' memory for reuse.
func (h *Hist) Reset() {
	oct := h.oct
	*h = Hist{exact: h.exact[:0]}
	for i, b := range oct {
		if b != nil {
			*b = [subCount]uint64{}
			h.oct[i] = b
		}
	}
}

// Count is the number of values.
func (h *Hist) Count() uint64 { return h.n }

// Exact reports whether h still holds every value (no bucketing error).
func (h *Hist) Exact() bool { return !h.bucketed }

// Stats summarizes the distribution.
type Stats struct {
	Count uint64  `json:"count"`
	Mean  float64 `json:"mean_ns"`
	Min   uint64  `json:"min_ns"`
	P50   uint64  `json:"p50_ns"`
	P90   uint64  `json:"p90_ns"`
	P99   uint64  `json:"p99_ns"`
	Max   uint64  `json:"max_ns"`
}

func (h *Hist) sort() {
	if !h.sorted {
		slices.Sort(h.exact)
		h.sorted = true
	}
}

// Percentile returns the nearest-rank percentile p (0–100): exact while h
// is exact, else within RelError of it.
func (h *Hist) Percentile(p float64) uint64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(max(1, math.Ceil(p/100*float64(h.n))))
	if rank >= h.n {
		return h.max
	}
	if !h.bucketed {
		h.sort()
		return h.exact[rank-1]
	}
	if rank == 1 {
		return h.min
	}
	var seen uint64
	for o, b := range h.oct {
		if b == nil {
			continue
		}
		for s, c := range b {
			if seen += c; seen >= rank {
				lo, hi := bounds(o, s)
				return min(max(lo+(hi-lo)/2, h.min), h.max)
			}
		}
	}
	return h.max
}

// Stats computes count, mean, percentiles and extremes.
func (h *Hist) Stats() Stats {
	if h.n == 0 {
		return Stats{}
	}
	sum := float64(h.sumHi)*0x1p64 + float64(h.sumLo)
	return Stats{
		Count: h.n, Mean: sum / float64(h.n),
		Min: h.min, P50: h.Percentile(50), P90: h.Percentile(90), P99: h.Percentile(99), Max: h.max,
	}
}

// each calls f for every value (count 1) while exact, else for every
// non-empty bucket with its representative value (midpoint, clamped).
func (h *Hist) each(f func(v, n uint64)) {
	if !h.bucketed {
		for _, v := range h.exact {
			f(v, 1)
		}
		return
	}
	for o, b := range h.oct {
		if b == nil {
			continue
		}
		for s, c := range b {
			if c > 0 {
				lo, hi := bounds(o, s)
				f(min(max(lo+(hi-lo)/2, h.min), h.max), c)
			}
		}
	}
}

// Bucket is one histogram row, bounds in display units.
type Bucket struct {
	Lo    uint64 `json:"lo"`
	Hi    uint64 `json:"hi"`
	Count uint64 `json:"count"`
}

// Log2 buckets values in unit: [0,1], [2,3], [4,7], … Once h is bucketed,
// a bucket that straddles a row boundary (possible only when unit is not
// ns) counts in the row of its midpoint; it is at most 1/128 of its value
// wide, so only values that close to a boundary can land one row off.
func (h *Hist) Log2(u Unit) []Bucket {
	var counts []uint64
	h.each(func(v, n uint64) {
		x := v / u.NS
		idx := 0
		if x > 0 {
			idx = bits.Len64(x) - 1
		}
		for len(counts) <= idx {
			counts = append(counts, 0)
		}
		counts[idx] += n
	})
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

// Linear buckets values in unit with a fixed step (bucketed values as in
// Log2).
func (h *Hist) Linear(u Unit, step uint64) []Bucket {
	if step == 0 {
		step = 1
	}
	var counts []uint64
	h.each(func(v, n uint64) {
		idx := int(min(v/u.NS/step, 1<<16)) // the last bucket holds the tail
		for len(counts) <= idx {
			counts = append(counts, 0)
		}
		counts[idx] += n
	})
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

// Slots is the number of buckets in the flat layout in-kernel histograms
// use: slot = octave × 128 + sub-bucket, the same buckets a Hist keeps, so
// counts a BPF program made carry the same 1/256 bound (Slot says where a
// value goes; funclat.bpf.c computes the same).
const Slots = octaves * subCount

// Slot is the flat bucket of v.
func Slot(v uint64) int {
	o, s := index(v)
	return o*subCount + s
}

// SlotBounds are the smallest and largest value of a flat slot.
func SlotBounds(i int) [2]uint64 {
	lo, hi := bounds(i/subCount, i%subCount)
	return [2]uint64{lo, hi}
}

// AddSlots adds counts kept in the flat layout (counts[i] values in slot
// i) with the exact count-independent figures the kernel kept beside
// them: their sum, smallest and largest value.
func (h *Hist) AddSlots(counts []uint64, sum, lo, hi uint64) {
	var n uint64
	for _, c := range counts {
		n += c
	}
	if n == 0 {
		return
	}
	if h.n == 0 || lo < h.min {
		h.min = lo
	}
	h.max = max(h.max, hi)
	var c uint64
	h.sumLo, c = bits.Add64(h.sumLo, sum, 0)
	h.sumHi += c
	h.n += n
	h.bucketize()
	for i, k := range counts {
		if k == 0 || i >= Slots {
			continue
		}
		o, s := i/subCount, i%subCount
		if h.oct[o] == nil {
			h.oct[o] = new([subCount]uint64)
		}
		h.oct[o][s] += k
	}
}

// LogLinearValue is a representative value of a slot of the coarser
// log-linear layout (log_linear_slot in bpf/include/sonde_bits.h: the
// octave above 8 times 8, plus the top 3 bits below it): its middle.
func LogLinearValue(slot uint32) uint64 {
	if slot < 8 {
		return uint64(slot)
	}
	msb, mant := slot>>3, uint64(slot&7)
	lo := (8 + mant) << (msb - 3)
	return lo + (uint64(1)<<(msb-3))/2
}
