//go:build !(386 || amd64 || arm64)

package pairbpf

import (
	"fmt"
	"runtime"

	"github.com/cilium/ebpf"
)

// BPF objects are generated for amd64 and arm64 only (make generate).
type pairObjects struct {
	OnStart, OnEnd   *ebpf.Program
	Starts, Counters *ebpf.Map
	Events           *ebpf.Map
}

func (o *pairObjects) Close() error { return nil }

type pairPairEvent struct {
	Key                            [4]uint64
	StartNs, LatencyNs, Group, Aux uint64
	Pid, Tid                       uint32
	Comm                           [16]int8
}

func loadPair() (*ebpf.CollectionSpec, error) {
	return nil, fmt.Errorf("in-kernel pairing is not built for %s: record the events and use latency -i", runtime.GOARCH)
}
