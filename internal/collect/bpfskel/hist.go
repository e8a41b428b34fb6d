package bpfskel

import (
	"math"
	"structs"

	"github.com/sonde-dev/sonde/internal/model/histogram"
)

// HistSums is bpf/include/sonde_hist.h's struct sonde_hist_sums: the
// exact figures a program keeps, per CPU, beside a histogram in the flat
// slots of internal/model/histogram (bpfgen checks its layout against
// each object that has it).
type HistSums struct {
	_      structs.HostLayout
	Count  uint64
	SumNs  uint64
	MinInv uint64 // ^smallest value: 0 (unset) is the largest
	MaxNs  uint64
}

// Merge adds o (another CPU's figures) to s.
func (s *HistSums) Merge(o HistSums) {
	s.Count += o.Count
	s.SumNs += o.SumNs
	s.MinInv = max(s.MinInv, o.MinInv)
	s.MaxNs = max(s.MaxNs, o.MaxNs)
}

// MergeCPUs is the figures of every CPU together.
func MergeCPUs(per []HistSums) HistSums {
	var s HistSums
	for _, c := range per {
		s.Merge(c)
	}
	return s
}

// SlotHist is the histogram of counts in the flat slots (counts[i]
// values in slot i) with the exact sum the kernel kept; the smallest and
// largest values are the kernel's exact ones when whole (the counts cover
// everything the sums do), else those of the slots that hold values.
func SlotHist(counts []uint64, sums HistSums, sumNs uint64, whole bool) *histogram.Hist {
	lo, hi := uint64(math.MaxUint64), uint64(0)
	for i, c := range counts {
		if c > 0 {
			b := histogram.SlotBounds(i)
			lo, hi = min(lo, b[0]), max(hi, b[1])
		}
	}
	if whole {
		lo, hi = ^sums.MinInv, sums.MaxNs
	}
	h := &histogram.Hist{}
	h.AddSlots(counts, sumNs, lo, hi)
	return h
}
