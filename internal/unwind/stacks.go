package unwind

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sonde-dev/sonde/internal/bpfmaps"
)

// End says how a walk ended (enum unwind_end).
type End uint16

const (
	EndStop        = End(walkerUnwindEndUNWIND_END_STOP)
	EndZero        = End(walkerUnwindEndUNWIND_END_ZERO)
	EndFrameLimit  = End(walkerUnwindEndUNWIND_END_FRAME_LIMIT)
	EndRead        = End(walkerUnwindEndUNWIND_END_READ)
	EndUnsupported = End(walkerUnwindEndUNWIND_END_UNSUPPORTED)
)

// Walk flags (enum unwind_flag).
const (
	FlagFallback    = uint16(walkerUnwindFlagUNWIND_F_FALLBACK)
	FlagNoMapping   = uint16(walkerUnwindFlagUNWIND_F_NO_MAPPING)
	FlagProcUnknown = uint16(walkerUnwindFlagUNWIND_F_PROC_UNKNOWN)
)

// Stack is one walked user stack.
type Stack struct {
	PCs        []uint64 // leaf first
	End        End
	Flags      uint16
	FallbackPC uint64 // the first pc unwound by frame pointers: where the tables ran out
}

// Complete says the walk reached the outermost frame.
func (s Stack) Complete() bool { return s.End == EndStop || s.End == EndZero }

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

// Completeness says how many samples (or events, or blocked time: any
// weight) have complete user stacks, and why the others stop short.
type Completeness struct {
	Total       uint64 `json:"stacks_total"`
	Complete    uint64 `json:"stacks_complete"`
	NoUnwind    uint64 `json:"truncated_no_unwind_info"`
	FrameLimit  uint64 `json:"truncated_frame_limit"`
	BadRead     uint64 `json:"truncated_bad_read"`
	Unsupported uint64 `json:"truncated_unsupported_row"`
	NotLoaded   uint64 `json:"truncated_not_loaded"`
	Lost        uint64 `json:"lost_map_full"` // no user stack: the stack map was full
	// FPFallback is the weight of stacks (complete or not) that crossed
	// code without unwind info by frame pointers.
	FPFallback uint64 `json:"frame_pointer_fallback"`
	// NoUnwindFiles are the files whose missing unwind info ended stacks,
	// with their weight.
	NoUnwindFiles map[string]uint64 `json:"no_unwind_info_files,omitempty"`
	// Unit is the weight's unit for String: "" counts, "ns" durations.
	Unit string `json:"-"`
}

func (c *Completeness) amount(n uint64) string {
	if c.Unit == "ns" {
		return time.Duration(n).Round(time.Microsecond).String()
	}
	return strconv.FormatUint(n, 10)
}

// Add counts a stack of process pid with weight w.
func (c *Completeness) Add(l *Loader, pid uint32, s Stack, w uint64) {
	c.Total += w
	if s.Flags&(FlagFallback|FlagNoMapping) != 0 {
		c.FPFallback += w
	}
	switch {
	case s.Complete():
		c.Complete += w
	case s.Flags&FlagProcUnknown != 0:
		c.NotLoaded += w
	case s.Flags&(FlagFallback|FlagNoMapping) != 0 && s.End == EndRead:
		c.NoUnwind += w
		f := l.FileOf(pid, s.FallbackPC)
		if f == "" {
			f = fmt.Sprintf("unknown mapping at %#x", s.FallbackPC)
		}
		if c.NoUnwindFiles == nil {
			c.NoUnwindFiles = map[string]uint64{}
		}
		c.NoUnwindFiles[f] += w
	case s.End == EndFrameLimit:
		c.FrameLimit += w
	case s.End == EndUnsupported:
		c.Unsupported += w
	default:
		c.BadRead += w
	}
}

// Pct is the complete share in percent (100 with nothing counted).
func (c *Completeness) Pct() float64 {
	if c.Total == 0 {
		return 100
	}
	return 100 * float64(c.Complete) / float64(c.Total)
}

// String is the one line every output prints, e.g. "stacks complete:
// 98.7% — 41 truncated: no unwind info for /opt/x/libfoo.so; 3 at the
// frame limit". unit names the weight ("samples").
func (c *Completeness) String() string {
	s := fmt.Sprintf("stacks complete: %.1f%%", c.Pct())
	if c.FPFallback > 0 {
		s += fmt.Sprintf(" (%s through code without unwind info, by frame pointers)", c.amount(c.FPFallback))
	}
	if c.Total == c.Complete {
		return s
	}
	var parts []string
	if c.NoUnwind > 0 {
		files := make([]string, 0, len(c.NoUnwindFiles))
		for f := range c.NoUnwindFiles {
			files = append(files, f)
		}
		sort.Slice(files, func(i, j int) bool { return c.NoUnwindFiles[files[i]] > c.NoUnwindFiles[files[j]] })
		if len(files) > 3 {
			files = append(files[:3], "…")
		}
		parts = append(parts, fmt.Sprintf("%s no unwind info for %s", c.amount(c.NoUnwind), strings.Join(files, ", ")))
	}
	for _, p := range []struct {
		n    uint64
		what string
	}{
		{c.FrameLimit, "at the frame limit"},
		{c.BadRead, "at an unreadable or inconsistent frame"},
		{c.Unsupported, "at an unsupported unwind rule"},
		{c.NotLoaded, "before the process's tables were loaded"},
		{c.Lost, "lost (stack map full)"},
	} {
		if p.n > 0 {
			parts = append(parts, c.amount(p.n)+" "+p.what)
		}
	}
	return fmt.Sprintf("%s — %s truncated: %s", s, c.amount(c.Total-c.Complete), strings.Join(parts, "; "))
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
