package symbolize

import (
	"sort"
	"unsafe"

	"github.com/sonde-dev/sonde/internal/model"
)

// Kept says how a long-lived symbolizer (sonde agent --continuous, which
// names one profile every few seconds for as long as it runs) keeps what
// it opened between passes, so a period costs only what changed.
type Kept struct {
	// Budget bounds the bytes of symbol tables (and remembered addresses)
	// kept open; past it the least recently used objects are closed.
	Budget int64
	// Idle is how many passes an object may go unmapped by every process
	// the passes saw before it is closed.
	Idle int
	// Memo bounds the addresses remembered per object.
	Memo int
}

// NewKept returns a symbolizer that keeps objects open across passes
// (Profile calls) within k's bounds, remembers the addresses it named,
// and keeps no machine code in the profiles it names (they are exported,
// not annotated). Files are told apart by path and build-id, and a file
// replaced on disk at the same path is opened again.
func NewKept(k Kept, resolvers ...Resolver) *Symbolizer {
	s := New(resolvers...)
	s.kept = &keptObjects{Kept: k, objs: map[Object]*keptObject{}}
	return s
}

// NewRepeated is the symbolizer of a run that names its frames again and
// again (intervals, continuous profiling): the resolvers of recordings,
// objects kept open between passes within k's bounds, and the kernel's
// symbols read now, at start-up, rather than in the first pass (a
// failure shows in each pass's warnings). lines: read line tables.
func NewRepeated(k Kept, lines bool) *Symbolizer {
	kernel := Kallsyms()
	_, _ = kernel.Open(KernelObject)
	return NewKept(k, kernel, PerfMaps{}, VDSOImage(), ELFFiles{NoLines: !lines})
}

type keptObjects struct {
	Kept
	objs  map[Object]*keptObject
	pass  int   // passes so far
	bytes int64 // footprint of objs
}

type keptObject struct {
	o          *Opened
	err        error
	seen, used int   // last pass whose objects included it, that named with it
	base, size int64 // footprint of its symbols; with the memo
	memo       map[uint64]named
}

// named is one address resolved in an object.
type named struct {
	addr  uint64
	frame Frame
	found bool
}

// memoEntryBytes estimates one remembered address (map slot and entry).
const memoEntryBytes = int64(unsafe.Sizeof(named{})) + 24

// footprinter is implemented by symbols that know the memory they keep.
type footprinter interface{ Footprint() int64 }

// changer is implemented by symbols read from a file that may be replaced.
type changer interface{ Changed() bool }

// begin starts a pass: every object of objs is still mapped.
func (k *keptObjects) begin(objs []Object) {
	k.pass++
	for _, obj := range objs {
		if e := k.objs[obj.key()]; e != nil {
			e.seen = k.pass
		}
	}
}

// open returns obj's entry, opening obj when it is not kept or its file
// changed on disk. s.mu is held.
func (s *Symbolizer) keptOpen(obj Object) *keptObject {
	k := s.kept
	key := obj.key()
	e := k.objs[key]
	if e != nil && e.o != nil {
		if c, ok := e.o.Symbols.(changer); ok && c.Changed() {
			k.bytes -= e.size
			e = nil
		}
	}
	if e == nil {
		e = &keptObject{}
		e.o, e.err = s.open(obj)
		if e.o != nil {
			if f, ok := e.o.Symbols.(footprinter); ok {
				e.base = f.Footprint()
			}
		}
		e.size = e.base
		k.objs[key] = e
		k.bytes += e.size
	}
	e.seen, e.used = k.pass, k.pass
	return e
}

// resolve names a recorded address of obj through the entry's memo.
func (e *keptObject) resolve(obj Object, recorded uint64, memo int) Resolved {
	if e.err != nil {
		return resolveIn(obj, nil, e.err, recorded)
	}
	if n, ok := e.memo[recorded]; ok {
		r := Resolved{DSO: opened(obj, e.o), Addr: n.addr, Frame: n.frame, Found: n.found}
		if n.frame.Module != "" {
			r.DSO = model.DSO{Name: "[" + n.frame.Module + "]", Kind: model.DSOModule}
		}
		return r
	}
	r := resolveIn(obj, e.o, nil, recorded)
	if e.memo == nil || len(e.memo) >= memo {
		// Full: start over rather than track recency per address.
		e.memo = make(map[uint64]named, min(memo, 256))
	}
	e.memo[recorded] = named{addr: r.Addr, frame: r.Frame, found: r.Found}
	return r
}

// end closes what the pass showed is no longer needed: objects unmapped
// for Idle passes, JIT maps (they grow as runtimes compile more code, so
// each pass reads them afresh), then the least recently used objects
// while the footprint exceeds the budget. s.mu is held.
func (k *keptObjects) end() {
	var live []Object
	k.bytes = 0
	for key, e := range k.objs {
		if key.Kind == model.DSOJIT || k.pass-e.seen >= max(k.Idle, 1) {
			delete(k.objs, key)
			continue
		}
		e.size = e.base + int64(len(e.memo))*memoEntryBytes
		k.bytes += e.size
		live = append(live, key)
	}
	if k.Budget <= 0 || k.bytes <= k.Budget {
		return
	}
	sort.Slice(live, func(i, j int) bool { return k.objs[live[i]].used < k.objs[live[j]].used })
	for _, key := range live {
		if k.bytes <= k.Budget {
			break
		}
		k.bytes -= k.objs[key].size
		delete(k.objs, key)
	}
}

// KeptStats is what a kept symbolizer holds now.
type KeptStats struct {
	Objects int
	Bytes   int64 // estimated footprint
}

// KeptStats reports the objects kept open (zero for other symbolizers).
func (s *Symbolizer) KeptStats() KeptStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kept == nil {
		return KeptStats{}
	}
	return KeptStats{Objects: len(s.kept.objs), Bytes: s.kept.bytes}
}
