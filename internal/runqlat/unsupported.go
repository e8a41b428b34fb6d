//go:build !(386 || amd64 || arm64)

package runqlat

import (
	"fmt"
	"runtime"

	"github.com/cilium/ebpf"
)

// BPF objects are generated for amd64 and arm64 only (make generate).
type runqlatMaps struct{ Hist, Starts, Switches *ebpf.Map }

func (m *runqlatMaps) Close() error { return nil }

type runqlatRunqlatKey struct{ Group, Slot uint32 }

func loadRunqlat() (*ebpf.CollectionSpec, error) {
	return nil, fmt.Errorf("runqlat is not built for %s", runtime.GOARCH)
}
