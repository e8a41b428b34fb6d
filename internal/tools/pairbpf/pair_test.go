package pairbpf

import (
	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"testing"

	"github.com/sonde-dev/sonde/internal/collect/events"
	"github.com/sonde-dev/sonde/internal/collect/tracefs"
	"github.com/sonde-dev/sonde/internal/model/histogram"
	"github.com/sonde-dev/sonde/internal/tools/latency"
)

// TestChainPairs: in a chain, each pair carries its start → mid time, or
// none when the program saw only the mid (PAIR_NO_BEFORE); OnPair gets
// every pair as it is read, without keeping them.
func TestChainPairs(t *testing.T) {
	sector := tracefs.Field{Name: "sector", Size: 8, Kind: tracefs.KindInt}
	nsec := tracefs.Field{Name: "nr_sector", Size: 4, Kind: tracefs.KindInt}
	var got []latency.Pair
	o := Options{Aux: "nr_sector", Mid: events.Spec{Format: &tracefs.Format{}}, OnPair: func(p latency.Pair) { got = append(got, p) }}
	r := &Result{Result: &latency.Result{Groups: map[string]*histogram.Hist{}}}
	r.add(&pairPairEvent{Key: [4]uint64{2048}, StartNs: 100, LatencyNs: 50, Aux: 8, BeforeNs: 7, Pid: 9}, []tracefs.Field{sector}, tracefs.Field{}, nsec, o)
	r.add(&pairPairEvent{Key: [4]uint64{4096}, StartNs: 200, LatencyNs: 60, Aux: 16, BeforeNs: noBefore, Pid: 9}, []tracefs.Field{sector}, tracefs.Field{}, nsec, o)
	if len(got) != 2 || len(r.Pairs) != 0 {
		t.Fatalf("OnPair got %d pairs, %d kept; want 2 and 0", len(got), len(r.Pairs))
	}
	if got[0].Before == nil || *got[0].Before != 7 || got[0].Key != "2048" || got[0].Aux != "8" || got[0].Latency != 50 {
		t.Errorf("pair with its start: %+v", got[0])
	}
	if got[1].Before != nil {
		t.Errorf("pair without its start has Before %d", *got[1].Before)
	}
	if h := r.Groups[""]; h == nil || h.Stats().Count != 2 {
		t.Errorf("the distribution holds %v", r.Groups)
	}
	// Without a mid event, before_ns is not a time.
	o.Mid = events.Spec{}
	got = nil
	r.add(&pairPairEvent{Key: [4]uint64{1}, LatencyNs: 5, BeforeNs: 0}, []tracefs.Field{sector}, tracefs.Field{}, nsec, o)
	if got[0].Before != nil {
		t.Errorf("a plain pair has Before")
	}
}

// The Go counters name members of the C enum (no root: the object's BTF).
func TestCounterTags(t *testing.T) {
	if err := bpfskel.CheckCounters(loadPair, pairMapCounters, &Counters{}); err != nil {
		t.Fatal(err)
	}
}
