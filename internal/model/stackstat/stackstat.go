// Package stackstat says how complete walked user stacks are: how each
// walk of sonde's BPF unwinder ended, and the one line (and JSON) every
// stack-taking tool prints about them. It holds no BPF code, so views use
// it without the loader.
package stackstat

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// End says how a walk ended (enum unwind_end).
type End uint16

// The values are the C enum's (internal/collect/unwind checks them against the
// object).
const (
	EndStop        End = 0 // an outermost frame (_start, a thread's entry)
	EndZero        End = 1 // a zero return address or frame pointer
	EndFrameLimit  End = 2 // the walker's frame limit, more frames remained
	EndRead        End = 3 // a read failed or a frame went the wrong way
	EndUnsupported End = 4 // an unwind rule the walker cannot follow
)

// Walk flags (enum unwind_flag).
const (
	FlagFallback    uint16 = 1 // frames without unwind info, by frame pointers
	FlagNoMapping   uint16 = 2 // a pc outside every mapping loaded for the process
	FlagProcUnknown uint16 = 4 // the process was not loaded yet
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
	// Unwritten have no user stack because the walked stack's record
	// never reached user space (the kernel could not write it).
	Unwritten uint64 `json:"lost_unwritten"`
	// FPFallback is the weight of stacks (complete or not) that crossed
	// code without unwind info by frame pointers.
	FPFallback uint64 `json:"frame_pointer_fallback"`
	// NoUnwindFiles are the files whose missing unwind info ended stacks,
	// with their weight.
	NoUnwindFiles map[string]uint64 `json:"no_unwind_info_files,omitempty"`
	// Tables says where the walker's unwind tables came from (nil: not
	// told).
	Tables *TableSources `json:"unwind_tables,omitempty"`
	// Unit is the weight's unit for String: "" counts, "ns" durations.
	Unit string `json:"-"`
}

// TableSources count the unwind tables of a run by where they came from:
// built from the files' .eh_frame, or read from the disk cache of an
// earlier run (internal/collect/diskcache).
type TableSources struct {
	Built  int `json:"tables_built"`
	Cached int `json:"tables_cached"`
	// BuildNS and ReadNS are the time spent building and reading them.
	BuildNS int64 `json:"tables_build_ns"`
	ReadNS  int64 `json:"tables_read_ns"`
}

func (c *Completeness) amount(n uint64) string {
	if c.Unit == "ns" {
		return time.Duration(n).Round(time.Microsecond).String()
	}
	return strconv.FormatUint(n, 10)
}

// Add counts a stack of process pid with weight w; fileOf names the file
// mapped at an address of pid ("" when unknown).
func (c *Completeness) Add(fileOf func(pid uint32, pc uint64) string, pid uint32, s Stack, w uint64) {
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
		f := fileOf(pid, s.FallbackPC)
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
// 95.6% (956 of 1000 reach the thread's first frame); 44 cut short: 41
// where /opt/x/libfoo.so has no unwind info, 3 at the frame limit; 41
// went through code without unwind info, walked there by frame pointers". Each figure says
// what it counts, so the line reads without the docs.
func (c *Completeness) String() string {
	s := fmt.Sprintf("stacks complete: %.1f%%", c.Pct())
	if c.Total > 0 {
		s += fmt.Sprintf(" (%s of %s reach the thread's first frame)", c.amount(c.Complete), c.amount(c.Total))
	}
	if c.Total != c.Complete {
		var parts []string
		if c.NoUnwind > 0 {
			files := make([]string, 0, len(c.NoUnwindFiles))
			for f := range c.NoUnwindFiles {
				files = append(files, f)
			}
			sort.Slice(files, func(i, j int) bool { return c.NoUnwindFiles[files[i]] > c.NoUnwindFiles[files[j]] })
			verb := "has"
			if len(files) > 1 {
				verb = "have"
			}
			if len(files) > 3 {
				files = append(files[:3], "…")
			}
			parts = append(parts, fmt.Sprintf("%s where %s %s no unwind info", c.amount(c.NoUnwind), strings.Join(files, ", "), verb))
		}
		for _, p := range []struct {
			n    uint64
			what string
		}{
			{c.FrameLimit, "at the frame limit"},
			{c.BadRead, "at a frame that could not be read or went the wrong way"},
			{c.Unsupported, "at an unwind rule the walker cannot follow"},
			{c.NotLoaded, "taken before the process's unwind tables were loaded"},
			{c.Lost, "lost (stack map full)"},
			{c.Unwritten, "lost (the walked stack's record could not be written)"},
		} {
			if p.n > 0 {
				parts = append(parts, c.amount(p.n)+" "+p.what)
			}
		}
		s += fmt.Sprintf("; %s cut short: %s", c.amount(c.Total-c.Complete), strings.Join(parts, ", "))
	}
	if c.FPFallback > 0 {
		s += fmt.Sprintf("; %s went through code without unwind info, walked there by frame pointers", c.amount(c.FPFallback))
	}
	return s
}
