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
	return new(Reader[K, V]).Each(m, fn)
}

// Entry is one key and its value, as All reads them.
type Entry[K, V any] struct {
	Key   K
	Value V
}

// All reads every entry of a hash map (Each) into a slice, for a reader
// that needs them after other maps are read.
func All[K, V any](m *ebpf.Map) ([]Entry[K, V], error) {
	var out []Entry[K, V]
	err := Each(m, func(k K, v V) { out = append(out, Entry[K, V]{k, v}) })
	return out, err
}

// Reader reads maps a batch at a time into buffers it keeps: a tool that
// scans a map every 100 ms allocates them once, not at every scan.
type Reader[K, V any] struct {
	keys []K
	vals []V
}

// Each is bpfmaps.Each with r's buffers.
func (r *Reader[K, V]) Each(m *ebpf.Map, fn func(K, V)) error {
	done, err := r.batches(m.BatchLookup, fn)
	if done || err != nil {
		return err
	}
	var k K
	var v V
	it := m.Iterate()
	for it.Next(&k, &v) {
		fn(k, v)
	}
	return it.Err()
}

// batches calls fn for every entry op returns, a batch at a time; done
// is false when the kernel has no such batch operation.
func (r *Reader[K, V]) batches(op func(*ebpf.MapBatchCursor, any, any, *ebpf.BatchOptions) (int, error), fn func(K, V)) (done bool, err error) {
	if r.keys == nil {
		r.keys, r.vals = make([]K, batchSize), make([]V, batchSize)
	}
	var cursor ebpf.MapBatchCursor
	for {
		n, err := op(&cursor, r.keys, r.vals, nil)
		for i := 0; i < n; i++ {
			fn(r.keys[i], r.vals[i])
		}
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return true, nil
		}
		if errors.Is(err, ebpf.ErrNotSupported) {
			return false, nil
		}
		if err != nil {
			return true, err
		}
	}
}

// Read calls fn for every entry of a hash map: with reset as Drain does
// (an interval's read and reset in one step), else as Each.
func Read[K, V any](m *ebpf.Map, reset bool, fn func(K, V)) error {
	if reset {
		return Drain(m, fn)
	}
	return Each(m, fn)
}

// Drain calls fn for every entry of a hash map and deletes it, a batch
// at a time (one syscall per 4,096 entries), so an interval's read and
// its reset are one step: what the programs add while the entries are
// named and built into a report stays for the next interval. Where the
// kernel has no batch lookup-and-delete (< 5.6) it reads, then clears.
func Drain[K, V any](m *ebpf.Map, fn func(K, V)) error {
	r := new(Reader[K, V])
	done, err := r.batches(m.BatchLookupAndDelete, fn)
	if done || err != nil {
		return err
	}
	if err := r.Each(m, fn); err != nil {
		return err
	}
	return Clear[K](m)
}
