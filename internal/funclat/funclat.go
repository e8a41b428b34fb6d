// Package funclat measures the latency distribution of functions: user
// functions through uprobes and uretprobes, kernel functions through
// fentry/fexit or else kprobes. Each call's latency reaches user space
// through a ring buffer, so percentiles are exact (seed 004: getnameinfo()
// took 32–134 ms per call).
package funclat

import (
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/sonde-dev/sonde/internal/bpfmaps"
	"github.com/sonde-dev/sonde/internal/histogram"
	"github.com/sonde-dev/sonde/internal/probe"
	"github.com/sonde-dev/sonde/internal/procfs"
	"github.com/sonde-dev/sonde/internal/runctl"
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
			if bin, err = findObject(bin, pid); err != nil {
				return nil, err
			}
		}
		if bin == "" {
			if strings.ContainsAny(glob, "*?[") {
				return nil, fmt.Errorf("kernel function patterns need an exact name, not %q", glob)
			}
			out = append(out, Func{Name: glob})
			continue
		}
		if !strings.ContainsAny(glob, "*?[") {
			// A source name: the compiler's clones count as the function.
			r, err := probe.ResolveFile(bin, glob, true)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", bin, err)
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

// findObject finds a binary or a library by short name ("libc"), in the
// target process's mappings first, then in the usual directories.
func findObject(name string, pid int) (string, error) {
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
		if len(m) > 0 {
			sort.Strings(m)
			return m[0], nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("no binary or library %q found (give a path)", name)
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
}

type uprobeObjs struct {
	Entry  *ebpf.Program `ebpf:"uprobe_entry"`
	Return *ebpf.Program `ebpf:"uprobe_return"`
	funclatMaps
}

type kprobeObjs struct {
	Entry  *ebpf.Program `ebpf:"kprobe_entry"`
	Return *ebpf.Program `ebpf:"kprobe_return"`
	funclatMaps
}

type fentryObjs struct {
	Entry  *ebpf.Program `ebpf:"fentry_entry"`
	Return *ebpf.Program `ebpf:"fexit_return"`
	funclatMaps
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
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("raising the locked-memory limit for BPF maps: %w", err)
	}
	res := &Result{Hists: make([]*histogram.Hist, len(o.Funcs))}
	for i := range res.Hists {
		res.Hists[i] = &histogram.Hist{}
	}
	var links []link.Link
	defer func() {
		for _, l := range links {
			l.Close()
		}
	}()
	var maps *funclatMaps
	var closers []func() error
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	loadInto := func(objs any, prep func(*ebpf.CollectionSpec)) error {
		spec, err := loadFunclat()
		if err != nil {
			return err
		}
		if err := spec.Variables["target_pid"].Set(uint32(o.Pid)); err != nil {
			return err
		}
		if prep != nil {
			prep(spec)
		}
		return spec.LoadAndAssign(objs, nil)
	}
	if !kernel {
		var objs uprobeObjs
		if err := loadInto(&objs, nil); err != nil {
			return nil, fmt.Errorf("loading the uprobe programs: %w", err)
		}
		closers = append(closers, objs.Entry.Close, objs.Return.Close, objs.funclatMaps.Close)
		maps, res.Attach = &objs.funclatMaps, "uprobe"
		for i, f := range o.Funcs {
			ex, err := link.OpenExecutable(f.Binary)
			if err != nil {
				return nil, fmt.Errorf("opening %s: %w", f.Binary, err)
			}
			opts := &link.UprobeOptions{PID: o.Pid, Cookie: uint64(i)}
			syms := f.Symbols
			if len(syms) == 0 {
				syms = []string{f.Name}
			}
			for _, sym := range syms {
				l, err := ex.Uprobe(sym, objs.Entry, opts)
				if err != nil {
					return nil, fmt.Errorf("uprobe on %s (%s): %w", f, sym, err)
				}
				links = append(links, l)
				l, err = ex.Uretprobe(sym, objs.Return, opts)
				if err != nil {
					return nil, fmt.Errorf("uretprobe on %s (%s): %w", f, sym, err)
				}
				links = append(links, l)
			}
		}
	} else {
		var why []string
		ok := false
		// fentry/fexit: a BPF trampoline per function.
		for i, f := range o.Funcs {
			var objs fentryObjs
			err := loadInto(&objs, func(s *ebpf.CollectionSpec) {
				s.Programs["fentry_entry"].AttachTo = f.Name
				s.Programs["fexit_return"].AttachTo = f.Name
			})
			if err == nil {
				var l1, l2 link.Link
				l1, err = link.AttachTracing(link.TracingOptions{Program: objs.Entry, Cookie: uint64(i)})
				if err == nil {
					links = append(links, l1)
					l2, err = link.AttachTracing(link.TracingOptions{Program: objs.Return, Cookie: uint64(i)})
					if err == nil {
						links = append(links, l2)
					}
				}
				closers = append(closers, objs.Entry.Close, objs.Return.Close, objs.funclatMaps.Close)
				if i == 0 {
					maps = &objs.funclatMaps
				}
			}
			if err != nil {
				why = append(why, "fentry: "+firstLine(err))
				break
			}
			if len(o.Funcs) > 1 {
				why = append(why, "fentry: one function per run")
				err = errors.New("several")
				break
			}
			ok, res.Attach = true, "fentry"
		}
		if !ok {
			for _, l := range links {
				l.Close()
			}
			links = nil
			var objs kprobeObjs
			err := loadInto(&objs, nil)
			if err == nil {
				closers = append(closers, objs.Entry.Close, objs.Return.Close, objs.funclatMaps.Close)
				maps, res.Attach = &objs.funclatMaps, "kprobe"
				for i, f := range o.Funcs {
					var l link.Link
					l, err = link.Kprobe(f.Name, objs.Entry, &link.KprobeOptions{Cookie: uint64(i)})
					if err != nil {
						break
					}
					links = append(links, l)
					if l, err = link.Kretprobe(f.Name, objs.Return, &link.KprobeOptions{Cookie: uint64(i)}); err != nil {
						break
					}
					links = append(links, l)
				}
			}
			if err != nil {
				why = append(why, "kprobe: "+firstLine(err))
				return nil, fmt.Errorf("cannot measure kernel function %s: this kernel permits neither fentry (BPF trampolines) nor kprobes (%s)", o.Funcs[0].Name, strings.Join(why, "; "))
			}
		}
	}
	rd, err := ringbuf.NewReader(maps.Events)
	if err != nil {
		return nil, fmt.Errorf("opening the ring buffer: %w", err)
	}
	var mu sync.Mutex
	var stopping atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		var rec ringbuf.Record
		for {
			rd.SetDeadline(time.Now().Add(100 * time.Millisecond))
			if err := rd.ReadInto(&rec); err != nil {
				if errors.Is(err, os.ErrDeadlineExceeded) && !stopping.Load() {
					continue
				}
				if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, ringbuf.ErrClosed) {
					return
				}
				continue
			}
			b := rec.RawSample
			if len(b) < 24 {
				continue
			}
			lat := binary.LittleEndian.Uint64(b)
			fn := int(binary.LittleEndian.Uint32(b[8:]))
			if fn < len(res.Hists) {
				mu.Lock()
				res.Hists[fn].Add(lat)
				mu.Unlock()
			}
		}
	}()
	start := time.Now()
	runctl.Until(ctx, o.Duration, o.Interval, nil, func() {
		mu.Lock()
		cur := res.Hists
		res.Hists = make([]*histogram.Hist, len(cur))
		for i := range res.Hists {
			res.Hists[i] = &histogram.Hist{}
		}
		mu.Unlock()
		if o.OnInterval != nil {
			o.OnInterval(cur)
		}
	})
	for _, l := range links {
		l.Close()
	}
	links = nil
	stopping.Store(true)
	<-done
	rd.Close()
	res.Drops = bpfmaps.SumPerCPU(maps.Drops, 0)
	res.Elapsed = time.Since(start)
	return res, nil
}

func firstLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
