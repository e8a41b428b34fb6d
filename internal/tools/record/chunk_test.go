package record

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/collect/runctl"
	"github.com/sonde-dev/sonde/internal/format/datafile"
	"github.com/sonde-dev/sonde/internal/model"
)

var errDiskFull = errors.New("no space left on device")

// flakyFile is a data file in memory whose writes fail once fail is set.
type flakyFile struct {
	bytes.Buffer
	fail bool
}

func (f *flakyFile) Write(p []byte) (int, error) {
	if f.fail {
		return 0, errDiskFull
	}
	return f.Buffer.Write(p)
}

// spyWriter is a datafile.Writer that notes each chunk it is asked for.
type spyWriter struct {
	*datafile.Writer
	file    *flakyFile
	metas   []model.Meta // of every Chunk call, failed or not
	samples []int        // samples in each
}

func (w *spyWriter) Chunk(p *model.Profile) error {
	w.metas = append(w.metas, p.Meta)
	w.samples = append(w.samples, len(p.Samples))
	return w.Writer.Chunk(p)
}

// TestChunker: the data file gets no chunk before ChunkEvery, then one per
// interval counted from the last chunk, each holding the recording so far
// and the samples since the last; a write error ends the chunks (the
// loop stops the recording then), and finish writes the final chunk.
func TestChunker(t *testing.T) {
	const ms = time.Millisecond
	for _, c := range []struct {
		name  string
		every time.Duration
		ticks []int // ms since the start: the rounds
		// failFrom is the tick from which the file's writes fail (-1: never).
		failFrom int
		finish   bool
		want     []int // ms of the recording each chunk written (tried) holds
		kept     time.Duration
		stopped  string // the error the recording stops with
	}{
		{name: "no_chunk_before_chunk_every", every: 100 * ms, ticks: []int{10, 50, 99}, failFrom: -1},
		{name: "one_chunk_per_interval", every: 100 * ms, ticks: []int{100, 150, 199, 200, 299, 300}, failFrom: -1,
			want: []int{100, 200, 300}, kept: 300 * ms},
		{name: "interval_counts_from_the_last_chunk", every: 100 * ms, ticks: []int{120, 219, 220, 300, 330}, failFrom: -1,
			want: []int{120, 220, 330}, kept: 330 * ms},
		{name: "late_round_writes_one_chunk", every: 100 * ms, ticks: []int{450, 500, 550}, failFrom: -1,
			want: []int{450, 550}, kept: 550 * ms},
		{name: "final_chunk_on_finish", every: 100 * ms, ticks: []int{100, 180}, failFrom: -1, finish: true,
			want: []int{100}, kept: 100 * ms},
		{name: "finish_without_chunks", every: 100 * ms, ticks: []int{30}, failFrom: -1, finish: true},
		{name: "write_error_stops_further_chunks", every: 100 * ms, ticks: []int{100, 200, 300, 400}, failFrom: 1,
			want: []int{100, 200}, kept: 100 * ms, stopped: "recording stopped: writing data file: no space left on device (out.sonde keeps the first 100ms)"},
		{name: "write_error_before_any_chunk", every: 100 * ms, ticks: []int{50, 100, 200}, failFrom: 0,
			want: []int{100}, stopped: "recording stopped: writing header: no space left on device (nothing was kept)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t0 := time.Unix(1000, 0)
			file := &flakyFile{}
			spy := &spyWriter{Writer: datafile.NewWriter(file), file: file}
			s := testSession()
			s.began, s.chunks = t0, newChunker(spy, c.every, t0)
			s.lost = 7
			for i, tick := range c.ticks {
				file.fail = c.failFrom >= 0 && i >= c.failFrom
				s.b.SampleLocs(0, 0, nil, 1) // one sample a round
				s.chunk(t0.Add(time.Duration(tick) * ms))
			}
			checkChunks(t, spy, c.want, c.ticks)
			if s.chunks.kept != c.kept {
				t.Errorf("kept %s, want %s", s.chunks.kept, c.kept)
			}
			remove, err := s.chunks.stopped("out.sonde")
			if got := errString(err); got != c.stopped || s.chunks.failed() != (c.stopped != "") {
				t.Errorf("stopped: %q (failed %v), want %q", got, s.chunks.failed(), c.stopped)
			}
			if err != nil && !errors.Is(err, errDiskFull) {
				t.Errorf("stopped: %v does not wrap the write error", err)
			}
			if remove != (err != nil && c.kept == 0) {
				t.Errorf("remove %v with %s kept", remove, c.kept)
			}
			if c.finish {
				checkFinish(t, s, file, len(c.want))
			}
		})
	}
}

// checkChunks checks each chunk's duration and lost count, and that it
// holds the samples since the last chunk written (one a tick).
func checkChunks(t *testing.T, spy *spyWriter, want, ticks []int) {
	t.Helper()
	var got []int
	for _, m := range spy.metas {
		got = append(got, int(time.Duration(m.DurationNS)/time.Millisecond))
		if m.Lost != 7 || !m.Unsymbolized {
			t.Errorf("chunk at %d ms: lost %d, unsymbolized %v; want 7, true", got[len(got)-1], m.Lost, m.Unsymbolized)
		}
	}
	if !slicesEqual(got, want) {
		t.Fatalf("chunks at %v ms, want %v", got, want)
	}
	last := 0
	for i, at := range got {
		n := 0
		for _, tick := range ticks {
			if tick > last && tick <= at {
				n++
			}
		}
		if spy.samples[i] != n {
			t.Errorf("chunk %d holds %d samples, want %d", i, spy.samples[i], n)
		}
		last = at
	}
}

// checkFinish writes the final chunk and reads the file back: complete,
// not cut, and holding every chunk.
func checkFinish(t *testing.T, s *session, file *flakyFile, chunks int) {
	t.Helper()
	cut, err := datafile.Read(bytes.NewReader(file.Bytes()))
	if chunks > 0 && (err != nil || !hasCutWarning(cut)) {
		t.Errorf("before finish: %v, warnings %v; want a cut recording", err, cut.Meta.Warnings)
	}
	if err := s.chunks.finish(s.b.Finish(s.meta)); err != nil {
		t.Fatal(err)
	}
	p, err := datafile.Read(bytes.NewReader(file.Bytes()))
	if err != nil || hasCutWarning(p) {
		t.Fatalf("after finish: %v, warnings %v; want a complete recording", err, p.Meta.Warnings)
	}
	offs, err := datafile.ChunkOffsets(bytes.NewReader(file.Bytes()))
	if err != nil || len(offs)-1 != chunks+1 {
		t.Errorf("%d chunks (%v), want %d and the final one", len(offs)-1, err, chunks)
	}
}

func hasCutWarning(p *model.Profile) bool {
	for _, w := range p.Meta.Warnings {
		if strings.HasPrefix(w, datafile.CutWarning) {
			return true
		}
	}
	return false
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestChunkerWithoutFile: without Output, no chunk is ever due.
func TestChunkerWithoutFile(t *testing.T) {
	t0 := time.Unix(1000, 0)
	c := newChunker(nil, 100*time.Millisecond, t0)
	for _, d := range []time.Duration{0, 100 * time.Millisecond, time.Hour} {
		if c.due(t0.Add(d)) {
			t.Errorf("a chunk is due at %s without a file", d)
		}
	}
	if remove, err := c.stopped(""); remove || err != nil {
		t.Errorf("stopped = %v, %v; want false, nil", remove, err)
	}
}

// TestNewSessionDefaults: ChunkEvery defaults to 100 ms, the ring to 128
// pages, the events to cpu-clock; what is given is kept.
func TestNewSessionDefaults(t *testing.T) {
	for _, c := range []struct {
		name       string
		o          Options
		chunkEvery time.Duration
		ringPages  int
	}{
		{"zero_options", Options{}, 100 * time.Millisecond, 128},
		{"negative_chunk_every", Options{ChunkEvery: -time.Second}, 100 * time.Millisecond, 128},
		{"given_values_kept", Options{ChunkEvery: time.Second, RingPages: 8}, time.Second, 8},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSession(c.o)
			if s.o.ChunkEvery != c.chunkEvery || s.o.RingPages != c.ringPages {
				t.Errorf("ChunkEvery %s, RingPages %d; want %s, %d", s.o.ChunkEvery, s.o.RingPages, c.chunkEvery, c.ringPages)
			}
			if len(s.o.Events) != 1 || s.o.Events[0].String() != "cpu-clock" {
				t.Errorf("events %v, want cpu-clock", s.o.Events)
			}
		})
	}
}

// TestRunEnds: the loop ends, and says why, when ctx is cancelled or the
// duration passes; a failed chunk write ends it too, without a reason
// (the recording stops, finish reports the error). No events are open:
// each round waits the 100 ms poll timeout.
func TestRunEnds(t *testing.T) {
	for _, c := range []struct {
		name      string
		cancel    bool
		duration  bool
		failWrite bool
		why       runctl.Reason
	}{
		{name: "ctx_cancelled", cancel: true, why: runctl.Cancelled},
		{name: "duration_passed", duration: true, why: runctl.Deadline},
		{name: "write_error_stops_the_recording", failWrite: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := testSession()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.cancel {
				cancel()
			}
			if c.duration {
				s.deadline = time.Now()
			}
			file := &flakyFile{fail: c.failWrite}
			if c.failWrite {
				// A chunk is due at every round.
				s.chunks = newChunker(datafile.NewWriter(file), time.Nanosecond, time.Now())
			} else {
				s.chunks = newChunker(nil, time.Nanosecond, time.Now())
			}
			s.began = time.Now()
			done := make(chan struct{})
			go func() { s.run(ctx); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("run did not end")
			}
			// The span ends when stop disables the events, not before.
			if !s.end.IsZero() {
				t.Errorf("end set by the loop: %v", s.end)
			}
			s.stop()
			if s.why != c.why || s.end.IsZero() || s.chunks.failed() != c.failWrite {
				t.Errorf("why %v, end %v, failed %v; want %v, set, %v", s.why, s.end, s.chunks.failed(), c.why, c.failWrite)
			}
			s.close()
		})
	}
}

// TestPollTimeout: a round waits at most until the duration ends, so the
// events are disabled when it ends, not up to 100 ms later (record -d 0.2
// held 309 to 354 samples at 997 Hz).
func TestPollTimeout(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		name string
		left time.Duration // until the deadline (0: none)
		want int
	}{
		{"no_duration", 0, 100},
		{"far", 5 * time.Second, 100},
		{"within_a_round", 30 * time.Millisecond, 30},
		{"part_of_a_ms", 300 * time.Microsecond, 1},
		{"passed", -time.Millisecond, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &session{}
			if c.left != 0 {
				s.deadline = now.Add(c.left)
			}
			if got := s.pollTimeout(now); got != c.want {
				t.Errorf("poll %d ms, want %d", got, c.want)
			}
		})
	}
}

// TestChunksForgetStacks: stacks are forgotten once a chunk holds them,
// and the file still reads back every sample's stack, stacks seen again
// in later chunks and after the final chunk's rewrite included.
func TestChunksForgetStacks(t *testing.T) {
	t0 := time.Unix(1000, 0)
	file := &flakyFile{}
	s := testSession()
	s.began, s.chunks = t0, newChunker(datafile.NewWriter(file), 100*time.Millisecond, t0)
	loc := func(name string) int32 { return s.b.SyntheticLoc(name) }
	rounds := [][]string{{"a", "main"}, {"b", "main"}, {"a", "main"}, {"c", "b", "main"}}
	var want []string
	for i, names := range rounds {
		var locs []int32
		for _, n := range names {
			locs = append(locs, loc(n))
		}
		s.b.SampleLocs(1, 1, locs, 1)
		want = append(want, strings.Join(names, ";"))
		s.chunk(t0.Add(time.Duration(i+1) * 100 * time.Millisecond))
	}
	if p := s.b.Partial(s.meta); len(p.Stacks) != 0 || p.StackBase != 3 {
		t.Errorf("after the chunks: %d stacks kept from %d, want none from 3", len(p.Stacks), p.StackBase)
	}
	if err := s.chunks.finish(s.b.Finish(s.meta)); err != nil {
		t.Fatal(err)
	}
	p, err := datafile.Read(bytes.NewReader(file.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, smp := range p.Samples {
		var names []string
		for _, l := range p.Stacks[smp.Stack] {
			names = append(names, p.Funcs[p.Locs[l].Func].Name)
		}
		got = append(got, strings.Join(names, ";"))
	}
	if strings.Join(got, " ") != strings.Join(want, " ") || len(p.Stacks) != 3 {
		t.Errorf("read back %v in %d stacks, want %v in 3", got, len(p.Stacks), want)
	}
}
