package why

import (
	"sync"
	"time"

	"github.com/cilium/ebpf"

	"github.com/sonde-dev/sonde/internal/collect/bpfmaps"
	"github.com/sonde-dev/sonde/internal/model/jsonout"
)

// The states of a timeline, in the order of a slice's values.
const (
	tlOn = iota // on a CPU (with interrupts)
	tlRunq
	tlThrottled
	tlBlocked
	tlStates
)

// Timeline is each target thread's state over the window, in slices: how
// long it was on a CPU, runnable, throttled and blocked in each. The
// program keeps sums, not events; user space reads the thread table a
// bounded number of times during the run and takes the differences.
type Timeline struct {
	// EdgesNS are the slices' edges in ns since the window opened: slice
	// i is [EdgesNS[i], EdgesNS[i+1]); the last edge is the window's end.
	EdgesNS []uint64       `json:"edges_ns"`
	Threads []ThreadStates `json:"threads"`
}

// ThreadStates is one thread's time in each slice, by state, in ns; a
// slice's four values add up to the part of it the thread lived, and
// each list adds up to the thread's budget (on_cpu_ns includes irq_ns).
type ThreadStates struct {
	jsonout.Task
	OnCPUNS     []uint64 `json:"on_cpu_ns"`
	RunnableNS  []uint64 `json:"runnable_ns"`
	ThrottledNS []uint64 `json:"throttled_ns"`
	BlockedNS   []uint64 `json:"blocked_ns"`
}

// sample is one reading of the thread table: per tid, ns so far in each
// state, the interval in progress counted up to t.
type sample struct {
	t   uint64
	cum map[uint32][tlStates]uint64
}

// sampler reads the thread table every period while the window is open,
// keeping between slices and 2×slices readings: when full it drops every
// other one (the sums make that exact) and doubles its period.
type sampler struct {
	m       *ebpf.Map
	slices  int
	period  time.Duration
	rd      bpfmaps.Reader[uint32, whyWhyThread]
	samples []sample // written by the sampling goroutine only, read after stop
	done    chan struct{}
	wg      sync.WaitGroup
}

func newSampler(m *ebpf.Map, slices int, d time.Duration) *sampler {
	period := 100 * time.Millisecond
	if d > 0 {
		period = max(d/time.Duration(slices), 10*time.Millisecond)
	}
	return &sampler{m: m, slices: slices, period: period, done: make(chan struct{})}
}

func (s *sampler) start() {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			select {
			case <-s.done:
				return
			case <-time.After(s.period):
				s.take()
			}
		}
	}()
}

// stop ends the readings; those from stopNS on are dropped (the window
// had closed).
func (s *sampler) stop(stopNS uint64) []sample {
	close(s.done)
	s.wg.Wait()
	out := s.samples[:0]
	for _, x := range s.samples {
		if x.t < stopNS {
			out = append(out, x)
		}
	}
	return out
}

func (s *sampler) take() {
	t := now()
	x := sample{t: t, cum: map[uint32][tlStates]uint64{}}
	err := s.rd.Each(s.m, func(tid uint32, th whyWhyThread) {
		var c [tlStates]uint64
		c[tlOn], c[tlRunq], c[tlThrottled], c[tlBlocked] = th.OnCpuNs+th.IrqNs, th.RunqNs, th.ThrottledNs, th.BlockedNs
		if th.End == 0 && t > th.Ts {
			switch th.State {
			case whyOn:
				c[tlOn] += t - th.Ts
			case whyRunq:
				if th.Throttled != 0 {
					c[tlThrottled] += t - th.Ts
				} else {
					c[tlRunq] += t - th.Ts
				}
			case whyBlocked:
				c[tlBlocked] += t - th.Ts
			}
		}
		x.cum[tid] = c
	})
	if err != nil {
		return // a reading missed: the next slice is longer
	}
	s.samples = append(s.samples, x)
	if len(s.samples) >= 2*s.slices {
		kept := s.samples[:0]
		for i := 1; i < len(s.samples); i += 2 {
			kept = append(kept, s.samples[i])
		}
		s.samples = kept
		s.period *= 2
	}
}

// buildTimeline turns the readings into slices for d's threads; the last
// edge is the stop, where each thread's sums are its final budget.
func buildTimeline(d *Data, samples []sample) *Timeline {
	tl := &Timeline{EdgesNS: []uint64{0}}
	edges := []uint64{d.StartNS}
	for _, x := range samples {
		if x.t > d.StartNS && x.t < d.StopNS {
			edges = append(edges, x.t)
			tl.EdgesNS = append(tl.EdgesNS, x.t-d.StartNS)
		}
	}
	edges = append(edges, d.StopNS)
	tl.EdgesNS = append(tl.EdgesNS, d.StopNS-d.StartNS)
	for _, th := range d.Threads {
		cum := make([][tlStates]uint64, 0, len(edges))
		cum = append(cum, [tlStates]uint64{})
		for _, x := range samples {
			if x.t > d.StartNS && x.t < d.StopNS {
				// Entries are never deleted: one missing was not there yet.
				c, ok := x.cum[uint32(th.TID)]
				if !ok {
					c = cum[len(cum)-1]
				}
				cum = append(cum, c)
			}
		}
		cum = append(cum, [tlStates]uint64{th.OnCPUNS + th.IRQNS, th.RunnableNS, th.ThrottledNS, th.BlockedNS})
		per := slicesOf(edges, cum, th.beginNS, th.endNS)
		ts := ThreadStates{Task: th.Task}
		for _, v := range per {
			ts.OnCPUNS = append(ts.OnCPUNS, v[tlOn])
			ts.RunnableNS = append(ts.RunnableNS, v[tlRunq])
			ts.ThrottledNS = append(ts.ThrottledNS, v[tlThrottled])
			ts.BlockedNS = append(ts.BlockedNS, v[tlBlocked])
		}
		tl.Threads = append(tl.Threads, ts)
	}
	return tl
}

// slicesOf splits a thread's time between edges by state from its sums
// at each edge (cum[i] at edges[i]; the last is its budget). A slice's
// differences should add up to the part of it the thread lived; they do
// not where the program settled time late (a thread first seen after the
// start has its state until then settled at its first event; a switch
// it missed is settled at the next). The excess of such a slice is moved
// back to the earlier slices left short (moveBack); what is still short at the end is given to the
// thread's largest state. Every slice then adds up to its lived part, and
// every state to the budget, but for the rare case of more time settled
// than the slices left short could take (then the budget is kept to the
// slices' lengths).
func slicesOf(edges []uint64, cum [][tlStates]uint64, begin, end uint64) [][tlStates]uint64 {
	n := len(edges) - 1
	out := make([][tlStates]uint64, n)
	short := make([]uint64, n) // ns a slice lacks
	for i := 0; i < n; i++ {
		life := overlap(edges[i], edges[i+1], begin, end)
		var sum uint64
		for k := 0; k < tlStates; k++ {
			if cum[i+1][k] > cum[i][k] {
				out[i][k] = cum[i+1][k] - cum[i][k]
				sum += out[i][k]
			}
		}
		switch {
		case sum < life:
			short[i] = life - sum
		case sum > life:
			moveBack(out, short, i, sum-life)
		}
	}
	var total [tlStates]uint64
	for _, v := range out {
		for k := range v {
			total[k] += v[k]
		}
	}
	big := 0
	for k := range total {
		if total[k] > total[big] {
			big = k
		}
	}
	for i := range out {
		out[i][big] += short[i]
	}
	return out
}

// moveBack moves excess ns of slice i to the slices before it that are
// short, latest first, taken from slice i's largest state first (the time
// settled late is the bulk of one state: the thread's state before its
// first event, or across a switch missed); what no slice takes is cut off
// slice i the same way (the slice keeps its length).
func moveBack(out [][tlStates]uint64, short []uint64, i int, excess uint64) {
	take := func(n uint64, to *[tlStates]uint64) uint64 {
		var got uint64
		for got < n {
			big := 0
			for k := range out[i] {
				if out[i][k] > out[i][big] {
					big = k
				}
			}
			cut := min(n-got, out[i][big])
			if cut == 0 {
				break
			}
			out[i][big] -= cut
			if to != nil {
				to[big] += cut
			}
			got += cut
		}
		return got
	}
	for j := i - 1; j >= 0 && excess > 0; j-- {
		if short[j] == 0 {
			continue
		}
		got := take(min(short[j], excess), &out[j])
		short[j] -= got
		excess -= got
	}
	take(excess, nil)
}

func overlap(a0, a1, b0, b1 uint64) uint64 {
	lo, hi := max(a0, b0), min(a1, b1)
	if hi <= lo {
		return 0
	}
	return hi - lo
}
