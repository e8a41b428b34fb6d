package memleak

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/collect/funcexit"
	"github.com/sonde-dev/sonde/internal/collect/procfs"
)

// entryPoints are the allocator functions probed, by their C name; each
// one's attach cookie is its member of the program's enum memleak_fn
// (FN_<NAME>, read from the object: fnCookies). free and munmap need no
// return probe.
var entryPoints = []string{"malloc", "calloc", "realloc", "reallocarray", "posix_memalign",
	"aligned_alloc", "memalign", "valloc", "pvalloc", "mmap", "free", "munmap"}

// fnCookies are enum memleak_fn's values by member name, from the
// object's BTF.
var fnCookies = sync.OnceValues(func() (map[string]uint64, error) {
	spec, err := loadMemleak()
	if err != nil {
		return nil, err
	}
	return bpfskel.Enum(spec, "memleak_fn")
})

// cookie is the attach cookie that tells the program which entry point fn
// (an entryPoints name) it runs for.
func cookie(fn string) (uint64, error) {
	cookies, err := fnCookies()
	if err != nil {
		return 0, err
	}
	c, ok := cookies["FN_"+strings.ToUpper(fn)]
	if !ok {
		return 0, fmt.Errorf("the memleak program's enum memleak_fn has no FN_%s", strings.ToUpper(fn))
	}
	return c, nil
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
	fn     string // its entryPoints name
	cookie uint64 // fn's attach cookie
}

func (a *allocator) String() string {
	names := make([]string, len(a.funcs))
	for i, f := range a.funcs {
		names[i] = f.symbol
	}
	return fmt.Sprintf("uprobes on %s: %s", a.path, strings.Join(names, ", "))
}

// hooks attach one program to every entry point and one to every return
// (the cookie tells the functions apart): two uprobe_multi links, where a
// link per function took the kernel 80-95 ms each to remove at exit.
// Kernels without uprobe_multi get a uprobe per place (bpfskel).
func (a *allocator) hooks(pid int) []bpfskel.Hook {
	var syms, rets []string
	var cookies, retCookies []uint64
	for _, f := range a.funcs {
		syms, cookies = append(syms, f.symbol), append(cookies, f.cookie)
		if f.fn != "free" && f.fn != "munmap" {
			rets, retCookies = append(rets, f.symbol), append(retCookies, f.cookie)
		}
	}
	// The returns go first, so no entry is recorded without the return
	// that consumes it.
	return []bpfskel.Hook{
		bpfskel.UprobeMultiHook(a.path, rets, make([]uint64, len(rets)), retCookies, memleakProgMultiAllocReturn, memleakProgUprobeAllocReturn, true, pid),
		bpfskel.UprobeMultiHook(a.path, syms, make([]uint64, len(syms)), cookies, memleakProgMultiAllocEntry, memleakProgUprobeAllocEntry, false, pid),
	}
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
	if !a.has("malloc") || !a.has("free") {
		return nil, fmt.Errorf("%s defines no %smalloc and %sfree: name the allocator with --lib PATH and --symbol-prefix", path, o.Prefix, o.Prefix)
	}
	for i := range a.funcs {
		if a.funcs[i].cookie, err = cookie(a.funcs[i].fn); err != nil {
			return nil, err
		}
	}
	return a, nil
}

func (a *allocator) has(fn string) bool {
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
	for _, fn := range entryPoints {
		v, ok := addrs[prefix+fn]
		if !ok || taken[v] {
			continue
		}
		taken[v] = true
		out = append(out, probed{symbol: prefix + fn, fn: fn})
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
