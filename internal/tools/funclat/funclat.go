// Package funclat measures the latency distribution of functions: user
// functions through uprobes and uretprobes, kernel functions through
// fentry/fexit or else kprobes (chosen by probing the kernel). Each call's latency reaches user space
// through a ring buffer, so percentiles are exact (seed 004: getnameinfo()
// took 32–134 ms per call).
package funclat

import (
	"bufio"
	"context"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"github.com/sonde-dev/sonde/internal/collect/bpfmaps"
	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/collect/funcexit"
	"github.com/sonde-dev/sonde/internal/collect/perf"
	"github.com/sonde-dev/sonde/internal/collect/probe"
	"github.com/sonde-dev/sonde/internal/collect/procfs"
	"github.com/sonde-dev/sonde/internal/collect/runctl"
	"github.com/sonde-dev/sonde/internal/model/histogram"
)

// Func is one function to measure.
type Func struct {
	Binary string // "" for kernel functions
	Name   string
	// Symbols are where Name's code starts when the compiler renamed it
	// (clones such as Name.isra.0); nil means the symbol Name itself.
	Symbols []string
	// Note says which symbols a source name resolved to ("" when simply
	// its own); one line for stderr.
	Note string
}

// String is how reports name it.
func (f Func) String() string {
	if f.Binary == "" {
		return f.Name
	}
	return filepath.Base(f.Binary) + ":" + f.Name
}

// Names are how reports name fs; each Note (which clone or call site
// stands for a name) goes to notes as a "sonde: " line.
func Names(fs []Func, notes io.Writer) []string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.String()
		if f.Note != "" {
			fmt.Fprintln(notes, "sonde: "+f.Note)
		}
	}
	return names
}

// Resolve expands patterns into functions: "/path/bin:glob", "lib:glob"
// (a library by short name, e.g. libc:getaddrinfo), "glob" with a binary
// from -x, or a kernel function name.
func Resolve(patterns []string, binary string, pid int) ([]Func, error) {
	var out []Func
	seen := map[string]bool{}
	for _, p := range patterns {
		bin, glob := binary, p
		if i := strings.LastIndexByte(p, ':'); i > 0 {
			bin, glob = p[:i], p[i+1:]
			var err error
			if bin, err = FindObject(bin, pid); err != nil {
				return nil, err
			}
		}
		if bin == "" {
			if strings.ContainsAny(glob, "*?[") {
				return nil, fmt.Errorf("kernel function patterns need an exact name, not %q", glob)
			}
			if err := kernelFunction(glob); err != nil {
				return nil, err
			}
			out = append(out, Func{Name: glob})
			continue
		}
		if !strings.ContainsAny(glob, "*?[") {
			// A source name: the compiler's clones count as the function.
			r, err := probe.ResolveFile(bin, glob, true)
			if err != nil {
				return nil, probe.InBinary(bin, err)
			}
			if k := bin + ":" + glob; !seen[k] {
				seen[k] = true
				out = append(out, Func{Binary: bin, Name: glob, Symbols: r.Symbols(), Note: r.Note})
			}
			continue
		}
		names, err := matchSymbols(bin, glob)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			k := bin + ":" + n
			if !seen[k] {
				seen[k] = true
				out = append(out, Func{Binary: bin, Name: n})
			}
		}
	}
	if len(out) > 64 {
		return nil, fmt.Errorf("%d functions match: narrow the pattern (at most 64)", len(out))
	}
	return out, nil
}

// FindObject finds a binary or a library by short name ("libc"), in the
// target process's mappings first, then in the usual directories.
func FindObject(name string, pid int) (string, error) {
	if strings.Contains(name, "/") {
		if _, err := os.Stat(name); err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		return filepath.Abs(name)
	}
	base := name
	if !strings.HasPrefix(base, "lib") {
		base = "lib" + base
	}
	if pid > 0 {
		if maps, err := procfs.ReadMaps(pid); err == nil {
			for _, m := range maps {
				b := filepath.Base(m.Path)
				if b == name || strings.HasPrefix(b, base+".so") || strings.HasPrefix(b, base+"-") {
					return fmt.Sprintf("/proc/%d/root%s", pid, m.Path), nil
				}
			}
		}
	}
	for _, dir := range []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"} {
		m, _ := filepath.Glob(filepath.Join(dir, base+".so*"))
		sort.Strings(m)
		for _, p := range m {
			// libc.so itself is often a linker script, not the library.
			if f, err := elf.Open(p); err == nil {
				f.Close()
				return p, nil
			}
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("no binary or library %q found (give a path)", name)
}

// kernelFunction checks that the kernel has a function called name (from
// /proc/kallsyms, whose names anyone may read), so a misspelt one is named
// as such rather than as a missing attach mechanism.
func kernelFunction(name string) error {
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return nil // let the attach say what is wrong
	}
	defer f.Close()
	found, all, err := scanKallsyms(f, name)
	if err != nil || found {
		return nil
	}
	return fmt.Errorf("no kernel function %q in /proc/kallsyms (nearest: %s)", name, strings.Join(perf.NearestOf(name, all, 3), ", "))
}

// scanKallsyms reads /proc/kallsyms text: whether name is a function in
// it, and the function names sharing name's first three letters (for
// suggestions).
func scanKallsyms(r io.Reader, name string) (found bool, near []string, err error) {
	sc := bufio.NewScanner(r)
	prefix := name[:min(3, len(name))]
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 || (f[1] != "t" && f[1] != "T") {
			continue
		}
		if f[2] == name {
			return true, nil, nil
		}
		if strings.HasPrefix(f[2], prefix) && len(f) == 3 { // built-in, not a module's
			near = append(near, f[2])
		}
	}
	return false, near, sc.Err()
}

func matchSymbols(bin, glob string) ([]string, error) {
	f, err := elf.Open(bin)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", bin, err)
	}
	defer f.Close()
	var names, all []string
	seen := map[string]bool{}
	for _, get := range []func() ([]elf.Symbol, error){f.Symbols, f.DynamicSymbols} {
		syms, _ := get()
		for _, s := range syms {
			if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 {
				continue
			}
			n := strings.SplitN(s.Name, "@", 2)[0]
			if seen[n] {
				continue
			}
			seen[n] = true
			all = append(all, n)
			if ok, _ := path.Match(glob, n); ok {
				names = append(names, n)
			}
		}
	}
	if len(names) == 0 && f.Section(".symtab") == nil {
		return nil, probe.InBinary(bin, probe.Stripped(glob, len(all)))
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no function matches %q in %s (nearest: %s)", glob, bin, strings.Join(nearest(glob, all), ", "))
	}
	sort.Strings(names)
	return names, nil
}

func nearest(s string, all []string) []string {
	var out []string
	for _, a := range all {
		if strings.Contains(a, strings.Trim(s, "*?")) {
			out = append(out, a)
			if len(out) == 3 {
				break
			}
		}
	}
	return out
}

// Options configure a run.
type Options struct {
	Funcs    []Func
	Pid      int
	Duration time.Duration
	Interval time.Duration
	// OnInterval receives the histograms of each interval.
	OnInterval func(h []*histogram.Hist)
}

// Result holds one histogram per function (same order as Funcs).
type Result struct {
	Hists   []*histogram.Hist
	Drops   uint64
	Elapsed time.Duration
	Attach  string
	// Untimed counts, per function, returns of Go functions whose entry was
	// not matched (the goroutine's stack moved during the call): calls
	// counted but not in the histogram. Nil when no Go function is traced.
	Untimed []uint64
}

// maxFuncs is MAX_FUNCS in funclat.h: the attach cookie indexes per-function
// counters.
const maxFuncs = 64

// isGo says whether binary was built by Go, whose functions must not get
// uretprobes.
func isGo(binary string) (bool, error) {
	f, err := os.Open(binary)
	if err != nil {
		return false, fmt.Errorf("opening %s: %w", binary, err)
	}
	defer f.Close()
	return funcexit.IsGo(f), nil
}

// goHooks times a Go function from its first instruction to each of its
// return instructions, found by decoding it.
func goHooks(binary, sym string, pid int, cookie uint64) ([]bpfskel.Hook, error) {
	switch runtime.GOARCH {
	case "amd64", "arm64":
	default:
		return nil, fmt.Errorf("timing Go functions needs the goroutine register, which sonde reads on amd64 and arm64 only, not %s", runtime.GOARCH)
	}
	ef, err := elf.Open(binary)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", binary, err)
	}
	defer ef.Close()
	rets, err := funcexit.Returns(ef, sym)
	if err != nil {
		return nil, fmt.Errorf("%s is a Go program, where return probes (uretprobes) would crash it; sonde probes return instructions instead, but: %w", filepath.Base(binary), err)
	}
	hooks := []bpfskel.Hook{bpfskel.UprobeHook(binary, sym, funclatProgUprobeGoEntry, false, pid, cookie)}
	for _, off := range rets {
		hooks = append(hooks, bpfskel.UprobeAt(binary, sym, off, funclatProgUprobeGoReturn, pid, cookie))
	}
	return hooks, nil
}

// Run measures until the duration passes, ctx ends or a signal arrives.
func Run(ctx context.Context, o Options) (*Result, error) {
	if len(o.Funcs) == 0 {
		return nil, fmt.Errorf("no functions to measure")
	}
	kernel := o.Funcs[0].Binary == ""
	for _, f := range o.Funcs {
		if (f.Binary == "") != kernel {
			return nil, fmt.Errorf("measure user and kernel functions in separate runs")
		}
	}
	if len(o.Funcs) > maxFuncs {
		return nil, fmt.Errorf("%d functions: at most %d per run", len(o.Funcs), maxFuncs)
	}
	var hooks []bpfskel.Hook
	goFuncs := 0
	for i, f := range o.Funcs {
		if kernel {
			hooks = append(hooks, bpfskel.KernelFunc(f.Name, funclatProgFentryEntry, funclatProgKprobeEntry, false, uint64(i)),
				bpfskel.KernelFunc(f.Name, funclatProgFexitReturn, funclatProgKprobeReturn, true, uint64(i)))
		} else {
			// A function the compiler cloned is probed in every clone.
			syms := f.Symbols
			if len(syms) == 0 {
				syms = []string{f.Name}
			}
			goBin, err := isGo(f.Binary)
			if err != nil {
				return nil, err
			}
			for _, sym := range syms {
				if !goBin {
					hooks = append(hooks, bpfskel.UprobeHook(f.Binary, sym, funclatProgUprobeEntry, false, o.Pid, uint64(i)),
						bpfskel.UprobeHook(f.Binary, sym, funclatProgUprobeReturn, true, o.Pid, uint64(i)))
					continue
				}
				h, err := goHooks(f.Binary, sym, o.Pid, uint64(i))
				if err != nil {
					return nil, err
				}
				hooks = append(hooks, h...)
				goFuncs++
			}
		}
	}
	var maps funclatMaps
	spec := func() (*ebpf.CollectionSpec, error) {
		spec, err := loadFunclat()
		if err != nil {
			return nil, err
		}
		// One histogram per traced function.
		spec.Maps["hist"].MaxEntries = uint32(len(o.Funcs) * histogram.Slots)
		return spec, nil
	}
	s, err := bpfskel.Open(bpfskel.Tool{
		Name: "function latency", Spec: spec, Maps: &maps, Hooks: hooks,
		Consts: map[string]any{funclatVarTargetPid: uint32(o.Pid)},
	})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	res := &Result{Attach: s.Mode()}
	if goFuncs > 0 {
		res.Attach += " (Go: entry and return instructions, no uretprobes)"
	}
	hist, err := newKernelHists(&maps, len(o.Funcs))
	if err != nil {
		return nil, err
	}
	run, err := s.Run(ctx, runctl.Options{Duration: o.Duration, Interval: o.Interval, OnInterval: func() error {
		h, err := hist.read(false)
		if err != nil {
			return err
		}
		if o.OnInterval != nil {
			o.OnInterval(h)
		}
		return nil
	}})
	if err != nil {
		return nil, err
	}
	if res.Hists, err = hist.read(o.Interval == 0); err != nil {
		return nil, err
	}
	res.Drops = bpfmaps.SumPerCPU(maps.Drops, 0)
	if goFuncs > 0 {
		res.Untimed = make([]uint64, len(o.Funcs))
		for i := range res.Untimed {
			res.Untimed[i] = bpfmaps.SumPerCPU(maps.Untimed, uint32(i))
		}
	}
	res.Elapsed = run.Elapsed
	return res, nil
}

// kernelHists reads the histograms the programs keep in the kernel: each
// read returns what was added since the last one (the kernel's counts only
// grow; user space keeps the previous snapshot), so no call made between
// a read and a reset is lost.
type kernelHists struct {
	maps *funclatMaps
	mem  *ebpf.Memory
	n    int
	buf  []byte
	prev []uint64
	sums []bpfskel.HistSums // previous per-function totals
}

func newKernelHists(maps *funclatMaps, n int) (*kernelHists, error) {
	mem, err := maps.Hist.Memory()
	if err != nil {
		return nil, fmt.Errorf("mapping the latency histograms: %w", err)
	}
	return &kernelHists{maps: maps, mem: mem, n: n, buf: make([]byte, n*histogram.Slots*8),
		prev: make([]uint64, n*histogram.Slots), sums: make([]bpfskel.HistSums, n)}, nil
}

// read returns the calls since the last read, one histogram per function.
// whole: this read covers the whole run, so the kernel's exact minimum and
// maximum apply (an interval's come from its buckets, within 1/256).
func (k *kernelHists) read(whole bool) ([]*histogram.Hist, error) {
	if _, err := k.mem.ReadAt(k.buf, 0); err != nil {
		return nil, fmt.Errorf("reading the latency histograms: %w", err)
	}
	out := make([]*histogram.Hist, k.n)
	counts := make([]uint64, histogram.Slots)
	for f := range k.n {
		var per []bpfskel.HistSums
		if err := k.maps.Sums.Lookup(uint32(f), &per); err != nil {
			return nil, fmt.Errorf("reading the latency sums: %w", err)
		}
		tot := bpfskel.MergeCPUs(per)
		for i := range counts {
			j := f*histogram.Slots + i
			cur := binary.NativeEndian.Uint64(k.buf[j*8:])
			counts[i] = cur - k.prev[j]
			k.prev[j] = cur
		}
		out[f] = bpfskel.SlotHist(counts, tot, tot.SumNs-k.sums[f].SumNs, whole)
		k.sums[f] = tot
	}
	return out, nil
}
