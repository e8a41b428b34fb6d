package unwind

import (
	"github.com/sonde-dev/sonde/internal/bpfmaps"
	"github.com/sonde-dev/sonde/internal/stackstat"
)

// Aliases of the walk's result types (see internal/stackstat).
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

// Counters are the walker's own counts (unwind_counters), over every walk.
type Counters struct {
	Walks       uint64 `json:"walks"`
	Complete    uint64 `json:"complete"`
	FrameLimit  uint64 `json:"frame_limit"`
	BadRead     uint64 `json:"bad_read"`
	Unsupported uint64 `json:"unsupported_row"`
	Fallback    uint64 `json:"frame_pointer_fallback"`
	NotLoaded   uint64 `json:"not_loaded"`
	StacksFull  uint64 `json:"stacks_map_full"`
	Notices     uint64 `json:"notices"`
	NoticesLost uint64 `json:"notices_lost"`
}

// Counters reads the walker's counters.
func (l *Loader) Counters() Counters {
	c := bpfmaps.Counters(l.m.Counters, int(walkerUnwindCounterUNWIND_C_MAX))
	return Counters{Walks: c[0], Complete: c[1], FrameLimit: c[2], BadRead: c[3], Unsupported: c[4],
		Fallback: c[5], NotLoaded: c[6], StacksFull: c[7], Notices: c[8], NoticesLost: c[9]}
}
