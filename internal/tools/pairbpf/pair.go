// Package pairbpf measures the latency between two tracepoints in the
// kernel: a BPF program on each reads the key fields at their tracefs
// offsets, keeps start times in a hash map and sends every match through a
// ring buffer. It sees events that perf sampling cannot deliver (on some
// kernels block_rq_complete is counted but never sampled from interrupt
// context) and costs one map update per event.
package pairbpf

import (
	"context"
	"fmt"
	"github.com/sonde-dev/sonde/internal/collect/cgroup"
	"strings"
	"time"

	"github.com/sonde-dev/sonde/internal/collect/bpfmaps"
	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/collect/events"
	"github.com/sonde-dev/sonde/internal/collect/runctl"
	"github.com/sonde-dev/sonde/internal/collect/tracefs"
	"github.com/sonde-dev/sonde/internal/model/histogram"
	"github.com/sonde-dev/sonde/internal/tools/latency"
)

// Options configure one live measurement.
type Options struct {
	Start, End events.Spec
	Key        []string
	Per        string // "", "comm", "pid" or a start-event field
	Aux        string // one more start-event field to keep per pair (Pair.Aux)
	Pid        int
	Cgroup     *cgroup.Target // only events of its tasks (nil: every task)
	Command    []string
	Duration   time.Duration
	Events     bool // keep every pair
	// Mid, when it is an event (Format set), makes a chain Start → Mid →
	// End keyed by the same fields: pairs are timed Mid → End and carry
	// the Start → Mid time (Pair.Before) of the same entry; a Mid without
	// a Start still makes a pair, with Per and Aux read from the Mid.
	Mid events.Spec
	// OnPair, when set, gets every pair as it completes, on the ring
	// reader's goroutine.
	OnPair func(latency.Pair)
}

// Counters the program kept (each tag names its member of enum
// pair_counter, bpfskel.Counters).
type Counters struct {
	Starts    uint64 `counter:"PAIR_STARTS"`
	Ends      uint64 `counter:"PAIR_ENDS"`
	Unmatched uint64 `counter:"PAIR_UNMATCHED"` // an end without a start (began before tracing)
	Drops     uint64 `counter:"PAIR_DROPS"`     // ring buffer full: the pair is lost
	Full      uint64 `counter:"PAIR_FULL"`      // start map full: the start is lost
}

// Result of a live run.
type Result struct {
	*latency.Result
	Counters Counters
	Elapsed  time.Duration
	ExitCode int
}

func pickInt(f *tracefs.Format, name, ev string) (tracefs.Field, error) {
	fd, ok := f.Field(name)
	if !ok {
		return fd, fmt.Errorf("event %s has no field %q (fields: %s)", ev, name, strings.Join(f.Names(), ", "))
	}
	if fd.Kind != tracefs.KindInt || fd.Size > 8 {
		return fd, fmt.Errorf("field %s of %s is not an integer: only integer fields can be keys in the kernel", name, ev)
	}
	return fd, nil
}

// Run traces until the command exits, the duration passes or a signal.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Start.Format == nil || o.End.Format == nil {
		return nil, fmt.Errorf("--start and --end must be tracepoints or probe events")
	}
	if o.Start.String() == o.End.String() {
		return nil, fmt.Errorf("start and end are the same event")
	}
	if len(o.Key) > 4 {
		return nil, fmt.Errorf("at most 4 key fields")
	}
	var sk, ek []tracefs.Field
	for _, k := range o.Key {
		a, err := pickInt(o.Start.Format, k, o.Start.String())
		if err != nil {
			return nil, err
		}
		b, err := pickInt(o.End.Format, k, o.End.String())
		if err != nil {
			return nil, err
		}
		sk, ek = append(sk, a), append(ek, b)
	}
	var groupField, auxField tracefs.Field
	switch o.Per {
	case "", "comm", "pid":
	default:
		var err error
		if groupField, err = pickValue(o.Start.Format, o.Per, o.Start.String()); err != nil {
			return nil, err
		}
	}
	if o.Aux != "" {
		var err error
		if auxField, err = pickValue(o.Start.Format, o.Aux, o.Start.String()); err != nil {
			return nil, err
		}
	}
	chain := o.Mid.Format != nil
	var mk []tracefs.Field
	var midGroup, midAux tracefs.Field
	if chain {
		for _, k := range o.Key {
			m, err := pickInt(o.Mid.Format, k, o.Mid.String())
			if err != nil {
				return nil, err
			}
			mk = append(mk, m)
		}
		var err error
		if groupField.Size > 0 {
			if midGroup, err = pickValue(o.Mid.Format, o.Per, o.Mid.String()); err != nil {
				return nil, err
			}
		}
		if o.Aux != "" {
			if midAux, err = pickValue(o.Mid.Format, o.Aux, o.Mid.String()); err != nil {
				return nil, err
			}
		}
	}
	var so, ss, eo, es, mo, ms [4]uint32
	for i := range sk {
		so[i], ss[i] = uint32(sk[i].Offset), uint32(sk[i].Size)
		eo[i], es[i] = uint32(ek[i].Offset), uint32(ek[i].Size)
		if chain {
			mo[i], ms[i] = uint32(mk[i].Offset), uint32(mk[i].Size)
		}
	}
	tp := func(ev events.Spec, prog string) bpfskel.Hook {
		sys, name, _ := strings.Cut(ev.String(), ":")
		return bpfskel.TracepointHook(sys, name, prog)
	}
	// The end first: a start without its end program could fill the map.
	hooks := []bpfskel.Hook{tp(o.End, pairProgOnEnd)}
	hasMid := uint32(0)
	if chain {
		hooks, hasMid = append(hooks, tp(o.Mid, pairProgOnMid)), 1
	}
	hooks = append(hooks, tp(o.Start, pairProgOnStart))
	var maps pairMaps
	s, err := bpfskel.Open(bpfskel.Tool{
		Name: "pairing", Spec: loadPair, Maps: &maps, Command: o.Command, Cgroup: o.Cgroup,
		Consts: map[string]any{
			pairVarNkeys: uint32(len(sk)), pairVarStartOff: so, pairVarStartSize: ss, pairVarEndOff: eo, pairVarEndSize: es,
			pairVarGroupOff: uint32(groupField.Offset), pairVarGroupSize: readSize(groupField), pairVarTargetPid: uint32(o.Pid),
			pairVarAuxOff: uint32(auxField.Offset), pairVarAuxSize: readSize(auxField),
			pairVarHasMid: hasMid, pairVarMidOff: mo, pairVarMidSize: ms,
			// The name costs a copy per event: read it only for a view that shows it.
			pairVarWantComm:    o.Per == "comm" || o.Per == "pid" || o.Events || o.OnPair != nil,
			pairVarMidGroupOff: uint32(midGroup.Offset), pairVarMidGroupSize: readSize(midGroup),
			pairVarMidAuxOff: uint32(midAux.Offset), pairVarMidAuxSize: readSize(midAux),
		},
		Hooks: hooks,
	})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	res := &Result{Result: &latency.Result{Groups: map[string]*histogram.Hist{}}}
	err = s.ReadRing(maps.Events, func(raw []byte) {
		if e := bpfskel.View[pairPairEvent](raw); e != nil {
			res.add(e, sk, groupField, auxField, o)
		}
	})
	if err != nil {
		return nil, err
	}
	run, err := s.Run(ctx, runctl.Options{Duration: o.Duration})
	if err != nil {
		return nil, err
	}
	res.Elapsed, res.ExitCode = run.Elapsed, run.ExitCode
	if err := maps.Counters.Read(&res.Counters); err != nil {
		return nil, err
	}
	res.Starts, res.Ends, res.Unmatched = int(res.Counters.Starts), int(res.Counters.Ends+res.Counters.Unmatched), int(res.Counters.Unmatched)
	return res, nil
}

// noBefore is PAIR_NO_BEFORE: a chain's start was not seen.
const noBefore = ^uint64(0)

func (r *Result) add(e *pairPairEvent, keys []tracefs.Field, group, aux tracefs.Field, o Options) {
	comm := bpfmaps.CString(e.Comm[:])
	var ks []string
	for i, f := range keys {
		ks = append(ks, formatValue(f, e.Key[i]))
	}
	key := strings.Join(ks, ",")
	if len(keys) == 0 {
		key = fmt.Sprintf("tid %d", e.Tid)
	}
	g := ""
	switch o.Per {
	case "comm":
		g = comm
	case "pid":
		g = fmt.Sprintf("%d (%s)", e.Pid, comm)
	case "":
	default:
		g = o.Per + " " + formatValue(group, e.Group)
	}
	h := r.Groups[g]
	if h == nil {
		h = &histogram.Hist{}
		r.Groups[g] = h
	}
	h.Add(e.LatencyNs)
	if o.Events || o.OnPair != nil {
		p := latency.Pair{Key: key, Group: g, StartNS: e.StartNs, Latency: e.LatencyNs, Comm: comm, Pid: int32(e.Pid)}
		if o.Aux != "" {
			p.Aux = formatValue(aux, e.Aux)
		}
		if o.Mid.Format != nil && e.BeforeNs != noBefore {
			b := e.BeforeNs
			p.Before = &b
		}
		if o.Events {
			r.Pairs = append(r.Pairs, p)
		}
		if o.OnPair != nil {
			o.OnPair(p)
		}
	}
}

// pickValue accepts integer fields and short strings (their first 8 bytes
// are kept), for groups and extra values.
func pickValue(f *tracefs.Format, name, ev string) (tracefs.Field, error) {
	fd, ok := f.Field(name)
	if !ok {
		return fd, fmt.Errorf("event %s has no field %q (fields: %s)", ev, name, strings.Join(f.Names(), ", "))
	}
	if fd.Kind == tracefs.KindString || (fd.Kind == tracefs.KindInt && fd.Size <= 8) {
		return fd, nil
	}
	return fd, fmt.Errorf("field %s of %s is neither an integer nor a short string", name, ev)
}

// readSize is how many bytes the program reads for a field (0: none).
func readSize(f tracefs.Field) uint32 {
	if f.Size == 0 {
		return 0
	}
	if f.Kind == tracefs.KindString || f.Size > 8 {
		return 8
	}
	return uint32(f.Size)
}

func formatValue(f tracefs.Field, v uint64) string {
	var b [8]byte
	for i := range b {
		b[i] = byte(v >> (8 * i))
	}
	g := f
	g.Offset = 0
	if g.Kind == tracefs.KindString && g.Size > 8 {
		g.Size = 8
	}
	return g.String(b[:])
}
