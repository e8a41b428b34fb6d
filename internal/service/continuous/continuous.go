// Package continuous is sonde agent's always-on mode (`sonde agent
// --continuous`): a system-wide on-CPU profile sampled in the kernel every
// period, symbolized here, labelled per process (host, pid, executable,
// cgroup, container, service) and pushed as OpenTelemetry profiles
// (OTLP/HTTP, protobuf) to a collector or any backend that takes them.
//
// Pushing never holds up sampling: periods wait in a bounded queue; when
// the backend is away the oldest period is dropped (and counted) to make
// room, and sending retries with exponential backoff.
package continuous

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/sonde-dev/sonde/internal/collect/cgroup"
	"github.com/sonde-dev/sonde/internal/symbolize"
	"github.com/sonde-dev/sonde/internal/tools/profile"
)

// Options configure the continuous profiler.
type Options struct {
	Every  time.Duration // one profile per period
	Freq   uint64        // samples per second per CPU
	OTLP   string        // collector URL: http(s)://host:4318 (the path defaults to /v1development/profiles)
	Queue  int           // periods kept while the backend is away
	Host   string        // host.name; os.Hostname by default
	Header http.Header   // extra request headers (authorization for a hosted backend)
	Log    *log.Logger
	// Lines adds source files and lines from DWARF to the frames. Off by
	// default: profiles aggregate by function, lines are optional in
	// OTLP, and line tables cost an agent far more than symbol tables
	// (inflating .debug_* sections, a row per instruction range).
	Lines bool
	// OnProfile, when set, also gets each period's profiles (tests, stdout).
	OnProfile func(pprofile.Profiles)
}

// Defaults: 19 Hz keeps sampling far below 1% of a CPU and stays off the
// kernel's timer multiples; a minute of periods survives a collector restart.
const (
	DefaultEvery = 10 * time.Second
	DefaultFreq  = 19
	DefaultQueue = 6
	profilesPath = "/v1development/profiles"
	maxBackoff   = time.Minute
)

// Stats are the exporter's counters, also exported to Prometheus.
type Stats struct {
	Periods, Sent, Dropped, Failed uint64
}

// Profiler runs the loop; Stats may be read while it runs.
type Profiler struct {
	o     Options
	url   string
	mu    sync.Mutex
	queue [][]byte // encoded requests, oldest first
	wake  chan struct{}
	stats Stats
	retry time.Duration // the first wait after a failure
}

// New checks the options.
func New(o Options) (*Profiler, error) {
	if o.Every <= 0 {
		o.Every = DefaultEvery
	}
	if o.Freq == 0 {
		o.Freq = DefaultFreq
	}
	if o.Queue <= 0 {
		o.Queue = DefaultQueue
	}
	if o.Host == "" {
		o.Host, _ = os.Hostname()
	}
	if o.Log == nil {
		o.Log = log.Default()
	}
	p := &Profiler{o: o, wake: make(chan struct{}, 1), retry: time.Second}
	if o.OTLP != "" {
		u, err := url.Parse(o.OTLP)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("--otlp %q: want http://HOST:PORT or https://HOST:PORT[/path]", o.OTLP)
		}
		if u.Path == "" || u.Path == "/" {
			u.Path = profilesPath
		}
		p.url = u.String()
	}
	return p, nil
}

// Run profiles until ctx ends.
func (p *Profiler) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if p.url != "" {
		wg.Go(func() { p.send(ctx) })
	}
	periodNS := int64(time.Second) / int64(p.o.Freq)
	cgroups := newCgroupCache()
	_, err := profile.Run(ctx, profile.Options{Freq: p.o.Freq, User: true, Kernel: true, Interval: p.o.Every,
		Symbolizer: newSymbolizer(p.o.Lines),
		OnInterval: func(r *profile.Result) {
			prof := Convert(r.Profile, p.o.Host, periodNS, cgroups.of)
			cgroups.forgetUnused()
			p.mu.Lock()
			p.stats.Periods++
			p.mu.Unlock()
			if p.o.OnProfile != nil {
				p.o.OnProfile(prof)
			}
			if p.url != "" {
				p.enqueue(prof)
			}
		}})
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("continuous profiling: %w", err)
	}
	return nil
}

// Bounds of what the agent keeps open between periods: symbol tables of
// the objects processes still map, within a budget (estimated bytes; the
// heap holds up to twice that) that keeps the agent well under 100 MB; an
// object unmapped for three periods is closed.
const (
	symbolBudget = 16 << 20
	symbolIdle   = 3
	symbolMemo   = 4096
)

// newSymbolizer names every period's frames with the same resolvers as
// recordings, keeping objects open between periods.
func newSymbolizer(lines bool) *symbolize.Symbolizer {
	return symbolize.NewRepeated(symbolize.Kept{Budget: symbolBudget, Idle: symbolIdle, Memo: symbolMemo}, lines)
}

// enqueue encodes one period and queues it, dropping the oldest when full.
func (p *Profiler) enqueue(prof pprofile.Profiles) {
	var m pprofile.ProtoMarshaler
	b, err := m.MarshalProfiles(prof)
	if err != nil {
		p.o.Log.Printf("continuous: encoding a profile: %v", err)
		return
	}
	p.mu.Lock()
	if len(p.queue) >= p.o.Queue {
		p.queue = p.queue[1:]
		p.stats.Dropped++
	}
	p.queue = append(p.queue, b)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// send pushes queued periods in order; a failure keeps the period at the
// head and waits, doubling the wait up to a minute.
func (p *Profiler) send(ctx context.Context) {
	hc := &http.Client{Timeout: 30 * time.Second}
	backoff := p.retry
	for {
		p.mu.Lock()
		var next []byte
		if len(p.queue) > 0 {
			next = p.queue[0]
		}
		p.mu.Unlock()
		if next == nil {
			select {
			case <-ctx.Done():
				return
			case <-p.wake:
				continue
			}
		}
		err := p.post(ctx, hc, next)
		p.mu.Lock()
		var permanent *permanentError
		switch {
		case err == nil || errors.As(err, &permanent):
			if len(p.queue) > 0 && &p.queue[0][0] == &next[0] {
				p.queue = p.queue[1:]
			}
			if err == nil {
				p.stats.Sent++
				backoff = p.retry
			} else {
				p.stats.Failed++
			}
		default:
			p.stats.Failed++
		}
		p.mu.Unlock()
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			return
		}
		p.o.Log.Printf("continuous: sending to %s: %v (retrying in %s)", p.url, err, backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// permanentError is a refusal that retrying cannot fix (a 4xx other than
// 429): the period is dropped.
type permanentError struct{ msg string }

func (e *permanentError) Error() string { return e.msg }

func (p *Profiler) post(ctx context.Context, hc *http.Client, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range p.o.Header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	switch {
	case resp.StatusCode/100 == 2:
		return nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode/100 == 5:
		return fmt.Errorf("%s", resp.Status)
	default:
		return &permanentError{fmt.Sprintf("%s: %s", resp.Status, bytes.TrimSpace(msg))}
	}
}

// Stats returns the counters so far.
func (p *Profiler) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Collector exports the counters to Prometheus.
func (p *Profiler) Collector() prometheus.Collector { return (*collector)(p) }

type collector Profiler

var (
	periodsDesc = prometheus.NewDesc("sonde_continuous_periods_total", "Profiling periods completed.", nil, nil)
	sentDesc    = prometheus.NewDesc("sonde_continuous_profiles_sent_total", "Periods the OTLP backend accepted.", nil, nil)
	droppedDesc = prometheus.NewDesc("sonde_continuous_profiles_dropped_total",
		"Periods dropped, oldest first, because the queue was full while the backend was away.", nil, nil)
	failedDesc = prometheus.NewDesc("sonde_continuous_send_failures_total", "Failed attempts to send a period.", nil, nil)
)

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- periodsDesc
	ch <- sentDesc
	ch <- droppedDesc
	ch <- failedDesc
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := (*Profiler)(c).Stats()
	ch <- prometheus.MustNewConstMetric(periodsDesc, prometheus.CounterValue, float64(s.Periods))
	ch <- prometheus.MustNewConstMetric(sentDesc, prometheus.CounterValue, float64(s.Sent))
	ch <- prometheus.MustNewConstMetric(droppedDesc, prometheus.CounterValue, float64(s.Dropped))
	ch <- prometheus.MustNewConstMetric(failedDesc, prometheus.CounterValue, float64(s.Failed))
}

// cgroupCache remembers each process's cgroup between periods.
type cgroupCache struct {
	m, used map[int32]string
}

func newCgroupCache() *cgroupCache {
	return &cgroupCache{m: map[int32]string{}, used: map[int32]string{}}
}

func (c *cgroupCache) of(pid int32) string {
	cg, ok := c.m[pid]
	if !ok {
		cg, _ = cgroup.PathOf(int(pid))
	}
	c.used[pid] = cg
	return cg
}

// forgetUnused keeps only the processes of the last period.
func (c *cgroupCache) forgetUnused() {
	c.m, c.used = c.used, map[int32]string{}
}
