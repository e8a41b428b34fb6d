//go:build !(386 || amd64 || arm64)

package offcpu

import (
	"fmt"
	"runtime"

	"github.com/cilium/ebpf"
)

// BPF objects are generated for amd64 and arm64 only (make generate).
type offcpuMaps struct {
	Blocked, Errors, Starts, Stacks, Wakers *ebpf.Map
}

func (m *offcpuMaps) Close() error { return nil }

type offcpuOffcpuKey struct {
	Pid, Tid                         uint32
	UserStack, KernelStack           int32
	WakerPid                         uint32
	WakerUserStack, WakerKernelStack int32
	Comm, WakerComm                  [16]int8
}

func loadOffcpu() (*ebpf.CollectionSpec, error) {
	return nil, fmt.Errorf("off-CPU analysis is not built for %s", runtime.GOARCH)
}
