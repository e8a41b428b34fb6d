package bpfskel

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
)

// Kernel probes the running kernel with tiny programs of its own (return
// 0), never with a tool's programs, and remembers the answers for the
// life of the process.
var Kernel Features = &kernelFeatures{cache: map[string]error{}}

type kernelFeatures struct {
	mu    sync.Mutex
	cache map[string]error
}

func (k *kernelFeatures) once(key string, probe func() error) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if err, ok := k.cache[key]; ok {
		return err
	}
	err := probe()
	if err != nil && errors.Is(err, os.ErrPermission) && privileged() {
		// Refused although we hold the capabilities: the kernel does not
		// allow this kind of program here (no trampolines, lockdown), which
		// is a missing feature, not a permission to ask the user for.
		msg, _, _ := strings.Cut(firstLine(err), " (MEMLOCK")
		err = fmt.Errorf("%s (refused to a privileged process)", msg)
	}
	k.cache[key] = err
	return err
}

// privileged says whether this process holds CAP_SYS_ADMIN or CAP_BPF.
func privileged() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	return hasBPFCaps(string(b))
}

// hasBPFCaps reads CapEff from a /proc/PID/status text.
func hasBPFCaps(status string) bool {
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			const capSysAdmin, capBPF = 21, 39
			return err == nil && (caps&(1<<capSysAdmin) != 0 || caps&(1<<capBPF) != 0)
		}
	}
	return false
}

var retZero = asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}

// tracing loads a no-op BTF tracing program for target and attaches it
// for a moment: the load needs the kernel's BTF and the target's type,
// the attach needs the kernel to permit the link (trampolines for fentry).
func tracing(at ebpf.AttachType, target string) error {
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "sonde_probe", Type: ebpf.Tracing, AttachType: at, AttachTo: target,
		Instructions: retZero, License: "GPL",
	})
	if err != nil {
		return fmt.Errorf("loading a probe program: %w", err)
	}
	defer p.Close()
	l, err := link.AttachTracing(link.TracingOptions{Program: p})
	if err != nil {
		return fmt.Errorf("attaching a probe program: %w", err)
	}
	return l.Close()
}

func (k *kernelFeatures) TPBTF(event string) error {
	return k.once("tp_btf/"+event, func() error { return tracing(ebpf.AttachTraceRawTp, event) })
}

func (k *kernelFeatures) RawTP() error {
	return k.once("raw_tp", func() error { return features.HaveProgramType(ebpf.RawTracepoint) })
}

func (k *kernelFeatures) Fentry(fn string) error {
	return k.once("fentry/"+fn, func() error { return tracing(ebpf.AttachTraceFEntry, fn) })
}

func (k *kernelFeatures) Kprobe(fn string) error {
	return k.once("kprobe/"+fn, func() error {
		p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "sonde_probe", Type: ebpf.Kprobe, Instructions: retZero, License: "GPL"})
		if err != nil {
			return fmt.Errorf("loading a probe program: %w", err)
		}
		defer p.Close()
		l, err := link.Kprobe(fn, p, nil)
		if err != nil {
			return err
		}
		return l.Close()
	})
}
