package bpfskel

import (
	"runtime"
	"sort"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

// kernelTypes is the kernel's BTF, read once per process: cilium/ebpf
// otherwise indexes /sys/kernel/btf/vmlinux (40 to 120 ms here) for
// every collection and every attach-mode probe. WarmKernelTypes starts
// reading it early, so the read overlaps what comes before the load.
var kernelTypes = btf.NewCache()

// WarmKernelTypes reads the kernel's BTF on a goroutine of its own, for
// a program load soon after.
func WarmKernelTypes() {
	go kernelTypes.Kernel()
}

// newProgram loads one program with the process's kernel types.
func newProgram(ps *ebpf.ProgramSpec) (*ebpf.Program, error) {
	c, err := ebpf.NewCollectionWithOptions(&ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{"p": ps}},
		ebpf.CollectionOptions{Cache: kernelTypes})
	if err != nil {
		return nil, err
	}
	return c.Programs["p"], nil
}

// loadCollection loads spec's maps, then its programs side by side, one
// goroutine each up to the number of CPUs: each program's load is the
// kernel verifying it in the bpf() call, single-threaded, and a tool with
// a stack walk in two programs (offcpu's switch and wake-up) waited for
// one verification after the other. The maps are created once and shared.
func loadCollection(spec *ebpf.CollectionSpec) (*ebpf.Collection, error) {
	cache := kernelTypes
	if len(spec.Programs) < 2 || runtime.NumCPU() < 2 {
		return ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{Cache: cache})
	}
	mapsOnly := spec.Copy()
	mapsOnly.Programs = map[string]*ebpf.ProgramSpec{}
	coll, err := ebpf.NewCollectionWithOptions(mapsOnly, ebpf.CollectionOptions{Cache: cache})
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(spec.Programs))
	for name := range spec.Programs {
		names = append(names, name)
	}
	sort.Strings(names)
	progs := make([]*ebpf.Program, len(names))
	errs := make([]error, len(names))
	sem := make(chan struct{}, runtime.NumCPU())
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			progs[i], errs[i] = loadProgram(spec, name, coll.Maps, cache)
		}()
	}
	wg.Wait()
	coll.Programs = map[string]*ebpf.Program{}
	var first error
	for i, name := range names {
		if errs[i] != nil && first == nil {
			first = errs[i]
		}
		if progs[i] != nil {
			coll.Programs[name] = progs[i]
		}
	}
	if first != nil {
		coll.Close()
		return nil, first
	}
	return coll, nil
}

// loadProgram loads program name of spec against the maps already
// created: a collection of that one program whose maps are replaced by
// maps (their clones are closed here; the program holds the maps).
func loadProgram(spec *ebpf.CollectionSpec, name string, maps map[string]*ebpf.Map, cache *btf.Cache) (*ebpf.Program, error) {
	one := spec.Copy()
	one.Programs = map[string]*ebpf.ProgramSpec{name: one.Programs[name]}
	c, err := ebpf.NewCollectionWithOptions(one, ebpf.CollectionOptions{MapReplacements: maps, Cache: cache})
	if err != nil {
		return nil, err // cilium/ebpf names the program
	}
	p := c.Programs[name]
	delete(c.Programs, name)
	c.Close()
	return p, nil
}
