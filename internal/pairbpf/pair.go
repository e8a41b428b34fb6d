// Package pairbpf measures the latency between two tracepoints in the
// kernel: a BPF program on each reads the key fields at their tracefs
// offsets, keeps start times in a hash map and sends every match through a
// ring buffer. It sees events that perf sampling cannot deliver (on some
// kernels block_rq_complete is counted but never sampled from interrupt
// context) and costs one map update per event.
package pairbpf

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/sonde-dev/sonde/internal/bpfmaps"
	"github.com/sonde-dev/sonde/internal/events"
	"github.com/sonde-dev/sonde/internal/histogram"
	"github.com/sonde-dev/sonde/internal/latency"
	"github.com/sonde-dev/sonde/internal/runctl"
	"github.com/sonde-dev/sonde/internal/tracefs"
)

// Options configure one live measurement.
type Options struct {
	Start, End events.Spec
	Key        []string
	Per        string // "", "comm", "pid" or a start-event field
	Aux        string // one more start-event field to keep per pair (Pair.Aux)
	Pid        int
	Command    []string
	Duration   time.Duration
	Events     bool // keep every pair
}

// Counters the program kept.
type Counters struct {
	Starts, Ends, Unmatched, Drops, Full uint64
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
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("raising the locked-memory limit for BPF maps: %w", err)
	}
	spec, err := loadPair()
	if err != nil {
		return nil, err
	}
	var so, ss, eo, es [4]uint32
	for i := range sk {
		so[i], ss[i] = uint32(sk[i].Offset), uint32(sk[i].Size)
		eo[i], es[i] = uint32(ek[i].Offset), uint32(ek[i].Size)
	}
	set := map[string]any{
		"nkeys": uint32(len(sk)), "start_off": so, "start_size": ss, "end_off": eo, "end_size": es,
		"group_off": uint32(groupField.Offset), "group_size": readSize(groupField), "target_pid": uint32(o.Pid),
		"aux_off": uint32(auxField.Offset), "aux_size": readSize(auxField),
	}
	for n, v := range set {
		if err := spec.Variables[n].Set(v); err != nil {
			return nil, fmt.Errorf("setting %s: %w", n, err)
		}
	}
	var objs pairObjects
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		return nil, loadError(err)
	}
	defer objs.Close()
	attach := func(ev events.Spec, prog *ebpf.Program) (link.Link, error) {
		sys, name, _ := strings.Cut(ev.String(), ":")
		l, err := link.Tracepoint(sys, name, prog, nil)
		if err != nil {
			return nil, fmt.Errorf("attaching to %s: %w", ev, err)
		}
		return l, nil
	}
	// The end first: a start without its end program could fill the map.
	le, err := attach(o.End, objs.OnEnd)
	if err != nil {
		return nil, err
	}
	defer le.Close()
	ls, err := attach(o.Start, objs.OnStart)
	if err != nil {
		return nil, err
	}
	defer ls.Close()
	rd, err := ringbuf.NewReader(objs.Events)
	if err != nil {
		return nil, fmt.Errorf("opening the ring buffer: %w", err)
	}
	res := &Result{Result: &latency.Result{Groups: map[string]*histogram.Hist{}}}
	done := make(chan struct{})
	var stopping atomic.Bool
	go func() {
		defer close(done)
		var rec ringbuf.Record
		for {
			// Short deadlines let the loop notice the stop once the ring is
			// empty (SetDeadline cannot interrupt a waiting ReadInto).
			rd.SetDeadline(time.Now().Add(100 * time.Millisecond))
			if err := rd.ReadInto(&rec); err != nil {
				if errors.Is(err, os.ErrDeadlineExceeded) {
					if stopping.Load() {
						return
					}
					continue
				}
				if errors.Is(err, ringbuf.ErrClosed) {
					return
				}
				continue
			}
			res.add(rec.RawSample, sk, groupField, auxField, o)
		}
	}()

	var child *runctl.Child
	if len(o.Command) > 0 {
		if child, err = runctl.StartChild(o.Command); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	childDone := make(chan struct{})
	var waitErr error
	if child != nil {
		if err := child.Go(); err != nil {
			child.Abort()
			return nil, err
		}
		go func() { waitErr = child.Cmd.Wait(); close(childDone) }()
	}
	var doneCh <-chan struct{}
	if child != nil {
		doneCh = childDone
	}
	if runctl.Until(ctx, o.Duration, 0, doneCh, nil) == runctl.Deadline && child != nil {
		child.Cmd.Process.Signal(syscall.SIGTERM)
	}
	if child != nil {
		<-childDone
		res.ExitCode = runctl.ExitCode(waitErr, child.Cmd.ProcessState)
	}
	res.Elapsed = time.Since(start)
	ls.Close()
	le.Close()
	// Drain what is left, then stop the reader.
	stopping.Store(true)
	<-done
	rd.Close()
	var c [5]uint64
	for i := range c {
		c[i] = bpfmaps.SumPerCPU(objs.Counters, uint32(i))
	}
	res.Counters = Counters{Starts: c[0], Ends: c[1], Unmatched: c[2], Drops: c[3], Full: c[4]}
	res.Starts, res.Ends, res.Unmatched = int(c[0]), int(c[1]+c[2]), int(c[2])
	return res, nil
}

func (r *Result) add(raw []byte, keys []tracefs.Field, group, aux tracefs.Field, o Options) {
	var e pairPairEvent
	if len(raw) < 88 {
		return
	}
	le := binary.LittleEndian
	for i := range e.Key {
		e.Key[i] = le.Uint64(raw[8*i:])
	}
	e.StartNs, e.LatencyNs, e.Group, e.Aux = le.Uint64(raw[32:]), le.Uint64(raw[40:]), le.Uint64(raw[48:]), le.Uint64(raw[56:])
	e.Pid, e.Tid = le.Uint32(raw[64:]), le.Uint32(raw[68:])
	comm := string(raw[72:88])
	if i := strings.IndexByte(comm, 0); i >= 0 {
		comm = comm[:i]
	}
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
	if o.Events {
		p := latency.Pair{Key: key, Group: g, StartNS: e.StartNs, Latency: e.LatencyNs, Comm: comm, Pid: int32(e.Pid)}
		if o.Aux != "" {
			p.Aux = formatValue(aux, e.Aux)
		}
		r.Pairs = append(r.Pairs, p)
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

func loadError(err error) error {
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		return fmt.Errorf("the kernel's verifier rejected the pairing program: %w", err)
	}
	if errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("loading BPF: permission denied: need CAP_BPF and CAP_PERFMON (or root): %w", err)
	}
	return fmt.Errorf("loading the pairing program: %w", err)
}
