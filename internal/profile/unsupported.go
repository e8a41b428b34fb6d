//go:build !(386 || amd64 || arm64)

package profile

import (
	"fmt"
	"runtime"

	"github.com/cilium/ebpf"
)

// BPF objects are generated for amd64 and arm64 only (make generate).
type profileObjects struct {
	DoSample *ebpf.Program
	Counts   *ebpf.Map
	Stacks   *ebpf.Map
	Errors   *ebpf.Map
}

func (o *profileObjects) Close() error { return nil }

type profileProfileKey struct {
	Pid, Tid               uint32
	UserStack, KernelStack int32
	Comm                   [16]int8
}

func loadProfile() (*ebpf.CollectionSpec, error) {
	return nil, fmt.Errorf("the BPF profiler is not built for %s: use sonde record", runtime.GOARCH)
}
