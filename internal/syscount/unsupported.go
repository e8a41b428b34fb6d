//go:build !(386 || amd64 || arm64)

package syscount

import (
	"fmt"
	"runtime"

	"github.com/cilium/ebpf"
)

// BPF objects are generated for amd64 and arm64 only (make generate).
type syscountObjects struct {
	SysEnter, SysExit    *ebpf.Program
	Counts, Lost, Starts *ebpf.Map
}

func (o *syscountObjects) Close() error { return nil }

type syscountSyscountKey struct{ Pid, Nr uint32 }

type syscountSyscountVal struct {
	Count, TotalNs, MaxNs, Errors uint64
	Comm                          [16]int8
}

func loadSyscount() (*ebpf.CollectionSpec, error) {
	return nil, fmt.Errorf("syscount is not built for %s", runtime.GOARCH)
}
