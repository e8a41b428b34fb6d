package builder

import "github.com/sonde-dev/sonde/internal/collect/perf"

// Frame is one unwound address.
type Frame struct {
	Addr   uint64
	Kernel bool
	Leaf   bool // the sampled instruction itself, not a return address
}

// Unwinder produces the frames of a sample, leaf first. Frame pointers come
// from the kernel's callchain; a DWARF unwinder would use registers and a
// copy of the user stack instead.
type Unwinder interface {
	Name() string
	Frames(s *perf.Sample, misc uint16, out []Frame) []Frame
}

// FramePointer uses PERF_SAMPLE_CALLCHAIN (or only the IP without -g).
type FramePointer struct{}

// Name implements Unwinder.
func (FramePointer) Name() string { return "fp" }

// Frames implements Unwinder.
func (FramePointer) Frames(s *perf.Sample, misc uint16, out []Frame) []Frame {
	out = out[:0]
	if len(s.Callchain) == 0 {
		return append(out, Frame{Addr: s.IP, Kernel: misc&perf.MiscCPUModeMask == perf.MiscKernel, Leaf: true})
	}
	kernel := misc&perf.MiscCPUModeMask == perf.MiscKernel
	first := true
	for _, ip := range s.Callchain {
		if ip >= perf.ContextMax {
			switch ip {
			case perf.ContextKernel:
				kernel = true
			case perf.ContextUser:
				kernel = false
			}
			continue
		}
		// The user part of a chain starts again at the interrupted user
		// instruction: that one is exact, not a return address.
		leaf := first
		if !kernel && len(out) > 0 && out[len(out)-1].Kernel {
			leaf = true
		}
		out = append(out, Frame{Addr: ip, Kernel: kernel, Leaf: leaf})
		first = false
	}
	return out
}
