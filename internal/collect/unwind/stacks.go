package unwind

import (
	"errors"
	"sync"
	"time"

	"github.com/cilium/ebpf"

	"github.com/sonde-dev/sonde/internal/collect/bpfmaps"
	"github.com/sonde-dev/sonde/internal/model/stackstat"
)

// Aliases of the walk's result types (see internal/model/stackstat).
type (
	End          = stackstat.End
	Stack        = stackstat.Stack
	Completeness = stackstat.Completeness
)

// Stack reads the stack with key id (0: none) into buf: from the stacks
// moved to user space (DrainStacks) or from unwind_stacks.
func (l *Loader) Stack(id uint64, buf *[MaxFrames]uint64) (Stack, bool) {
	if id == 0 {
		return Stack{}, false
	}
	if st, ok := l.keptStack(id, buf); ok {
		return st, true
	}
	var v stackValue
	if err := l.m.Stacks.Lookup(id, &v); err != nil {
		// A drain may have moved it between the two looks.
		return l.keptStack(id, buf)
	}
	n := min(int(v.Len), MaxFrames)
	copy(buf[:], v.Pcs[:n])
	l.pyNames.Observe(buf[:n])
	if trace.f != nil { // the walk as the kernel left it, before naming cuts it
		tracef("stack %#x end=%d flags=%d fallback=%#x pcs=%x", id, v.End, v.Flags, v.FallbackPc, buf[:n])
	}
	return Stack{PCs: buf[:n], End: End(v.End), Flags: v.Flags, FallbackPC: v.FallbackPc}, true
}

// keptStack is the stack with key id moved to user space, copied to buf.
func (l *Loader) keptStack(id uint64, buf *[MaxFrames]uint64) (Stack, bool) {
	l.kept.Lock()
	st, ok := l.kept.m[id]
	if !ok {
		st, ok = l.kept.prev[id]
	}
	l.kept.Unlock()
	if ok {
		n := copy(buf[:], st.PCs)
		st.PCs = buf[:n]
	}
	return st, ok
}

// keptStacks are walked stacks moved out of unwind_stacks, by key.
type keptStacks struct {
	sync.Mutex
	m      map[uint64]Stack
	prev   map[uint64]Stack // before the last ForgetKeptStacks
	drains int

	// The batch buffers, kept: a drain every 100 ms would otherwise
	// allocate 270 KB each time, idle or not.
	drainMu sync.Mutex
	keys    []uint64
	vals    []stackValue
}

// ForgetKeptStacks lets go of the stacks kept before the previous call,
// for tools that report every interval and clear their counts: a key
// counted since then was drained since then (a stack drained earlier is
// stored again when it recurs), so memory follows two intervals' stacks,
// not the whole run's.
func (l *Loader) ForgetKeptStacks() {
	l.kept.Lock()
	if l.kept.m != nil {
		l.kept.prev, l.kept.m = l.kept.m, map[uint64]Stack{}
	}
	l.kept.Unlock()
}

// DrainEvery is how often KeepStacks moves the walked stacks to user
// space while CPython processes are walked (their code objects are named
// as their stacks are drained, while the processes live); DrainIdle
// otherwise, when the walker's UNWIND_NOTICE_FULL (every quarter of
// unwind_stacks' size of walks) does the work: a tick that finds nothing
// to do still wakes the process and the Go runtime's monitor, about 3 ms
// of CPU a second here at 100 ms.
const (
	DrainEvery = 100 * time.Millisecond
	DrainIdle  = time.Second
)

// drainBatch is how many stacks one batch lookup reads (1 KB each).
const drainBatch = 256

// KeepStacks has the loader move every walked stack from unwind_stacks to
// user space every DrainEvery, from Start to Stop, for tools that read
// their stacks' keys only at the end (profile, offcpu): the map, which
// the walker never empties, then holds a period's new stacks instead of
// every distinct stack of the run (a 60 s system-wide run with processes
// starting has more than its 16,384 entries: each process's stacks are
// new, its addresses randomized). A key read from the map stays valid:
// Stack finds it here once it left the map. Call it before Start.
func (l *Loader) KeepStacks() {
	l.kept.Lock()
	if l.kept.m == nil {
		l.kept.m = map[uint64]Stack{}
	}
	l.kept.Unlock()
	l.keep = true
}

// DrainStacks moves every stack in unwind_stacks to user space (KeepStacks
// does it every DrainEvery). A stack is copied before its entry is
// deleted, so a key the walker found in the map just before the delete
// still names its frames; a stack stored during the read stays for the
// next drain.
func (l *Loader) DrainStacks() error {
	if l.m.Stacks == nil {
		return nil
	}
	l.kept.Lock()
	if l.kept.m == nil {
		l.kept.m = map[uint64]Stack{}
	}
	l.kept.Unlock()
	l.kept.drainMu.Lock()
	defer l.kept.drainMu.Unlock()
	if l.kept.keys == nil {
		l.kept.keys, l.kept.vals = make([]uint64, drainBatch), make([]stackValue, drainBatch)
	}
	keys, vals := l.kept.keys, l.kept.vals
	var cursor ebpf.MapBatchCursor
	for {
		n, err := l.m.Stacks.BatchLookup(&cursor, keys, vals, nil)
		if n > 0 {
			l.kept.Lock()
			for i := range n {
				v := &vals[i]
				k := min(int(v.Len), MaxFrames)
				l.kept.m[keys[i]] = Stack{PCs: append([]uint64(nil), v.Pcs[:k]...), End: End(v.End), Flags: v.Flags, FallbackPC: v.FallbackPc}
			}
			l.kept.Unlock()
			// Python frames are named now, while their processes run.
			for i := range n {
				l.pyNames.Observe(vals[i].Pcs[:min(int(vals[i].Len), MaxFrames)])
			}
			if _, derr := l.m.Stacks.BatchDelete(keys[:n], nil); derr != nil {
				for _, k := range keys[:n] {
					l.m.Stacks.Delete(k)
				}
			}
		}
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			break
		}
		if err != nil {
			return err
		}
	}
	l.kept.Lock()
	l.kept.drains++
	l.kept.Unlock()
	return nil
}

// drainLoop runs DrainStacks when the walker says a quarter of the map's
// size was walked, and on a tick (DrainEvery while CPython processes are
// walked, else DrainIdle) once a quarter may have filled, until done
// closes.
func (l *Loader) drainLoop(done <-chan struct{}, finished chan<- struct{}) {
	defer close(finished)
	tk := time.NewTimer(DrainEvery)
	defer tk.Stop()
	var lastWalks uint64
	var walks bpfmaps.PerCPUSum
	for {
		select {
		case <-done:
			return
		case <-l.drainNow:
			tk.Stop()
		case <-tk.C:
			// With CPython processes walked, every tick that walked a
			// stack drains: their code objects are named as they are
			// drained, and a process that exits takes its memory with it.
			if l.m.Counters != nil && l.m.Counters.Map != nil {
				n := walks.Read(l.m.Counters.Map, 0) // UNWIND_C_WALKS
				if n == lastWalks || (n-lastWalks < UnwindStacksEntries/4 && !l.walksPython()) {
					tk.Reset(l.drainTick())
					continue
				}
			}
		}
		if err := l.DrainStacks(); err != nil {
			l.loadError(err)
		}
		if l.m.Counters != nil && l.m.Counters.Map != nil {
			lastWalks = walks.Read(l.m.Counters.Map, 0)
		}
		tk.Reset(l.drainTick())
	}
}

// drainTick is the drain loop's next tick.
func (l *Loader) drainTick() time.Duration {
	if l.walksPython() {
		return DrainEvery
	}
	return DrainIdle
}

// UnwindStacksEntries is the capacity of unwind_stacks (UNWIND_STACKS_ENTRIES).
const UnwindStacksEntries = 16384

// Counters are the walker's own counts (unwind_counters), over every walk
// (each counter tag names its member of enum unwind_counter,
// bpfskel.Counters).
type Counters struct {
	Walks       uint64 `json:"walks" counter:"UNWIND_C_WALKS"`                     // user stacks walked
	Complete    uint64 `json:"complete" counter:"UNWIND_C_COMPLETE"`               // ended at an outermost frame or a zero return address
	FrameLimit  uint64 `json:"frame_limit" counter:"UNWIND_C_FRAME_LIMIT"`         // stopped at MaxFrames with frames left
	BadRead     uint64 `json:"bad_read" counter:"UNWIND_C_BAD_READ"`               // ended by a failed stack read, or one going the wrong way
	Unsupported uint64 `json:"unsupported_row" counter:"UNWIND_C_UNSUPPORTED"`     // ended at a table row the walker cannot follow
	Fallback    uint64 `json:"frame_pointer_fallback" counter:"UNWIND_C_FALLBACK"` // took frame pointers somewhere (no table there)
	NotLoaded   uint64 `json:"not_loaded" counter:"UNWIND_C_NOT_LOADED"`           // met a process or mapping not loaded yet
	StacksFull  uint64 `json:"stacks_map_full" counter:"UNWIND_C_STACKS_FULL"`     // user stacks lost: unwind_stacks was full
	Notices     uint64 `json:"notices" counter:"UNWIND_C_NOTICES"`                 // processes sent to the loader
	NoticesLost uint64 `json:"notices_lost" counter:"UNWIND_C_NOTICES_LOST"`       // notices lost: the ring was full
}

// Counters reads the walker's counters (zero before the maps are loaded).
func (l *Loader) Counters() Counters {
	var c Counters
	if l.m.Counters != nil {
		// The struct's tags are checked against the object (TestCounterNames).
		_ = l.m.Counters.Read(&c)
	}
	return c
}

// Sources says where the tables loaded so far came from, for a tool's
// completeness report (Completeness.Tables).
func (l *Loader) Sources() *stackstat.TableSources {
	s := l.cache.Stats()
	return &stackstat.TableSources{Built: s.Builds, Cached: s.FromDisk, BuildNS: s.BuildTime.Nanoseconds(), ReadNS: s.ReadTime.Nanoseconds()}
}
