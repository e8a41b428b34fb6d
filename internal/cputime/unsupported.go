//go:build !(386 || amd64 || arm64)

package cputime

import (
	"fmt"
	"runtime"

	"github.com/cilium/ebpf"
)

// BPF objects are generated for amd64 and arm64 only (make generate).
type cputimeMaps struct{ Base, Curr, Lost, Times *ebpf.Map }

func (m *cputimeMaps) Close() error { return nil }

type cputimeCputimeCurr struct {
	Since    uint64
	Base     uint64
	Tid, Pid uint32
	Comm     [16]int8
}

type cputimeCputimeVal struct {
	Ns       uint64
	Pid, Pad uint32
	Comm     [16]int8
}

func loadCputime() (*ebpf.CollectionSpec, error) {
	return nil, fmt.Errorf("cputime is not built for %s", runtime.GOARCH)
}
