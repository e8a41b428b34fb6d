//go:build !(386 || amd64 || arm64)

package funclat

import (
	"fmt"
	"runtime"

	"github.com/cilium/ebpf"
)

// BPF objects are generated for amd64 and arm64 only (make generate).
type funclatMaps struct {
	Drops, Events, Starts *ebpf.Map
}

func (m *funclatMaps) Close() error { return nil }

func loadFunclat() (*ebpf.CollectionSpec, error) {
	return nil, fmt.Errorf("function latency is not built for %s", runtime.GOARCH)
}
