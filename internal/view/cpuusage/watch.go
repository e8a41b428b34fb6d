package cpuusage

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sonde-dev/sonde/internal/collect/runctl"
	"github.com/sonde-dev/sonde/internal/format/stream"
	"github.com/sonde-dev/sonde/internal/tools/cputime"
)

// WatchOptions configure cputime's loop.
type WatchOptions struct {
	Options
	Interval time.Duration
	Duration time.Duration // 0: until ctx ends
	Count    int           // reports before stopping (0: no limit)
	JSON     bool          // JSON lines instead of text
	SampleHz uint64        // sample cpu-clock at this rate beside the exact figure (0: don't)
	Stream   string        // also send each report to udp://HOST:PORT or tcp://HOST:PORT
}

// Watch writes a report to w every interval until the duration passes,
// Count reports are out or ctx ends (then with a last, shorter report).
// Streaming failures are reported on errw and do not stop the loop.
func Watch(ctx context.Context, o WatchOptions, w, errw io.Writer) error {
	var sender *stream.Sender
	if o.Stream != "" {
		var err error
		if sender, err = stream.Dial(o.Stream); err != nil {
			return err
		}
		defer sender.Close()
	}
	tr, err := cputime.Start()
	if err != nil {
		return err
	}
	defer tr.Close()
	var sampler *cputime.Sampler
	if o.SampleHz > 0 {
		if sampler, err = cputime.NewSampler(o.SampleHz); err != nil {
			return err
		}
		defer sampler.Close()
	}
	host, _ := os.Hostname()
	prev, err := tr.Snapshot()
	if err != nil {
		return err
	}
	if sampler != nil {
		sampler.Take() // start the estimate where the exact figure starts
	}
	clock := runctl.NewClock(o.Duration, o.Interval)
	defer clock.Stop()
	for n := 1; ; n++ {
		last := false
		select {
		case <-clock.Tick:
		case <-clock.Deadline:
			last = true
		case <-ctx.Done():
			last = true
		}
		cur, err := tr.Snapshot()
		if err != nil {
			return err
		}
		iv := cputime.Diff(prev, cur, tr.CPUs())
		tr.Prune(prev, cur)
		prev = cur
		var samples map[uint32]uint64
		var period uint64
		if sampler != nil {
			samples, period = sampler.Take(), sampler.Period
		}
		r := New(host, time.Now(), iv, Counters{tr.Lost(), tr.Unseen()}, samples, period, o.Options)
		// One buffer per report: a datagram carries exactly one.
		var buf bytes.Buffer
		if o.JSON {
			err = r.WriteJSON(&buf)
		} else {
			r.WriteText(&buf)
		}
		if err != nil {
			return fmt.Errorf("encoding a report: %w", err)
		}
		if _, err := w.Write(buf.Bytes()); err != nil {
			return fmt.Errorf("writing a report: %w", err)
		}
		if sender != nil {
			if err := sender.Send(buf.Bytes()); err != nil {
				fmt.Fprintf(errw, "sonde: stream: %v\n", err)
			}
		}
		if last || (o.Count > 0 && n >= o.Count) {
			return nil
		}
	}
}
