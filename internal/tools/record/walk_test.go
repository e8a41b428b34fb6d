package record

import (
	"encoding/binary"
	"testing"

	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/collect/events"
	"github.com/sonde-dev/sonde/internal/collect/perf"
	"github.com/sonde-dev/sonde/internal/collect/tracefs"
)

// sampleBody is a PERF_RECORD_SAMPLE body as record asks for it (id, ip,
// pid/tid, time, cpu, period), with raw data when raw is not nil.
func sampleBody(id uint64, tid uint32, raw []byte) []byte {
	b := make([]byte, 48)
	binary.LittleEndian.PutUint64(b, id)
	binary.LittleEndian.PutUint32(b[16:], tid)
	binary.LittleEndian.PutUint32(b[20:], tid)
	if raw != nil {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(raw)))
		b = append(b, raw...)
	}
	return b
}

func keyRaw(key uint64) []byte {
	return append(binary.LittleEndian.AppendUint64(nil, key), 0, 0, 0, 0)
}

// TestTakePairsInRingOrder: a walked stack's record goes with the next
// sample of its thread in the same ring, and with nothing else.
func TestTakePairsInRingOrder(t *testing.T) {
	w := &walker{outIDs: map[uint64]bool{7: true}, last: map[int]walked{}}
	const out, ev = 7, 1
	steps := []struct {
		cpu    int
		body   []byte
		taken  bool
		key    uint64
		walked bool
	}{
		{0, sampleBody(out, 10, keyRaw(0xabc)), true, 0, false},
		{0, sampleBody(ev, 10, nil), false, 0xabc, true}, // its sample
		{0, sampleBody(ev, 10, nil), false, 0, false},    // the key is used once
		{1, sampleBody(out, 11, keyRaw(0xdef)), true, 0, false},
		{0, sampleBody(ev, 11, nil), false, 0, false}, // another ring
		{1, sampleBody(ev, 12, nil), false, 0, false}, // another thread: the key is dropped
		{1, sampleBody(ev, 11, nil), false, 0, false},
		{1, sampleBody(out, 11, []byte{1, 2}), true, 0, false}, // short: ignored
		{1, sampleBody(ev, 11, nil), false, 0, false},
		// A task reaped on another CPU mid-sample: its record says thread
		// -1, its sample (prepared before the program ran) its own.
		{0, sampleBody(out, ^uint32(0), keyRaw(0x123)), true, 0, false},
		{0, sampleBody(ev, 13, nil), false, 0x123, true},
		{0, sampleBody(out, 0, keyRaw(0)), true, 0, false}, // idle's
		{0, sampleBody(ev, 14, nil), false, 0, false},
	}
	for i, s := range steps {
		var p pending
		if got := w.take(s.cpu, s.body, &p); got != s.taken || p.key != s.key || p.walked != s.walked {
			t.Errorf("step %d: take = %v, key %#x walked %v; want %v, %#x, %v", i, got, p.key, p.walked, s.taken, s.key, s.walked)
		}
	}
}

// TestProgFor: user probes take the kprobe-type program, other
// tracepoints the tracepoint one, everything else the perf_event one.
func TestProgFor(t *testing.T) {
	cpu, _ := perf.ParseEvent("cpu-clock")
	tp := func(fields ...string) events.Spec {
		f := &tracefs.Format{}
		for _, n := range fields {
			f.Fields = append(f.Fields, tracefs.Field{Name: n})
		}
		return events.Spec{Event: perf.Event{Def: perf.EventDef{Kind: perf.KindTracepoint}}, Format: f}
	}
	for _, c := range []struct {
		e    events.Spec
		want string
	}{
		{events.Spec{Event: cpu}, walkProgWalkSample},
		{tp("common_pid", "__syscall_nr"), walkProgWalkTracepoint},
		{tp("common_pid", "__probe_ip", "arg1"), walkProgWalkUprobe},
	} {
		if got := progFor(c.e); got != c.want {
			t.Errorf("progFor(%v) = %s, want %s", c.e.Format, got, c.want)
		}
	}
}

// walkErrors names members of enum walk_error (no root: the object's BTF).
func TestWalkErrorNames(t *testing.T) {
	if err := bpfskel.CheckCounters(loadWalk, walkMapWalkErrors, &walkErrors{}); err != nil {
		t.Fatal(err)
	}
}
