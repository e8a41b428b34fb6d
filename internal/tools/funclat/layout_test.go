package funclat

import (
	"testing"

	"github.com/sonde-dev/sonde/internal/model/histogram"
)

// The C side's histogram layout (HIST_SLOTS in funclat.h, the map's size
// for one function) must be internal/model/histogram's, or the buckets read back
// would mean other latencies.
func TestHistLayout(t *testing.T) {
	spec, err := loadFunclat()
	if err != nil {
		t.Fatal(err)
	}
	if got := spec.Maps["hist"].MaxEntries; got != histogram.Slots {
		t.Errorf("HIST_SLOTS is %d, histogram.Slots %d", got, histogram.Slots)
	}
}
