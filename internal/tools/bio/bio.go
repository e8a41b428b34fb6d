// Package bio measures block I/O latency by stage: a request's time queued
// in the kernel (insert → issue) and at the device (issue → complete), each
// stage paired in the kernel by (dev, sector). biolat shows the stages as
// distributions; biosnoop joins them into one line per request.
package bio

import (
	"context"
	"github.com/sonde-dev/sonde/internal/collect/cgroup"
	"sync"
	"time"

	"github.com/sonde-dev/sonde/internal/collect/events"
	"github.com/sonde-dev/sonde/internal/tools/pairbpf"
)

// Stage is one pairing of block tracepoints.
type Stage struct {
	Name, Start, End string
}

var (
	Queued = Stage{"queued (insert → issue)", "block:block_rq_insert", "block:block_rq_issue"}
	Device = Stage{"device (issue → complete)", "block:block_rq_issue", "block:block_rq_complete"}
	Total  = Stage{"total (insert → complete)", "block:block_rq_insert", "block:block_rq_complete"}
)

// Options configure a run of stages.
type Options struct {
	Per    string // a start-event field to keep distributions apart by ("dev", "rwbs"), "" for none
	Aux    string // one more start-event field to keep per request
	Events bool   // keep every request, not only the distributions
	// Cgroup keeps the requests its tasks queued (nil: every request);
	// the kernel's own writeback (its flusher threads) is not theirs.
	Cgroup   *cgroup.Target
	Duration time.Duration
}

// Run pairs every stage in the kernel at the same time, so the stages of
// one request are measured together; results are in the stages' order.
// Distributions alone (no events, no field but the disk) are counted in
// the kernel by bio.bpf.c; the rest pairs tracepoints with pairbpf.
func Run(ctx context.Context, stages []Stage, o Options) ([]*pairbpf.Result, error) {
	if inKernel(stages, o) {
		return runInKernel(ctx, stages, o)
	}
	opts := make([]pairbpf.Options, len(stages))
	for i, st := range stages {
		start, err := events.Tracepoint(st.Start)
		if err != nil {
			return nil, err
		}
		end, err := events.Tracepoint(st.End)
		if err != nil {
			return nil, err
		}
		opts[i] = pairbpf.Options{Start: start, End: end, Key: []string{"dev", "sector"}, Per: o.Per, Aux: o.Aux, Events: o.Events, Duration: o.Duration, Cgroup: o.Cgroup}
	}
	res := make([]*pairbpf.Result, len(stages))
	errs := make([]error, len(stages))
	var wg sync.WaitGroup
	for i := range opts {
		wg.Go(func() { res[i], errs[i] = pairbpf.Run(ctx, opts[i]) })
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			return nil, e
		}
	}
	return res, nil
}

// Lost is how many requests a stage dropped with a map or ring buffer full.
func Lost(r *pairbpf.Result) uint64 { return r.Counters.Drops + r.Counters.Full }
