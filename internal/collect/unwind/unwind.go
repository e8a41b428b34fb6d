// Package unwind feeds sonde's BPF user-stack walker (bpf/include/
// sonde_unwind.h): it loads the unwind tables of every executable mapping
// of the traced processes into BPF maps, follows the processes as they
// exec, map new libraries and exit, and reads back the stacks the walker
// stored with how complete each one is.
//
// A tool whose BPF object includes the walker (SONDE_UNWIND) passes its
// maps to New, its spec to Configure, adds Hooks to its own and sets Consts
// before load.
package unwind

import (
	"errors"
	"fmt"
	"math/bits"
	"os"
	"os/exec"
	"runtime"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"

	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
)

// Types shared with the C side, from bpf2go.
type (
	rowValue    = walkerUnwindRow
	ruleValue   = walkerUnwindRule
	procValue   = walkerUnwindProc
	stackValue  = walkerUnwindStack
	noticeValue = walkerUnwindNotice
	fileKey     = walkerUnwindFileKey
	fileValue   = walkerUnwindFile
)

// MaxFrames is how many user frames the walker takes per stack.
const MaxFrames = len(stackValue{}.Pcs)

// maxMappings is how many executable mappings a process can have in the
// walker's view (struct unwind_proc).
const maxMappings = len(procValue{}.M)

// Maps are the walker's maps in a tool's object (see sonde_unwind.h for
// key, value, units); bpfskel.AssignMaps fills them by these names.
type Maps struct {
	Rules    *ebpf.Map         `ebpf:"unwind_rules"`
	Rows     *ebpf.Map         `ebpf:"unwind_rows"`
	Procs    *ebpf.Map         `ebpf:"unwind_procs"`
	Stacks   *ebpf.Map         `ebpf:"unwind_stacks"`
	Counters *bpfskel.Counters `ebpf:"unwind_counters"`
	Notices  *ebpf.Map         `ebpf:"unwind_notices"`
}

// Supported says whether the walker runs on this architecture; elsewhere
// Consts leaves it off and user stacks are empty.
func Supported() bool { return regOffsets() != nil }

// regOffsets are the byte offsets of SP, FP, PC and LR in the kernel's
// struct pt_regs: the architectures' ABI layouts (x86-64: the order of
// user_regs_struct; arm64: regs[31], sp, pc).
func regOffsets() []uint32 {
	switch runtime.GOARCH {
	case "amd64":
		return []uint32{152, 32, 128, 0}
	case "arm64":
		return []uint32{248, 29 * 8, 256, 30 * 8}
	}
	return nil
}

// Consts are the walker's const volatile options for this architecture,
// to merge into a tool's Consts. Variable names are the C ones.
func Consts() map[string]any {
	off := regOffsets()
	if off == nil {
		return map[string]any{"unwind_arch": uint32(0)}
	}
	arch := uint32(1)
	if runtime.GOARCH == "arm64" {
		arch = 2
	}
	return map[string]any{
		"unwind_arch": arch, "unwind_off_sp": off[0], "unwind_off_fp": off[1],
		"unwind_off_pc": off[2], "unwind_off_lr": off[3],
	}
}

// Hooks are the walker's own attach points: exec and exit, so a process's
// mappings are dropped when its image changes or it ends.
func Hooks() []bpfskel.Hook {
	return []bpfskel.Hook{
		bpfskel.BTFTracepoint("sched_process_exec", "tp_btf_unwind_exec", "raw_unwind_exec"),
		bpfskel.BTFTracepoint("sched_process_exit", "tp_btf_unwind_exit", "raw_unwind_exit"),
	}
}

// Wire adds the walker to a tool: its options, its exec/exit hooks, room
// for rows, and a Loaded step that loads pid's tables (0: none up front,
// every process as the walker meets it) before any program runs, then
// starts following notices. maps returns the walker's maps once loaded;
// nil takes them from the object by name (Tool.More).
// The caller stops the returned loader after the session's Run (or Close).
func Wire(t *bpfskel.Tool, pid int, maps func() Maps) *Loader {
	return wire(t, pid, maps, full)
}

// WireLeaf adds the walker to a tool that needs only each stack's leaf
// (sonde top): one frame, no tables loaded, no notices.
func WireLeaf(t *bpfskel.Tool, maps func() Maps) *Loader {
	return wire(t, 0, maps, leafOnly)
}

// WireOff wires the walker of a tool's object turned off, for a run that
// asks for no user stacks (-K): the walk is dead code the verifier skips,
// its exec and exit programs are not loaded, no table is built and no
// notice read. The loader answers as for a run that walked nothing.
func WireOff(t *bpfskel.Tool, maps func() Maps) *Loader {
	return wire(t, 0, maps, off)
}

// How much of the walker a tool wires.
type wireMode int

const (
	full     wireMode = iota
	leafOnly          // the leaf frame only, no tables
	off               // no walk at all
)

func wire(t *bpfskel.Tool, pid int, maps func() Maps, mode wireMode) *Loader {
	leaf := mode != full
	rows := uint32(DefaultRows)
	if pid != 0 {
		rows = 1 << 20 // python3 and its libraries take about 120,000
	}
	if leaf {
		rows = 1
	}
	l := New(Maps{}, rows)
	l.Only = pid
	consts := map[string]any{}
	for k, v := range t.Consts {
		consts[k] = v
	}
	for k, v := range Consts() {
		consts[k] = v
	}
	if leaf {
		consts["unwind_max_frames"] = uint32(1)
	}
	if off, _ := consts[PythonOff].(bool); off {
		l.NoInterp = true
	}
	if mode == off {
		consts["unwind_arch"] = uint32(0)
	} else {
		t.Hooks = append(Hooks(), t.Hooks...)
	}
	t.Consts = consts
	if spec := t.Spec; spec != nil {
		t.Spec = func() (*ebpf.CollectionSpec, error) {
			if mode == off {
				return spec() // no walk: its helpers need no probe, its rows no room
			}
			if err := Probe(); err != nil {
				return nil, err
			}
			s, err := spec()
			if err == nil {
				err = Configure(s, rows)
			}
			return s, err
		}
	}
	if maps == nil {
		t.More = append(t.More, &l.m)
	}
	t.More = append(t.More, &l.files, &l.py)
	prev := t.Loaded
	t.Loaded = func() error {
		if prev != nil {
			if err := prev(); err != nil {
				return err
			}
		}
		if maps != nil {
			l.m = maps()
		}
		if mode != full {
			return nil
		}
		if pid != 0 {
			if err := l.Load(pid); err != nil {
				return err
			}
		}
		if err := l.Start(); err != nil {
			return err
		}
		if len(t.Command) > 0 {
			l.PreloadCommand(t.Command[0])
		}
		return nil
	}
	return l
}

// PreloadCommand preloads (Preload) the tables of the command a tool
// holds before its exec, found on PATH as the exec will find it: its
// first samples, within a millisecond of the exec, then walk with them
// (through bpf_find_vma) instead of waiting for the exec notice to be
// read and the tables built. A command not found is left to the exec,
// which reports it.
func (l *Loader) PreloadCommand(name string) {
	if path, err := exec.LookPath(name); err == nil {
		l.Preload(path)
	}
}

// Probe says, in one line, why the walker cannot run on this kernel (nil
// when it can): it needs bpf_loop (Linux 5.17) and bpf_task_pt_regs (5.15).
func Probe() error {
	if !Supported() {
		return nil // the walker is off: its helpers are never called
	}
	for _, h := range []struct {
		fn   asm.BuiltinFunc
		name string
	}{{asm.FnLoop, "bpf_loop (Linux 5.17)"}, {asm.FnTaskPtRegs, "bpf_task_pt_regs (Linux 5.15)"}} {
		err := features.HaveProgramHelper(ebpf.PerfEvent, h.fn)
		if errors.Is(err, ebpf.ErrNotSupported) {
			return fmt.Errorf("the user-stack unwinder needs the BPF helper %s, which this kernel lacks: use a newer kernel", h.name)
		}
		if err != nil && !errors.Is(err, os.ErrPermission) {
			return fmt.Errorf("probing the BPF helper %s: %w", h.name, err)
		}
	}
	return nil
}

// DefaultRows is the row capacity Configure gives a system-wide tool: 16
// MB of rows, about 30 files the size of python3 or 70 of libc.
const DefaultRows = 2 << 20

// Configure sizes the rows map of a tool's spec before load: rows is how
// many table rows every file loaded together may take (8 bytes each).
func Configure(spec *ebpf.CollectionSpec, rows uint32) error {
	m := spec.Maps["unwind_rows"]
	if m == nil {
		return fmt.Errorf("the object has no unwind_rows map: it was built without SONDE_UNWIND")
	}
	if rows == 0 {
		rows = DefaultRows
	}
	m.MaxEntries = rows
	if v := spec.Variables["unwind_page_shift"]; v != nil {
		if err := v.Set(uint32(bits.TrailingZeros(uint(os.Getpagesize())))); err != nil {
			return fmt.Errorf("setting the unwinder's page size: %w", err)
		}
	}
	if spec.Maps["unwind_files"] == nil {
		// An object built before the walker looked files up by address:
		// the loader fills a map the walker never reads.
		spec.Maps["unwind_files"] = &ebpf.MapSpec{Name: "unwind_files", Type: ebpf.Hash,
			KeySize: uint32(unsafe.Sizeof(fileKey{})), ValueSize: uint32(unsafe.Sizeof(fileValue{})), MaxEntries: 1}
	}
	return nil
}
