package runqlat

import (
	"testing"

	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
)

// The Go counters name members of the C enum (no root: the object's BTF).
func TestCounterTags(t *testing.T) {
	if err := bpfskel.CheckCounters(loadRunqlat, runqlatMapSwitches, &Counts{}); err != nil {
		t.Fatal(err)
	}
}
