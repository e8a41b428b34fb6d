package procfs

import (
	"errors"
	"fmt"
	"os"
	"sync"
)

// MapsKeeper keeps the mappings of processes read while they ran, so
// addresses sampled in a process can be placed after it exits (BPF
// profilers read their stacks at the end; /proc/PID/maps of a process that
// is gone, or a zombie, says nothing).
type MapsKeeper struct {
	mu   sync.Mutex
	kept map[int][]Mapping
	read func(pid int) ([]Mapping, error)
}

// NewMapsKeeper reads /proc/PID/maps.
func NewMapsKeeper() *MapsKeeper { return NewMapsKeeperWith(ReadMaps) }

// NewMapsKeeperWith reads mappings with read (tests fake it).
func NewMapsKeeperWith(read func(pid int) ([]Mapping, error)) *MapsKeeper {
	return &MapsKeeper{kept: map[int][]Mapping{}, read: read}
}

// Keep reads pid's mappings now and keeps them; false when they cannot be
// read (the process is gone, or a zombie).
func (k *MapsKeeper) Keep(pid int) bool {
	ms, err := k.read(pid)
	if err != nil {
		return false
	}
	return k.Put(pid, ms)
}

// Put keeps ms, read by someone else, as pid's mappings (the unwinder's
// loader reads them as it meets each process); false when there are none.
// The keeper holds ms as given: the caller must not change it.
func (k *MapsKeeper) Put(pid int, ms []Mapping) bool {
	if len(ms) == 0 {
		return false
	}
	k.mu.Lock()
	k.kept[pid] = ms
	k.mu.Unlock()
	return true
}

// Kept reports whether pid's mappings were kept.
func (k *MapsKeeper) Kept(pid int) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.kept[pid]
	return ok
}

// Read returns pid's mappings as they are now, or as last kept when they
// can no longer be read.
func (k *MapsKeeper) Read(pid int) ([]Mapping, error) {
	ms, err := k.read(pid)
	if err == nil && len(ms) > 0 {
		return ms, nil
	}
	k.mu.Lock()
	kept, ok := k.kept[pid]
	k.mu.Unlock()
	if ok {
		return kept, nil
	}
	return ms, err
}

// ForgetGone drops the mappings of processes that no longer exist: once
// their stacks are read (a profile's interval ends) they are not needed,
// and a long-running profiler would otherwise keep every process it saw.
func (k *MapsKeeper) ForgetGone() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for pid := range k.kept {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); errors.Is(err, os.ErrNotExist) {
			delete(k.kept, pid)
		}
	}
}
