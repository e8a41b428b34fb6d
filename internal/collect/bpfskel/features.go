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

// ErrNoPrivilege is what CheckPrivileges returns (wrapped) when this
// process may not load tracing BPF programs.
var ErrNoPrivilege = errors.New("permission denied")

// CheckPrivileges says, before anything is tried, whether this process
// may load and attach tracing BPF programs: root (CAP_SYS_ADMIN), or
// CAP_BPF with CAP_PERFMON. Without them the first failure would be an
// unrelated one (raising RLIMIT_MEMLOCK, reading tracefs), naming the
// wrong cause.
func CheckPrivileges() error {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return nil // let the kernel decide
	}
	if missing := missingCaps(string(b)); missing != "" {
		return fmt.Errorf("%w: BPF tools need root, or CAP_BPF and CAP_PERFMON (this process lacks %s; run with sudo, or setcap cap_bpf,cap_perfmon+ep on the binary)", ErrNoPrivilege, missing)
	}
	return nil
}

// missingCaps reads CapEff from a /proc/PID/status text and names the
// capabilities BPF tracing lacks ("" when none).
func missingCaps(status string) string {
	const capSysAdmin, capPerfmon, capBPF = 21, 38, 39
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil || caps&(1<<capSysAdmin) != 0 {
				return ""
			}
			var miss []string
			for _, c := range []struct {
				bit  uint
				name string
			}{{capBPF, "CAP_BPF"}, {capPerfmon, "CAP_PERFMON"}} {
				if caps&(1<<c.bit) == 0 {
					miss = append(miss, c.name)
				}
			}
			return strings.Join(miss, " and ")
		}
	}
	return ""
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
	p, err := newProgram(&ebpf.ProgramSpec{
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
