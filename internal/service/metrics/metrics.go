// Package metrics serves sonde's exact counters to Prometheus (`sonde agent
// --metrics ADDR`): CPU seconds per task, comm and cgroup from cputime's
// sched_switch accounting, run-queue and block I/O latency histograms,
// syscall counts, every lost-event counter of those sources, and the
// agent's own CPU and memory (client_golang's process collector).
//
// cputime is read at each scrape, so a scrape sees the time up to that
// instant. The other sources run in windows (--metrics-window): each
// window's totals are added when it ends, and the few milliseconds between
// windows while programs reattach are counted in
// sonde_window_gap_seconds_total rather than hidden.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sonde-dev/sonde/internal/collect/runctl"
	"github.com/sonde-dev/sonde/internal/tools/cputime"
)

// Options configure the exporter.
type Options struct {
	Addr   string        // where /metrics is served
	Window time.Duration // length of the syscount and block I/O windows
	Log    *log.Logger
	Extra  []prometheus.Collector // more of the agent's own counters
}

// DefaultWindow is how often the windowed sources add their totals.
const DefaultWindow = 15 * time.Second

// Serve loads the sources, serves /metrics until ctx ends and then unloads
// everything. A source the kernel cannot run is logged once and reported as
// sonde_source_up 0; the others go on.
func Serve(ctx context.Context, o Options, ready func(net.Addr)) error {
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.Log == nil {
		o.Log = log.Default()
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{Namespace: "sonde_agent"}),
		collectors.NewGoCollector())
	up := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sonde_source_up",
		Help: "1 when the source runs, 0 when the kernel refused it (the agent's log says why)."}, []string{"source"})
	reg.MustRegister(up)
	reg.MustRegister(o.Extra...)

	tr, err := cputime.Start()
	if err != nil {
		o.Log.Printf("metrics: CPU time per task unavailable: %v", err)
		up.WithLabelValues("cputime").Set(0)
	} else {
		defer tr.Close()
		reg.MustRegister(newCPUCollector(tr))
		up.WithLabelValues("cputime").Set(1)
	}
	w := newWindowed(reg)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for _, s := range w.sources(o.Window) {
		wg.Go(func() {
			if err := s.run(ctx); err != nil && ctx.Err() == nil {
				o.Log.Printf("metrics: %s unavailable: %v", s.name, err)
				up.WithLabelValues(s.name).Set(0)
			}
		})
		up.WithLabelValues(s.name).Set(1)
	}

	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("listening for metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: o.Log, MaxRequestsInFlight: 4}))
	srv := &http.Server{Handler: hostCheck(ln.Addr(), mux), ReadHeaderTimeout: 10 * time.Second}
	if ready != nil {
		ready(ln.Addr())
	}
	runctl.Ready()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	o.Log.Printf("metrics on http://%s/metrics", ln.Addr())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving metrics: %w", err)
	}
	return nil
}

// hostCheck refuses, when the metrics are bound to loopback, requests
// whose Host is not a loopback name: a web page the user opens could
// otherwise read them through DNS rebinding (its own name resolving to
// 127.0.0.1). Bound to another address the metrics are meant for
// scrapers on the network, which name the machine however their
// configuration does, so any Host is served: whoever reaches the port
// reads them (docs/remote.md).
func hostCheck(addr net.Addr, h http.Handler) http.Handler {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || !tcp.IP.IsLoopback() {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) {
			http.Error(w, "metrics bound to loopback answer loopback names only (Host "+strconv.Quote(r.Host)+")", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// loopbackHost says whether a Host header names this machine's loopback:
// localhost or a loopback address, with or without a port.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
