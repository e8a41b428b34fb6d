package execsnoop

import (
	"testing"

	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
)

// The shared lost counters name members of the object's enum (no root: its BTF).
func TestCounterTags(t *testing.T) {
	if err := bpfskel.CheckCounters(loadExecsnoop, execsnoopMapLost, &bpfskel.InFlightLost{}); err != nil {
		t.Fatal(err)
	}
}
