package unwindtable

import (
	"debug/elf"
	"debug/gosym"
	"strings"
)

// Go code is walked by frame pointers, not by its .debug_frame. The Go
// toolchain keeps frame pointers on amd64 and arm64, and its runtime
// switches stacks (systemstack, mcall, morestack, asmcgocall, the g0
// stack of vDSO calls): a .debug_frame rule is an offset from SP, and
// followed across such a switch it reads the other stack's bytes as
// return addresses. The frame-pointer chain is what the runtime keeps
// linked across those switches (as its own tracer and perf's fp walk
// rely on). Where a goroutine or thread begins, the walk stops: those
// functions are the runtime's top frames (TOPFRAME in its assembly).

// goFrameRule is one frame by the frame-pointer chain, as a table row:
// CFA = FP + 16, the caller's FP at CFA-16, the return address at CFA-8.
var goFrameRule = Rule{Kind: KindFP, CFA: 2, FP: -2, RA: -1}

// goTopFrames are where the runtime's stacks begin, as its own traceback
// sees them: a goroutine's (goexit), a thread's (mstart, rt0_go for the
// first), a signal handler's (sigtramp), and the g0 work started from a
// goroutine by mcall (the scheduler) and morestack (stack growth), whose
// frames on g0 do not lead back to the goroutine.
var goTopFrames = map[string]bool{
	"runtime.goexit": true, "runtime.mstart": true, "runtime.rt0_go": true,
	"runtime.sigtramp": true, "runtime.sigreturn__sigaction": true,
	"runtime.mcall": true, "runtime.morestack": true,
}

// goSwitches are the functions that call on another stack than their
// caller's: the frame above theirs may lie below it.
var goSwitches = map[string]bool{
	"runtime.systemstack": true, "runtime.asmcgocall": true, "runtime.asmcgocall_no_g": true,
	"runtime.nanotime1": true, "runtime.walltime": true, "runtime.walltime1": true,
	"runtime.vdsoCall": true, "runtime.cgocallback": true,
}

// goSources returns a source of rows for each function of a Go binary
// (from its pclntab, which even a stripped binary keeps): frame pointers,
// or a stop at a top frame. They win over .debug_frame for the same pcs.
// nil for a file that is not a Go binary.
func goSources(f *elf.File, stats *Stats) []fdeSource {
	funcs := GoFuncs(f)
	out := make([]fdeSource, 0, len(funcs))
	for _, fn := range funcs {
		if fn.End <= fn.Entry {
			continue
		}
		rule := goFrameRule
		switch name := strings.TrimSuffix(fn.Name, ".abi0"); {
		case goTopFrames[name]:
			rule = Rule{Kind: KindStop}
			stats.GoTopFrames++
		case goSwitches[name]:
			rule = Rule{Kind: KindFPSwitch}
		}
		out = append(out, fdeSource{fde: FDE{Begin: fn.Entry, End: fn.End}, prio: -1, synth: []synthRule{{fn.Entry, rule}}})
	}
	stats.GoFuncs = len(out)
	return out
}

// GoFuncs lists the functions of a Go binary's pclntab (nil if there is
// none, or it cannot be read): a stripped Go binary keeps it, since the
// runtime walks its own stacks with it.
func GoFuncs(f *elf.File) []gosym.Func {
	pcln := f.Section(".gopclntab")
	text := f.Section(".text")
	if pcln == nil || text == nil || pcln.Type == elf.SHT_NOBITS {
		return nil
	}
	data, err := pcln.Data()
	if err != nil {
		return nil
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, text.Addr))
	if err != nil {
		return nil
	}
	return tab.Funcs
}
