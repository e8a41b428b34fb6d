package record

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/sonde-dev/sonde/internal/collect/perf"
	"github.com/sonde-dev/sonde/internal/collect/procfs"
)

// synth is a synthetic record: its time, and a tag that is its body.
type synth struct {
	t   uint64
	tag string
}

// drainRound reads rings (by CPU, each in ring order) into q as a drain
// does. The body handed to add lives in a scratch buffer the "ring"
// overwrites right after, as a real ring reuses its space.
func drainRound(q *orderer, rings [][]synth) {
	scratch := make([]byte, 0, 64)
	q.begin()
	for _, ring := range rings {
		for _, r := range ring {
			scratch = append(scratch[:0], r.tag...)
			q.add(pending{time: r.t, typ: perf.RecordSample}, scratch)
			for i := range scratch {
				scratch[i] = '#'
			}
		}
	}
	q.end()
}

// inArena says whether every record of the round q just read points
// into q's arena as it is now (not into an array it grew out of).
func inArena(q *orderer) bool {
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(q.arena)))
	hi := lo + uintptr(len(q.arena))
	for _, p := range q.queue[q.first:] {
		if len(p.data) == 0 {
			continue
		}
		at := uintptr(unsafe.Pointer(unsafe.SliceData(p.data)))
		if at < lo || at+uintptr(len(p.data)) > hi {
			return false
		}
	}
	return true
}

// TestOrderer: records from several CPUs' rings come out in time order,
// up to and including the watermark; the later ones wait, their bodies
// intact, for a round whose watermark covers them.
func TestOrderer(t *testing.T) {
	type round struct {
		rings     [][]synth
		watermark uint64
		want      string // tags handed on, in order, space-separated
		waiting   int
	}
	many := make([]synth, 200) // grows the arena while one round is read
	var manyWant []string
	for i := range many {
		many[i] = synth{uint64(i), fmt.Sprintf("record-%03d-%s", i, strings.Repeat("x", i%17))}
		manyWant = append(manyWant, many[i].tag)
	}
	for _, c := range []struct {
		name   string
		rounds []round
	}{
		{"out_of_order_across_cpus", []round{
			{[][]synth{{{10, "a10"}, {30, "a30"}, {50, "a50"}}, {{20, "b20"}, {40, "b40"}}}, 60, "a10 b20 a30 b40 a50", 0},
		}},
		{"record_exactly_at_watermark_is_released", []round{
			{[][]synth{{{30, "at"}, {31, "after"}}}, 30, "at", 1},
			{nil, 31, "after", 0},
		}},
		{"later_round_brings_older_record", []round{
			{[][]synth{{{10, "a10"}, {50, "a50"}}, {{20, "b20"}}}, 40, "a10 b20", 1},
			{[][]synth{{{60, "a60"}}, {{45, "b45"}}}, 55, "b45 a50", 1},
			{nil, ^uint64(0), "a60", 0},
		}},
		{"empty_drain_releases_nothing", []round{
			{nil, 100, "", 0},
			{[][]synth{{}, {}}, 100, "", 0},
		}},
		{"empty_drain_releases_waiting_records", []round{
			{[][]synth{{{200, "late"}}}, 100, "", 1},
			{nil, 150, "", 1},
			{[][]synth{{}}, 200, "late", 0},
		}},
		{"equal_times_keep_ring_then_cpu_order", []round{
			{[][]synth{{{10, "a1"}, {10, "a2"}}, {{5, "b0"}, {10, "b1"}}}, 10, "b0 a1 a2 b1", 0},
		}},
		{"survivors_outlive_the_next_rounds_arena", []round{
			{[][]synth{{{1, "one"}, {9, "nine-waits"}}}, 5, "one", 1},
			{[][]synth{{{7, "seven-overwrites-the-arena"}}}, 8, "seven-overwrites-the-arena", 1},
			{[][]synth{{{20, "twenty"}}}, 20, "nine-waits twenty", 0},
		}},
		{"arena_grows_within_a_round", []round{
			{[][]synth{many}, ^uint64(0), strings.Join(manyWant, " "), 0},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var q orderer
			for i, r := range c.rounds {
				drainRound(&q, r.rings)
				if !inArena(&q) {
					t.Errorf("round %d: a record points outside the arena", i)
				}
				var got []string
				last := uint64(0)
				for _, p := range q.ready(r.watermark) {
					if p.time < last || p.time > r.watermark {
						t.Errorf("round %d: %q at %d after %d, watermark %d", i, p.data, p.time, last, r.watermark)
					}
					last = p.time
					got = append(got, string(p.data))
				}
				q.done()
				if g := strings.Join(got, " "); g != r.want {
					t.Errorf("round %d: handed on %q, want %q", i, g, r.want)
				}
				if q.waiting() != r.waiting {
					t.Errorf("round %d: %d records wait, want %d", i, q.waiting(), r.waiting)
				}
			}
		})
	}
}

// testSession is a session with no events open: enough to process
// synthetic records and write chunks, without privileges.
func testSession() *session {
	s := newSession(Options{})
	s.b.ReadMapsWith(func(int) ([]procfs.Mapping, error) { return nil, fmt.Errorf("no maps in tests") })
	return s
}

// lostBody is a PERF_RECORD_LOST body: id, count, then the sample_id
// trailer (pid, tid, time, cpu, res).
func lostBody(n uint64) []byte {
	b := binary.LittleEndian.AppendUint64(nil, 1)
	return append(binary.LittleEndian.AppendUint64(b, n), make([]byte, 24)...)
}

// lostSamplesBody is a PERF_RECORD_LOST_SAMPLES body: the count, then the
// sample_id trailer.
func lostSamplesBody(n uint64) []byte {
	return append(binary.LittleEndian.AppendUint64(nil, n), make([]byte, 24)...)
}

// TestProcessCounts: lost records add to the lost count, throttle records
// to Meta.Throttled and samples to the builder, each once, when the
// watermark reaches them; what waits is counted by the final round.
func TestProcessCounts(t *testing.T) {
	type rec struct {
		t    uint64
		typ  uint32
		body []byte
	}
	sample := sampleBody(0, 0, nil)
	for _, c := range []struct {
		name      string
		recs      []rec
		watermark uint64
		// After the round, then after the final one (watermark max).
		lost, finalLost           uint64
		throttled, finalThrottled uint64
		samples, finalSamples     int
	}{
		{name: "lost_record", recs: []rec{{10, perf.RecordLost, lostBody(5)}}, watermark: 100, lost: 5, finalLost: 5},
		{name: "lost_samples_record", recs: []rec{{10, perf.RecordLostSamples, lostSamplesBody(3)}}, watermark: 100, lost: 3, finalLost: 3},
		{name: "lost_counts_add_up_across_cpus", recs: []rec{
			{10, perf.RecordLost, lostBody(5)}, {20, perf.RecordLostSamples, lostSamplesBody(3)}, {15, perf.RecordLost, lostBody(2)},
		}, watermark: 100, lost: 10, finalLost: 10},
		{name: "short_lost_record_counts_nothing", recs: []rec{{10, perf.RecordLost, make([]byte, 8)}}, watermark: 100},
		{name: "lost_after_watermark_counted_in_final_round", recs: []rec{
			{10, perf.RecordLost, lostBody(1)}, {101, perf.RecordLost, lostBody(4)},
		}, watermark: 100, lost: 1, finalLost: 5},
		{name: "lost_at_watermark_counted", recs: []rec{{100, perf.RecordLostSamples, lostSamplesBody(6)}}, watermark: 100, lost: 6, finalLost: 6},
		{name: "throttle_counted", recs: []rec{
			{10, perf.RecordThrottle, make([]byte, 48)}, {200, perf.RecordThrottle, make([]byte, 48)},
		}, watermark: 100, throttled: 1, finalThrottled: 2},
		{name: "samples_go_to_the_builder", recs: []rec{
			{10, perf.RecordSample, sample}, {20, perf.RecordSample, sample}, {300, perf.RecordSample, sample},
		}, watermark: 100, samples: 2, finalSamples: 3},
		{name: "short_sample_dropped", recs: []rec{{10, perf.RecordSample, sample[:40]}}, watermark: 100},
		{name: "empty_drain", watermark: 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := testSession()
			s.ord.begin()
			for _, r := range c.recs {
				s.ord.add(pending{time: r.t, typ: r.typ}, r.body)
			}
			s.ord.end()
			check := func(when string, lost, throttled uint64, samples int) {
				t.Helper()
				if s.lost != lost || s.meta.Throttled != throttled || s.b.SampleCount() != samples {
					t.Errorf("%s: lost %d, throttled %d, samples %d; want %d, %d, %d",
						when, s.lost, s.meta.Throttled, s.b.SampleCount(), lost, throttled, samples)
				}
			}
			s.process(c.watermark)
			check("after the round", c.lost, c.throttled, c.samples)
			s.ord.begin() // an empty drain, as stop's
			s.ord.end()
			s.process(^uint64(0))
			check("after the final round", c.finalLost, c.finalThrottled, c.finalSamples)
		})
	}
}
