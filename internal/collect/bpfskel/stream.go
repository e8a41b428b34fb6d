package bpfskel

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/cilium/ebpf"

	"github.com/sonde-dev/sonde/internal/collect/runctl"
)

// Tally is what a tool that sends one ring record per event (the snoop
// tools) counted: the events it read, those its filters kept, and how
// long its programs ran.
type Tally struct {
	Events, Shown uint64
	Elapsed       time.Duration
}

// Summary is the start of such a tool's footer: "12 exits (3 shown) in
// 1.002s", noun naming the events.
func (t Tally) Summary(noun string) string {
	return fmt.Sprintf("%d %s (%d shown) in %s", t.Events, noun, t.Shown, t.Elapsed.Round(time.Millisecond))
}

// Streamed is the end of such a tool's run: its Tally and its program's
// counters C (what it lost, what it saw but did not send). A tool's Result
// is one (type Result bpfskel.Streamed[Lost]) with its own footer.
type Streamed[C any] struct {
	Tally
	Counts C
}

// InFlightLost are the lost counters of a stream tool that keeps each
// call's entry in flight until its exit (execsnoop, opensnoop): the members
// of sonde_maps.h's enum inflight_lost.
type InFlightLost struct {
	InFlight uint64 `counter:"LOST_INFLIGHT"` // the in-flight map was full
	Ring     uint64 `counter:"LOST_RING"`     // the ring buffer was full
}

// Footer ends such a tool's text: how many events (noun), and what was lost.
func (l InFlightLost) Footer(w io.Writer, t Tally, noun string) {
	fmt.Fprintf(w, "# %s, %d lost (in-flight map full %d, ring full %d)\n", t.Summary(noun), l.InFlight+l.Ring, l.InFlight, l.Ring)
}

// TimeHeader writes the name of the snoop tools' optional first column,
// the time of the event in seconds since boot (bcc's -T or -t).
func TimeHeader(w io.Writer, on bool) {
	if on {
		fmt.Fprintf(w, "%-14s ", "TIME(s)")
	}
}

// TimeColumn writes an event's time, ns since boot, under TimeHeader.
func TimeColumn(w io.Writer, on bool, ns uint64) {
	if on {
		fmt.Fprintf(w, "%-14.6f ", float64(ns)/1e9)
	}
}

// Stream is the run of a tool whose programs send one ring record per
// event, the C struct E, which the tool reads as its Go event X, and which
// counts what it lost in the counters C. Its fields point into the tool's
// Maps struct, which Open fills, so they are set before the maps exist.
type Stream[E, X, C any] struct {
	Ring     **ebpf.Map    // the ring buffer the events come in
	Counters **Counters    // the counters, read into the result's Counts after the run
	Duration time.Duration // 0: until ctx ends (or a signal)
	// Decode reads a record as the C struct E; nil is View[E]. It returns
	// nil for a record too short to be one, which is not counted.
	Decode func(raw []byte) *E
}

// Run opens t and, until the duration passes or ctx ends, reads each
// record as an event (event's pointer is valid only until it returns) and
// hands those keep keeps to out, as they come; then it reads the counters.
func (st Stream[E, X, C]) Run(ctx context.Context, t Tool, event func(*E) X, keep func(X) bool, out func(X)) (*Streamed[C], error) {
	decode := st.Decode
	if decode == nil {
		decode = View[E]
	}
	s, err := Open(t)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var n Tally
	err = s.ReadRing(*st.Ring, func(raw []byte) {
		e := decode(raw)
		if e == nil {
			return
		}
		n.Events++
		if x := event(e); keep(x) {
			n.Shown++
			out(x)
		}
	})
	if err != nil {
		return nil, err
	}
	r, err := s.Run(ctx, runctl.Options{Duration: st.Duration})
	if err != nil {
		return nil, err
	}
	n.Elapsed = r.Elapsed
	res := &Streamed[C]{Tally: n}
	if err := (*st.Counters).Read(&res.Counts); err != nil {
		return nil, fmt.Errorf("reading the %s's counters: %w", t.Name, err)
	}
	return res, nil
}
