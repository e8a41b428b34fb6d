package memleak

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sonde-dev/sonde/internal/bpfskel"
	"github.com/sonde-dev/sonde/internal/funcexit"
	"github.com/sonde-dev/sonde/internal/procfs"
)

// entryPoints are the allocator functions probed, by their C name, with
// the program's enum memleak_fn. free and munmap need no return probe.
var entryPoints = []struct {
	name string
	fn   memleakMemleakFn
}{
	{"malloc", memleakMemleakFnFN_MALLOC}, {"calloc", memleakMemleakFnFN_CALLOC},
	{"realloc", memleakMemleakFnFN_REALLOC}, {"reallocarray", memleakMemleakFnFN_REALLOCARRAY},
	{"posix_memalign", memleakMemleakFnFN_POSIX_MEMALIGN}, {"aligned_alloc", memleakMemleakFnFN_ALIGNED_ALLOC},
	{"memalign", memleakMemleakFnFN_MEMALIGN}, {"valloc", memleakMemleakFnFN_VALLOC},
	{"pvalloc", memleakMemleakFnFN_PVALLOC}, {"mmap", memleakMemleakFnFN_MMAP},
	{"free", memleakMemleakFnFN_FREE}, {"munmap", memleakMemleakFnFN_MUNMAP},
}

// allocator is the binary whose functions are probed and which of them it
// defines.
type allocator struct {
	path   string
	prefix string
	funcs  []probed
}

type probed struct {
	symbol string
	fn     memleakMemleakFn
}

func (a *allocator) String() string {
	names := make([]string, len(a.funcs))
	for i, f := range a.funcs {
		names[i] = f.symbol
	}
	return fmt.Sprintf("uprobes on %s: %s", a.path, strings.Join(names, ", "))
}

func (a *allocator) hooks(pid int) []bpfskel.Hook {
	var hs []bpfskel.Hook
	for _, f := range a.funcs {
		if f.fn == memleakMemleakFnFN_FREE || f.fn == memleakMemleakFnFN_MUNMAP {
			hs = append(hs, bpfskel.UprobeHook(a.path, f.symbol, memleakProgFreeEntry, false, pid, uint64(f.fn)))
			continue
		}
		// The return probe goes first, so no entry is recorded without
		// the return that consumes it.
		hs = append(hs, bpfskel.UprobeHook(a.path, f.symbol, memleakProgAllocReturn, true, pid, uint64(f.fn)),
			bpfskel.UprobeHook(a.path, f.symbol, memleakProgAllocEntry, false, pid, uint64(f.fn)))
	}
	return hs
}

// findAllocator picks the binary to probe: --lib, else with a prefix the
// traced program itself, else the libc the process maps (the system's
// for a command not started yet).
func findAllocator(o Options) (*allocator, error) {
	path := o.Lib
	switch {
	case path != "":
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("allocator library: %w", err)
		}
	case o.Prefix != "" && len(o.Command) > 0:
		var err error
		if path, err = lookPath(o.Command[0]); err != nil {
			return nil, err
		}
	case o.Prefix != "":
		path = fmt.Sprintf("/proc/%d/exe", o.Pid)
	default:
		var err error
		if path, err = findLibc(o.Pid); err != nil {
			return nil, err
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening the allocator %s: %w", path, err)
	}
	defer f.Close()
	if funcexit.IsGo(f) {
		return nil, fmt.Errorf("%s is a Go program: return probes would crash it (Go moves its stacks), and Go's allocator is not malloc; use sonde profile or Go's heap profile", path)
	}
	ef, err := elf.NewFile(f)
	if err != nil {
		return nil, fmt.Errorf("reading the allocator %s: %w", path, err)
	}
	a := &allocator{path: path, prefix: o.Prefix, funcs: definedFuncs(ef, o.Prefix)}
	if !a.has(memleakMemleakFnFN_MALLOC) || !a.has(memleakMemleakFnFN_FREE) {
		return nil, fmt.Errorf("%s defines no %smalloc and %sfree: name the allocator with --lib PATH and --symbol-prefix", path, o.Prefix, o.Prefix)
	}
	return a, nil
}

func (a *allocator) has(fn memleakMemleakFn) bool {
	for _, f := range a.funcs {
		if f.fn == fn {
			return true
		}
	}
	return false
}

// definedFuncs finds the entry points ef defines. Names at one address
// (glibc's aliases) are probed once: two probes on one instruction would
// count one call twice.
func definedFuncs(ef *elf.File, prefix string) []probed {
	addrs := map[string]uint64{}
	for _, get := range []func() ([]elf.Symbol, error){ef.DynamicSymbols, ef.Symbols} {
		syms, _ := get()
		for _, s := range syms {
			if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Section != elf.SHN_UNDEF && s.Value != 0 {
				if _, ok := addrs[s.Name]; !ok {
					addrs[s.Name] = s.Value
				}
			}
		}
	}
	var out []probed
	taken := map[uint64]bool{}
	for _, e := range entryPoints {
		v, ok := addrs[prefix+e.name]
		if !ok || taken[v] {
			continue
		}
		taken[v] = true
		out = append(out, probed{symbol: prefix + e.name, fn: e.fn})
	}
	return out
}

func lookPath(name string) (string, error) {
	if strings.Contains(name, "/") {
		return filepath.Abs(name)
	}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: not found in PATH", name)
}

// findLibc is the C library pid maps (through its root, for containers),
// or the system's.
func findLibc(pid int) (string, error) {
	p, err := procfs.Libc(pid)
	switch {
	case err == nil && p == "" && pid > 0:
		err = fmt.Errorf("pid %d maps no libc (a static program?): name its allocator with --lib PATH or --symbol-prefix", pid)
	case err == nil && p == "":
		err = fmt.Errorf("no libc.so.6 found: name the allocator with --lib PATH")
	}
	return p, err
}
