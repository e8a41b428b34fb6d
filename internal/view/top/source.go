// Package top is sonde's live view: hot symbols sampled system-wide beside
// exact per-task CPU time from sched_switch, refreshed every interval, on
// a full screen (tcell) or as plain text frames for pipes.
package top

import (
	"sort"
	"time"

	"github.com/sonde-dev/sonde/internal/symbolize"
	"github.com/sonde-dev/sonde/internal/tools/cputime"
	"github.com/sonde-dev/sonde/internal/tools/profile"
	"github.com/sonde-dev/sonde/internal/view/cpuusage"
)

// Frame is one refresh: hot symbols (sampled) and exact per-task CPU time
// over the last interval.
type Frame struct {
	At      time.Time
	Span    time.Duration
	Busy    []float64 // per CPU, percent
	Samples uint64
	Symbols []Symbol // most samples first
	Tasks   []cputime.Usage
}

// Symbol is one function's samples.
type Symbol struct {
	Sym, DSO string
	Kernel   bool
	Count    uint64
}

// Source produces frames.
type Source struct {
	tr    *cputime.Tracer
	live  *profile.Live // nil with tasks only
	names *symbolize.Live
	prev  cputime.Snapshot
}

// NewSource starts exact CPU accounting and, unless tasksOnly, sampling
// at hz on every CPU.
func NewSource(hz uint64, tasksOnly bool) (*Source, error) {
	s := &Source{}
	var err error
	if s.tr, err = cputime.Start(); err != nil {
		return nil, err
	}
	if !tasksOnly {
		if s.live, err = profile.StartLive(hz); err != nil {
			s.tr.Close()
			return nil, err
		}
		s.names = symbolize.NewLive()
	}
	if s.prev, err = s.tr.Snapshot(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Close stops the tracer and the sampler.
func (s *Source) Close() {
	s.tr.Close()
	if s.live != nil {
		s.live.Close()
	}
}

// Frame ends the current interval and starts the next.
func (s *Source) Frame() (*Frame, error) {
	cur, err := s.tr.Snapshot()
	if err != nil {
		return nil, err
	}
	iv := cputime.Diff(s.prev, cur, s.tr.CPUs())
	s.tr.Prune(s.prev, cur)
	s.prev = cur
	f := &Frame{At: time.Now(), Span: time.Duration(iv.EndNS - iv.StartNS), Tasks: iv.Tasks}
	for c := range iv.BusyNS {
		f.Busy = append(f.Busy, cpuusage.Pct(iv.BusyNS[c], iv.EndNS-iv.StartNS))
	}
	if s.live == nil {
		return f, nil
	}
	hits, err := s.live.Take()
	if err != nil {
		return nil, err
	}
	agg := map[[2]string]*Symbol{}
	for _, h := range hits {
		sym, dso := s.names.Name(h.Pid, h.Addr, h.Kernel)
		k := [2]string{sym, dso}
		if agg[k] == nil {
			agg[k] = &Symbol{Sym: sym, DSO: dso, Kernel: h.Kernel}
		}
		agg[k].Count += h.Count
		f.Samples += h.Count
	}
	for _, v := range agg {
		f.Symbols = append(f.Symbols, *v)
	}
	sort.Slice(f.Symbols, func(i, j int) bool {
		if f.Symbols[i].Count != f.Symbols[j].Count {
			return f.Symbols[i].Count > f.Symbols[j].Count
		}
		return f.Symbols[i].Sym < f.Symbols[j].Sym
	})
	s.names.Forget()
	return f, nil
}
