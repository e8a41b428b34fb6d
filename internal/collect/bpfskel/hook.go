package bpfskel

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Mode is how a program was attached.
type Mode string

const (
	TPBTF      Mode = "tp_btf"     // BTF-typed raw tracepoint (5.5+): direct reads
	RawTP      Mode = "raw_tp"     // raw tracepoint: probe reads
	Tracepoint Mode = "tracepoint" // classic tracepoint: the event's record
	Fentry     Mode = "fentry"     // BPF trampoline on a kernel function
	Kprobe     Mode = "kprobe"
	Uprobe     Mode = "uprobe"
	PerfEvent  Mode = "perf_event" // a program run at each perf sample
)

type hookKind int

const (
	kindBTFTracepoint hookKind = iota
	kindTracepoint
	kindKernelFunc
	kindUprobe
	kindPerfEvent
	kindUprobeMulti
)

// Hook is one attach point of a tool: which event, and which program of
// the object serves it in each mode the event can be attached in.
type Hook struct {
	kind  hookKind
	event string          // tracepoint, "group:name", function or symbol
	progs map[Mode]string // program name in the object, per mode
	ret   bool            // return probe (uretprobe, kretprobe/fexit)

	binary string // uprobes
	offset uint64 // uprobes: bytes past the symbol's first instruction
	pid    int    // uprobes: 0 every process
	cookie uint64 // uprobes and kernel functions

	syms             []string // multi-place uprobes: one entry per place
	offsets, cookies []uint64

	open func() ([]int, error) // perf events: one fd per CPU, owned by the session
}

// BTFTracepoint hooks a raw kernel tracepoint (sched_switch): btfProg as
// tp_btf where the kernel has it, else rawProg as raw_tp. The C source
// defines both from one body (see bpf/include/sonde_tp.h).
func BTFTracepoint(event, btfProg, rawProg string) Hook {
	return Hook{kind: kindBTFTracepoint, event: event, progs: map[Mode]string{TPBTF: btfProg, RawTP: rawProg}}
}

// TracepointHook hooks a classic tracepoint ("raw_syscalls:sys_enter"),
// whose program reads the event's record at the tracefs offsets.
func TracepointHook(group, name, prog string) Hook {
	return Hook{kind: kindTracepoint, event: group + ":" + name, progs: map[Mode]string{Tracepoint: prog}}
}

// UprobeHook hooks a user function (entry, or return with ret) in binary,
// for pid (0: every process); cookie reaches the program through
// bpf_get_attach_cookie.
func UprobeHook(binary, symbol, prog string, ret bool, pid int, cookie uint64) Hook {
	return Hook{kind: kindUprobe, event: symbol, binary: binary, ret: ret, pid: pid, cookie: cookie,
		progs: map[Mode]string{Uprobe: prog}}
}

// UprobeAt hooks an instruction offset bytes into a user function (a
// return instruction, for timing functions where uretprobes are unsafe).
// offset must be an instruction boundary: anything else corrupts the
// traced program (see internal/collect/funcexit).
func UprobeAt(binary, symbol string, offset uint64, prog string, pid int, cookie uint64) Hook {
	return Hook{kind: kindUprobe, event: symbol, binary: binary, offset: offset, pid: pid, cookie: cookie,
		progs: map[Mode]string{Uprobe: prog}}
}

// KernelFunc hooks a kernel function (entry, or return with ret): the
// fentry/fexit program where BPF trampolines work, else the kprobe one.
func KernelFunc(fn, fentryProg, kprobeProg string, ret bool, cookie uint64) Hook {
	return Hook{kind: kindKernelFunc, event: fn, ret: ret, cookie: cookie,
		progs: map[Mode]string{Fentry: fentryProg, Kprobe: kprobeProg}}
}

// PerfEventHook runs prog at every sample of the perf events open returns
// (one fd per CPU, opened disabled: they are enabled once attached).
func PerfEventHook(prog string, open func() ([]int, error)) Hook {
	return Hook{kind: kindPerfEvent, event: "perf events", progs: map[Mode]string{PerfEvent: prog}, open: open}
}

func (h Hook) String() string {
	if h.binary != "" {
		if h.offset != 0 {
			return fmt.Sprintf("%s:%s+%#x", h.binary, h.event, h.offset)
		}
		return h.binary + ":" + h.event
	}
	return h.event
}

// Features says what the running kernel can attach. Each method returns
// nil when the feature works and otherwise why not; an error matching
// os.ErrPermission means the probe itself was not allowed, which ends the
// choice (a fallback would fail the same way).
type Features interface {
	TPBTF(event string) error // a tp_btf program loads and attaches to event
	RawTP() error             // raw_tp programs load
	Fentry(fn string) error   // an fentry program attaches to fn
	Kprobe(fn string) error   // a kprobe attaches to fn
}

// Choice is the mode picked for one hook, and why the preferred one was
// not (empty when it was).
type Choice struct {
	Hook Hook
	Mode Mode
	Prog string
	Why  string
}

// choose picks the mode of a hook from probed features: the preferred mode
// if its probe passes, else the fallback if its probe passes, else an
// error naming both reasons. The tool's own programs are not involved, so
// a verifier error in the preferred program surfaces at load time instead
// of silently running the fallback.
func choose(h Hook, f Features) (Choice, error) {
	var first, second Mode
	var p1, p2 func() error
	switch h.kind {
	case kindBTFTracepoint:
		first, second = TPBTF, RawTP
		p1, p2 = func() error { return f.TPBTF(h.event) }, f.RawTP
	case kindKernelFunc:
		first, second = Fentry, Kprobe
		p1, p2 = func() error { return f.Fentry(h.event) }, func() error { return f.Kprobe(h.event) }
	case kindUprobeMulti:
		return chooseMulti(h, f), nil
	default:
		for m, p := range h.progs {
			return Choice{Hook: h, Mode: m, Prog: p}, nil
		}
		return Choice{}, fmt.Errorf("hook %s has no program", h)
	}
	e1 := p1()
	if e1 == nil {
		return Choice{Hook: h, Mode: first, Prog: h.progs[first]}, nil
	}
	if errors.Is(e1, os.ErrPermission) {
		return Choice{}, permissionError(fmt.Sprintf("probing %s for %s", first, h), e1)
	}
	e2 := p2()
	if e2 == nil {
		return Choice{Hook: h, Mode: second, Prog: h.progs[second], Why: fmt.Sprintf("%s: %s", first, firstLine(e1))}, nil
	}
	if errors.Is(e2, os.ErrPermission) {
		return Choice{}, permissionError(fmt.Sprintf("probing %s for %s", second, h), e2)
	}
	what := "attach to " + h.String()
	if h.kind == kindKernelFunc {
		what = "trace kernel function " + h.event
	}
	return Choice{}, fmt.Errorf("cannot %s: this kernel supports neither %s (%s) nor %s (%s)",
		what, first, brief(e1), second, brief(e2))
}

// brief is the cause at the end of a probe's error chain, for a one-line
// message: "no kprobe_events in tracefs" rather than every step that led
// to the open that failed.
func brief(err error) string {
	if errors.Is(err, os.ErrNotExist) {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return "no " + filepath.Base(pe.Path) + " in " + filepath.Dir(pe.Path)
		}
	}
	msg := firstLine(err)
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return msg
}

func permissionError(doing string, err error) error {
	return fmt.Errorf("%s: permission denied: BPF needs root, or CAP_BPF with CAP_PERFMON: %w", doing, err)
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
