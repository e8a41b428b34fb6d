package metrics

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sonde-dev/sonde/internal/model/histogram"
	"github.com/sonde-dev/sonde/internal/tools/bio"
	"github.com/sonde-dev/sonde/internal/tools/runqlat"
	"github.com/sonde-dev/sonde/internal/tools/syscount"
)

// latencyBuckets are the upper bounds (seconds) of the exported latency
// histograms: powers of two nanoseconds from 1024 ns (about 1 µs) to 2^34
// ns (about 17 s), so each of the histogram's log2 rows [2^i, 2^(i+1))
// falls under exactly one bound.
var latencyBuckets = prometheus.ExponentialBuckets(1024/1e9, 2, 25)

// windowed holds the totals of the sources that run in windows.
type windowed struct {
	mu       sync.Mutex
	runq     *histogram.Hist   // run-queue waits, ns
	bio      *histogram.Hist   // block I/O device times (issue → complete), ns
	sysCount map[string]uint64 // calls per syscall name
	sysErr   map[string]uint64 // failed calls per syscall name
	lost     map[string]uint64 // events dropped per source
	gap      float64           // seconds not watched between windows
}

type source struct {
	name string
	run  func(ctx context.Context) error
}

func newWindowed(reg *prometheus.Registry) *windowed {
	w := &windowed{runq: &histogram.Hist{}, bio: &histogram.Hist{}, sysCount: map[string]uint64{}, sysErr: map[string]uint64{}, lost: map[string]uint64{}}
	reg.MustRegister(w)
	return w
}

// sources are the loops that feed w.
func (w *windowed) sources(window time.Duration) []source {
	return []source{
		{"runqlat", func(ctx context.Context) error {
			// runqlat drains its map every interval: one long run, no gaps.
			_, err := runqlat.Run(ctx, runqlat.Options{Interval: time.Second, OnInterval: func(g map[uint32]*histogram.Hist) {
				w.mu.Lock()
				defer w.mu.Unlock()
				for _, h := range g {
					w.runq.Merge(h)
				}
			}})
			return err
		}},
		{"biolat", func(ctx context.Context) error {
			return w.windows(ctx, window, func(ctx context.Context) error {
				res, err := bio.Run(ctx, []bio.Stage{bio.Device}, bio.Options{})
				if err != nil {
					return err
				}
				w.mu.Lock()
				defer w.mu.Unlock()
				for _, r := range res {
					for _, h := range r.Groups {
						w.bio.Merge(h)
					}
					w.lost["biolat"] += r.Counters.Drops + r.Counters.Full
				}
				return nil
			})
		}},
		{"syscount", func(ctx context.Context) error {
			return w.windows(ctx, window, func(ctx context.Context) error {
				res, err := syscount.Run(ctx, syscount.Options{})
				if err != nil {
					return err
				}
				w.mu.Lock()
				defer w.mu.Unlock()
				for _, r := range res.Rows {
					addBounded(w.sysCount, r.Name, r.Count)
					addBounded(w.sysErr, r.Name, r.Errors)
				}
				w.lost["syscount"] += res.Lost
				return nil
			})
		}},
	}
}

// windows runs one window after another until ctx ends, counting the time
// between them.
func (w *windowed) windows(ctx context.Context, window time.Duration, once func(context.Context) error) error {
	for ctx.Err() == nil {
		wctx, cancel := context.WithTimeout(ctx, window)
		start := time.Now()
		err := once(wctx)
		cancel()
		if err != nil {
			return err
		}
		w.mu.Lock()
		w.gap += max(0, time.Since(start)-window).Seconds()
		w.mu.Unlock()
	}
	return nil
}

var (
	runqDesc = prometheus.NewDesc("sonde_runqueue_latency_seconds",
		"Time tasks waited on a run queue between wakeup and running (runqlat).", nil, nil)
	bioDesc = prometheus.NewDesc("sonde_block_io_latency_seconds",
		"Block I/O device time, request issue to completion (biolat).", nil, nil)
	sysDesc = prometheus.NewDesc("sonde_syscalls_total",
		"System calls made, per syscall, system-wide (syscount).", []string{"syscall"}, nil)
	sysErrDesc = prometheus.NewDesc("sonde_syscall_errors_total",
		"System calls that returned an error, per syscall (syscount).", []string{"syscall"}, nil)
	lostDesc = prometheus.NewDesc("sonde_lost_events_total",
		"Events a source dropped (map or ring buffer full).", []string{"source"}, nil)
	gapDesc = prometheus.NewDesc("sonde_window_gap_seconds_total",
		"Time between windows of syscount and biolat while their programs reattached: not counted.", nil, nil)
)

func (w *windowed) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{runqDesc, bioDesc, sysDesc, sysErrDesc, lostDesc, gapDesc} {
		ch <- d
	}
}

func (w *windowed) Collect(ch chan<- prometheus.Metric) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch <- promHistogram(runqDesc, w.runq)
	ch <- promHistogram(bioDesc, w.bio)
	for k, v := range w.sysCount {
		ch <- prometheus.MustNewConstMetric(sysDesc, prometheus.CounterValue, float64(v), k)
		ch <- prometheus.MustNewConstMetric(sysErrDesc, prometheus.CounterValue, float64(w.sysErr[k]), k)
	}
	for _, s := range []string{"biolat", "syscount"} {
		ch <- prometheus.MustNewConstMetric(lostDesc, prometheus.CounterValue, float64(w.lost[s]), s)
	}
	ch <- prometheus.MustNewConstMetric(gapDesc, prometheus.CounterValue, w.gap)
}

// promHistogram is h as a Prometheus histogram with latencyBuckets.
func promHistogram(d *prometheus.Desc, h *histogram.Hist) prometheus.Metric {
	counts := make(map[float64]uint64, len(latencyBuckets))
	var sum float64
	for _, b := range h.Log2(histogram.NS) {
		// A log2 row [lo, hi] ns counts under every bound ≥ hi; its values
		// are taken at their middle for the sum.
		sum += float64(b.Count) * float64(b.Lo+b.Hi) / 2 / 1e9
		for _, le := range latencyBuckets {
			if float64(b.Hi)/1e9 <= le*(1+1e-9) {
				counts[le] += b.Count
			}
		}
	}
	if math.IsNaN(sum) {
		sum = 0
	}
	return prometheus.MustNewConstHistogram(d, h.Count(), sum, counts)
}
