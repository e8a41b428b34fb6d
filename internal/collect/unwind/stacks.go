package unwind

import "github.com/sonde-dev/sonde/internal/model/stackstat"

// Aliases of the walk's result types (see internal/model/stackstat).
type (
	End          = stackstat.End
	Stack        = stackstat.Stack
	Completeness = stackstat.Completeness
)

// Stack reads the stack with key id (0: none) into buf.
func (l *Loader) Stack(id uint64, buf *[MaxFrames]uint64) (Stack, bool) {
	if id == 0 {
		return Stack{}, false
	}
	var v stackValue
	if err := l.m.Stacks.Lookup(id, &v); err != nil {
		return Stack{}, false
	}
	n := min(int(v.Len), MaxFrames)
	copy(buf[:], v.Pcs[:n])
	return Stack{PCs: buf[:n], End: End(v.End), Flags: v.Flags, FallbackPC: v.FallbackPc}, true
}

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
