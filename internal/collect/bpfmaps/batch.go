package bpfmaps

import (
	"errors"

	"github.com/cilium/ebpf"
)

// batchSize is how many entries one batch lookup returns.
const batchSize = 4096

// Each calls fn for every entry of a hash map, reading it a batch at a
// time (one syscall per 4,096 entries, where iterating costs two per
// entry), or by iteration where the kernel has no batch lookup (< 5.6).
func Each[K, V any](m *ebpf.Map, fn func(K, V)) error {
	keys, vals := make([]K, batchSize), make([]V, batchSize)
	var cursor ebpf.MapBatchCursor
	for {
		n, err := m.BatchLookup(&cursor, keys, vals, nil)
		for i := 0; i < n; i++ {
			fn(keys[i], vals[i])
		}
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return nil
		}
		if errors.Is(err, ebpf.ErrNotSupported) {
			break
		}
		if err != nil {
			return err
		}
	}
	var k K
	var v V
	it := m.Iterate()
	for it.Next(&k, &v) {
		fn(k, v)
	}
	return it.Err()
}
