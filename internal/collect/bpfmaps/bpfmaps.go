// Package bpfmaps reads the kinds of BPF map values every sonde tool shares:
// per-CPU counters, stack-map entries and fixed-size C strings (comm).
package bpfmaps

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
)

// SumPerCPU adds up a per-CPU u64 value (0 when the key is missing).
func SumPerCPU(m *ebpf.Map, key uint32) uint64 {
	var per []uint64
	if err := m.Lookup(key, &per); err != nil {
		return 0
	}
	var n uint64
	for _, v := range per {
		n += v
	}
	return n
}

// PerCPUSum reads a per-CPU u64 value again and again into one buffer:
// a poll of a counter allocates nothing per read but the lookup's own.
type PerCPUSum struct{ per []uint64 }

// Read adds up key's per-CPU values in m (0 when the key is missing).
func (s *PerCPUSum) Read(m *ebpf.Map, key uint32) uint64 {
	if s.per == nil {
		n, err := ebpf.PossibleCPU()
		if err != nil {
			return 0
		}
		s.per = make([]uint64, n)
	}
	if err := m.Lookup(key, s.per); err != nil {
		return 0
	}
	var n uint64
	for _, v := range s.per {
		n += v
	}
	return n
}

// Stack returns the instruction pointers of stack id (leaf first, without
// the zero padding), read into buf; nil for a failed walk (negative id) or a
// missing entry.
func Stack(m *ebpf.Map, id int32, buf []uint64) []uint64 {
	if id < 0 || m.Lookup(uint32(id), &buf) != nil {
		return nil
	}
	for i, ip := range buf {
		if ip == 0 {
			return buf[:i]
		}
	}
	return buf
}

// HashedStack is Stack for a hash map of stacks keyed by a 64-bit hash of
// their frames (0: none), as profile keeps kernel stacks.
func HashedStack(m *ebpf.Map, key uint64, buf []uint64) []uint64 {
	if key == 0 || m.Lookup(key, &buf) != nil {
		return nil
	}
	for i, ip := range buf {
		if ip == 0 {
			return buf[:i]
		}
	}
	return buf
}

// CString turns a fixed-size C char array (as bpf2go types it) into a string.
func CString(c []int8) string {
	b := make([]byte, 0, len(c))
	for _, x := range c {
		if x == 0 {
			break
		}
		b = append(b, byte(x))
	}
	return string(b)
}

// Clear deletes every key of a hash map whose keys are K (interval modes
// start each interval afresh). The keys are listed first: deleting during
// a walk of a hash map can restart it.
func Clear[K any](m *ebpf.Map) error {
	var keys []K
	var next K
	err := m.NextKey(nil, &next)
	for err == nil {
		keys = append(keys, next)
		err = m.NextKey(next, &next)
	}
	if !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("listing map keys: %w", err)
	}
	for _, k := range keys {
		if err := m.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("deleting a map key: %w", err)
		}
	}
	return nil
}

// ArrayCounts reads an array map of u64 values (key: index, u32) whole,
// in one slice indexed as the map is.
func ArrayCounts(m *ebpf.Map) ([]uint64, error) {
	out := make([]uint64, m.MaxEntries())
	err := Each(m, func(i uint32, n uint64) {
		if int(i) < len(out) {
			out[i] = n
		}
	})
	return out, err
}
