package bio

import (
	"testing"

	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/model/histogram"
)

// The C side's histogram layout must be the Go side's: the stages it
// keeps and the slots per stage (histogram.Slots), or the counts read
// back would mean other stages or latencies.
func TestHistLayout(t *testing.T) {
	spec, err := loadBio()
	if err != nil {
		t.Fatal(err)
	}
	e, err := bpfskel.Enum(spec, "bio_stage")
	if err != nil {
		t.Fatal(err)
	}
	if e["BIO_NSTAGES"] != bioNstages {
		t.Errorf("BIO_NSTAGES is %d, bioNstages %d", e["BIO_NSTAGES"], bioNstages)
	}
	for st, id := range stageIDs {
		if want := map[Stage]string{Queued: "BIO_QUEUED", Device: "BIO_DEVICE", Total: "BIO_TOTAL"}[st]; e[want] != uint64(id) {
			t.Errorf("%s is %d in C, %d in Go", want, e[want], id)
		}
	}
	if got := spec.Maps["stage_hist"].MaxEntries; got != bioNstages*histogram.Slots {
		t.Errorf("stage_hist has %d entries, want %d stages × histogram.Slots", got, bioNstages*histogram.Slots)
	}
}
