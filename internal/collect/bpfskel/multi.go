package bpfskel

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
)

// UprobeMulti attaches many user functions with one link (Linux 6.6+):
// thousands of functions attach in one system call instead of one each.
const UprobeMulti Mode = "uprobe_multi"

// UprobeMultiHook hooks many places in one binary (entries, or returns
// with ret): syms[i]+offsets[i] gets cookies[i]. multiProg (a
// uprobe.multi program) serves them where the kernel has multi-uprobe
// links, else singleProg (a uprobe program) is attached once per place.
// Offsets other than 0 must be instruction boundaries (internal/collect/funcexit).
func UprobeMultiHook(binary string, syms []string, offsets, cookies []uint64, multiProg, singleProg string, ret bool, pid int) Hook {
	return Hook{kind: kindUprobeMulti, event: fmt.Sprintf("%d places", len(syms)), binary: binary, ret: ret, pid: pid,
		syms: syms, offsets: offsets, cookies: cookies,
		progs: map[Mode]string{UprobeMulti: multiProg, Uprobe: singleProg}}
}

// multiProber is the optional Features method for multi-uprobe links;
// without it (test fakes) single uprobes are used.
type multiProber interface{ UprobeMulti() error }

func (k *kernelFeatures) UprobeMulti() error {
	return k.once("uprobe_multi", features.HaveBPFLinkUprobeMulti)
}

func chooseMulti(h Hook, f Features) Choice {
	if m, ok := f.(multiProber); ok {
		err := m.UprobeMulti()
		if err == nil {
			return Choice{Hook: h, Mode: UprobeMulti, Prog: h.progs[UprobeMulti]}
		}
		return Choice{Hook: h, Mode: Uprobe, Prog: h.progs[Uprobe], Why: "uprobe_multi: " + brief(err)}
	}
	return Choice{Hook: h, Mode: Uprobe, Prog: h.progs[Uprobe], Why: "uprobe_multi: not probed"}
}

// attachMulti attaches a multi-place hook: one link, or one per place.
func (s *Session) attachMulti(p *ebpf.Program, c Choice) error {
	h := c.Hook
	ex, err := link.OpenExecutable(h.binary)
	if err != nil {
		return fmt.Errorf("opening %s: %w", h.binary, err)
	}
	what := "attaching to " + h.binary
	if h.ret {
		what = "attaching to returns in " + h.binary
	}
	if c.Mode == UprobeMulti {
		o := &link.UprobeMultiOptions{Offsets: h.offsets, Cookies: h.cookies, PID: uint32(h.pid)}
		var l link.Link
		if h.ret {
			l, err = ex.UretprobeMulti(h.syms, p, o)
		} else {
			l, err = ex.UprobeMulti(h.syms, p, o)
		}
		if err != nil {
			return fmt.Errorf("%s (%s, %d places): %w", what, c.Mode, len(h.syms), err)
		}
		s.links = append(s.links, l)
		return nil
	}
	for i, sym := range h.syms {
		o := &link.UprobeOptions{PID: h.pid, Cookie: h.cookies[i], Offset: h.offsets[i]}
		var l link.Link
		if h.ret {
			l, err = ex.Uretprobe(sym, p, o)
		} else {
			l, err = ex.Uprobe(sym, p, o)
		}
		if err != nil {
			return fmt.Errorf("%s:%s+%#x (%s): %w", what, sym, h.offsets[i], c.Mode, err)
		}
		s.links = append(s.links, l)
	}
	return nil
}

// MultiFallback says why multi-place hooks got a uprobe per place (""
// when every one has its uprobe_multi link), for the tool to say so: a
// link per place attaches and, above all, detaches slower (the kernel
// removes each uprobe on its own, tens of ms apiece).
func (s *Session) MultiFallback() string {
	for _, c := range s.Choices {
		if c.Hook.kind == kindUprobeMulti && c.Mode != UprobeMulti {
			return c.Why
		}
	}
	return ""
}
