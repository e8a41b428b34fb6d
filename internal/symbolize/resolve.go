package symbolize

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/sonde-dev/sonde/internal/collect/procfs"
	"github.com/sonde-dev/sonde/internal/model"
)

// Object is one object whose addresses are to be named, as a source saw it
// mapped: a file, the kernel, the vDSO or anonymous memory (maybe JIT code).
type Object struct {
	Kind    model.DSOKind // DSOUser: a mapped file; DSOJIT: anonymous memory
	Path    string        // as mapped; "" for the kernel and anonymous memory
	Pid     uint32        // a process that mapped it: its root and its perf map
	BuildID string        // hex, from the kernel (MMAP2) when it gave one
}

// MappedObject classifies a user-space mapping of pid by its path, the one
// rule recordings and live views share.
func MappedObject(pid uint32, path, buildID string) Object {
	switch {
	case path == "" || path == "//anon" || strings.HasPrefix(path, "[anon") || strings.HasPrefix(path, "/memfd:") || strings.HasPrefix(path, "/dev/zero"):
		// JIT code lives in anonymous memory and is named per process.
		return Object{Kind: model.DSOJIT, Pid: pid}
	case path == "[vdso]":
		return Object{Kind: model.DSOVDSO, Path: path, Pid: pid}
	case strings.HasPrefix(path, "["):
		return Object{Kind: model.DSOUnknown, Path: path, Pid: pid}
	}
	return Object{Kind: model.DSOUser, Path: path, Pid: pid, BuildID: buildID}
}

// KernelObject is the running kernel (modules are told apart per address).
var KernelObject = Object{Kind: model.DSOKernel}

// Anon reports whether addresses of o are absolute (anonymous memory, the
// kernel) rather than offsets into a file.
func (o Object) Anon() bool { return o.Kind == model.DSOJIT || o.Kind == model.DSOKernel }

// Offset turns addr, inside a mapping of o at start with file offset pgoff,
// into the address recorded for it: the file offset for file-backed
// objects (the same in every process that maps them), addr itself otherwise.
func (o Object) Offset(addr, start, pgoff uint64) uint64 {
	if o.Anon() {
		return addr
	}
	return addr - start + pgoff
}

// DSO is how the object appears in a profile before it is opened.
func (o Object) DSO() model.DSO {
	switch o.Kind {
	case model.DSOKernel:
		return model.DSO{Name: "[kernel.kallsyms]", Kind: model.DSOKernel}
	case model.DSOJIT:
		// Unknown until a perf map names it.
		return model.DSO{Name: fmt.Sprintf("[anon:%d]", o.Pid), Kind: model.DSOUnknown}
	}
	return model.DSO{Name: o.Path, Kind: o.Kind, BuildID: o.BuildID}
}

// key identifies an object for caching: file objects by path and build-id
// (the same in every process), anonymous memory per process.
func (o Object) key() Object {
	k := Object{Kind: o.Kind, Path: o.Path, BuildID: o.BuildID}
	if o.Kind == model.DSOJIT {
		k.Pid = o.Pid
	}
	return k
}

// Opened is what a resolver found for an object.
type Opened struct {
	Symbols Symbols
	// ToAddr turns a recorded address (see Object.Offset) into the object's
	// own, the one Symbols and model.Loc use; nil keeps it unchanged.
	ToAddr  func(recorded uint64) uint64
	BuildID string
	Name    string // replaces the object's name when set (a perf map's path)
}

// Resolver finds the symbols of one kind of object. A Symbolizer tries its
// resolvers in order; the first that opens an object names it.
type Resolver interface {
	Name() string
	// Open returns obj's symbols; an error wrapping ErrNotMine when obj is
	// not of this resolver's kind, ErrAbsent when it is but has nothing
	// to name it with here (not worth a warning).
	Open(obj Object) (*Opened, error)
}

var (
	// ErrNotMine says a resolver does not handle this kind of object.
	ErrNotMine = errors.New("not this resolver's kind of object")
	// ErrAbsent says the object has no symbols here, as is common (an
	// anonymous mapping without a perf map).
	ErrAbsent = errors.New("no symbols for this object")
)

// Quiet reports errors that do not deserve a warning.
func Quiet(err error) bool { return errors.Is(err, ErrNotMine) || errors.Is(err, ErrAbsent) }

// Symbolizer opens objects through its resolvers, each object once.
type Symbolizer struct {
	resolvers []Resolver
	mu        sync.Mutex
	cache     map[Object]openResult
	kept      *keptObjects // NewKept: objects kept across passes
}

type openResult struct {
	o   *Opened
	err error
}

// New returns a symbolizer trying resolvers in the order given.
func New(resolvers ...Resolver) *Symbolizer {
	return &Symbolizer{resolvers: resolvers, cache: map[Object]openResult{}}
}

// Default is the machine's own resolvers: kallsyms for the kernel, perf
// maps for JIT code, the vDSO image, and ELF files with their debug files.
func Default() *Symbolizer { return DefaultWith(true) }

// DefaultWith is Default, reading line tables only when lines is true: a
// report that shows no lines (profile, offcpu, memleak without a data
// file) need not read DWARF nor inflate compressed sections.
func DefaultWith(lines bool) *Symbolizer {
	return New(Kallsyms(), PerfMaps{}, VDSOImage(), ELFFiles{NoLines: !lines})
}

// Warm starts loading, each on a goroutine, the objects of objs that every
// process shares (the running kernel's symbols, the vDSO), so a pass that
// comes later finds them loaded: a recording warms them as its events
// stop, and kallsyms (tens of milliseconds to parse) is read while its
// rings drain instead of after.
func (s *Symbolizer) Warm(objs []Object) {
	for _, r := range s.resolvers {
		sh, ok := r.(*Shared)
		if !ok || !slices.ContainsFunc(objs, func(o Object) bool { return o.Kind == sh.kind }) {
			continue
		}
		go sh.Open(Object{Kind: sh.kind})
	}
}

// Open returns obj's symbols from the first resolver that has them. When
// none has, the error is the first real failure, else the first ErrAbsent,
// else ErrNotMine.
func (s *Symbolizer) Open(obj Object) (*Opened, error) {
	k := obj.key()
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.cache[k]; ok {
		return r.o, r.err
	}
	o, err := s.open(obj)
	s.cache[k] = openResult{o: o, err: err}
	return o, err
}

// open asks the resolvers, without the cache.
func (s *Symbolizer) open(obj Object) (*Opened, error) {
	var first, absent error
	for _, r := range s.resolvers {
		o, err := r.Open(obj)
		switch {
		case err == nil:
			return o, nil
		case errors.Is(err, ErrNotMine):
		case errors.Is(err, ErrAbsent):
			if absent == nil {
				absent = fmt.Errorf("%s: %w", r.Name(), err)
			}
		case first == nil:
			first = fmt.Errorf("%s: %w", r.Name(), err)
		}
	}
	if first == nil {
		first = absent
	}
	if first == nil {
		first = ErrNotMine
	}
	return nil, first
}

// Forget drops cached objects for which drop returns true (live views
// forget processes that exited and JIT maps that grew).
func (s *Symbolizer) Forget(drop func(Object) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.cache {
		if drop(k) {
			delete(s.cache, k)
		}
	}
}

// Resolved is one address named.
type Resolved struct {
	DSO   model.DSO // the object as views name it (a kernel module by its own name)
	Addr  uint64    // the address in the object (ELF virtual address)
	Frame Frame
	Found bool // Frame holds a function or a source line
}

// Name is how views print the frame: the function, or object+0xaddr.
func (r Resolved) Name() string {
	if r.Found && r.Frame.Func != "" {
		return r.Frame.Func
	}
	return model.UnnamedFrame(r.DSO.Name, r.Addr)
}

// Resolve names one recorded address of obj (see Object.Offset).
func (s *Symbolizer) Resolve(obj Object, recorded uint64) Resolved {
	o, err := s.Open(obj)
	return resolveIn(obj, o, err, recorded)
}

// resolveIn is the naming rule shared by the profile pass and live views.
func resolveIn(obj Object, o *Opened, err error, recorded uint64) Resolved {
	r := Resolved{DSO: obj.DSO(), Addr: recorded}
	if err != nil {
		return r
	}
	r.DSO = opened(obj, o)
	if o.ToAddr != nil {
		r.Addr = o.ToAddr(recorded)
	}
	r.Frame, r.Found = o.Symbols.Lookup(r.Addr)
	if r.Frame.Module != "" {
		r.DSO = model.DSO{Name: "[" + r.Frame.Module + "]", Kind: model.DSOModule}
	}
	return r
}

// opened is the object's model entry once a resolver opened it.
func opened(obj Object, o *Opened) model.DSO {
	d := obj.DSO()
	d.Kind = obj.Kind
	if o.Name != "" {
		d.Name = o.Name
	}
	if o.BuildID != "" {
		d.BuildID = o.BuildID
	}
	return d
}

// Shared is a Resolver of one kind of object that is the same in every
// process (the running kernel, the vDSO): loaded at its first use, kept.
type Shared struct {
	name string
	kind model.DSOKind
	load func() (*Opened, error)
	once sync.Once
	o    *Opened
	err  error
}

// Name implements Resolver.
func (r *Shared) Name() string { return r.name }

// Open implements Resolver.
func (r *Shared) Open(obj Object) (*Opened, error) {
	if obj.Kind != r.kind {
		return nil, ErrNotMine
	}
	r.once.Do(func() { r.o, r.err = r.load() })
	return r.o, r.err
}

// Kallsyms names kernel addresses from /proc/kallsyms.
func Kallsyms() *Shared {
	return &Shared{name: "kallsyms", kind: model.DSOKernel, load: func() (*Opened, error) {
		kern, err := LoadKallsyms()
		if err != nil {
			return nil, err
		}
		return &Opened{Symbols: kern, BuildID: KernelBuildID()}, nil
	}}
}

// VDSOImage names [vdso] frames from sonde's own vDSO, which is the same
// image in every process on this kernel.
func VDSOImage() *Shared {
	return &Shared{name: "vdso", kind: model.DSOVDSO, load: func() (*Opened, error) {
		e, _, err := VDSO()
		if err != nil {
			return nil, err
		}
		return &Opened{Symbols: e, ToAddr: e.FileOffsetToAddr, BuildID: e.BuildID}, nil
	}}
}

// PerfMaps names JIT code from /tmp/perf-PID.map.
type PerfMaps struct{}

// Name implements Resolver.
func (PerfMaps) Name() string { return "perf-map" }

// Open implements Resolver.
func (PerfMaps) Open(obj Object) (*Opened, error) {
	if obj.Kind != model.DSOJIT {
		return nil, ErrNotMine
	}
	pm, err := LoadPerfMap(int(obj.Pid))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrAbsent
	}
	if err != nil {
		return nil, err
	}
	return &Opened{Symbols: pm, Name: fmt.Sprintf("/tmp/perf-%d.map", obj.Pid)}, nil
}

// ELFFiles names addresses of mapped files from their ELF symbols, DWARF
// and separate debug files, through the mapping process's root first so
// binaries inside containers are found.
type ELFFiles struct {
	DebugDir string // default /usr/lib/debug
	NoLines  bool   // function names only (see Options.NoLines)
}

// Name implements Resolver.
func (ELFFiles) Name() string { return "elf" }

// Open implements Resolver.
func (r ELFFiles) Open(obj Object) (*Opened, error) {
	if obj.Kind != model.DSOUser || obj.Path == "" || strings.HasPrefix(obj.Path, "[") {
		return nil, ErrNotMine
	}
	e, err := r.open(obj)
	if err != nil {
		return nil, err
	}
	if obj.BuildID != "" && e.BuildID != "" && obj.BuildID != e.BuildID {
		return nil, fmt.Errorf("changed on disk since it was mapped (build-id %s, mapped %s)", e.BuildID, obj.BuildID)
	}
	return &Opened{Symbols: e, ToAddr: e.FileOffsetToAddr, BuildID: e.BuildID}, nil
}

func (r ELFFiles) open(obj Object) (*ELF, error) {
	path, deleted := strings.CutSuffix(obj.Path, " (deleted)")
	if via := heldPath(obj.Path, obj.BuildID); via != "" {
		// Held from its first mapping (another mount namespace, or a
		// temporary directory).
		if e, err := OpenELF(path, r.via(via)); err == nil {
			return e, nil
		}
	}
	if deleted && obj.Pid != 0 {
		// Unlinked (its directory may be gone too), but the process still
		// maps the file: the kernel opens it through the mapping.
		if via := deletedFile(int(obj.Pid), obj.Path); via != "" {
			if e, err := OpenELF(path, r.via(via)); err == nil {
				return e, nil
			}
		}
	}
	if obj.Pid != 0 {
		root := fmt.Sprintf("/proc/%d/root", obj.Pid)
		if _, err := os.Stat(root + path); err == nil {
			if e, err := OpenELF(path, r.options(root)); err == nil {
				return e, nil
			}
		}
	}
	return OpenELF(path, r.options(""))
}

func (r ELFFiles) options(root string) Options {
	return Options{Root: root, DebugDir: r.DebugDir, NoLines: r.NoLines}
}

// via is options for a file opened through another path (a held
// descriptor, a deleted file's mapping) that keeps its own name.
func (r ELFFiles) via(path string) Options {
	o := r.options("")
	o.Via = path
	return o
}

// deletedFile returns a path that opens the file pid maps as mapped (its
// name in /proc/PID/maps, ending in " (deleted)"): one of its mappings in
// /proc/PID/map_files, or /proc/PID/exe; "" when pid maps no such file.
func deletedFile(pid int, mapped string) string {
	if ms, err := procfs.ReadMaps(pid); err == nil {
		for _, m := range ms {
			if m.Path != mapped {
				continue
			}
			via := fmt.Sprintf("/proc/%d/map_files/%x-%x", pid, m.Start, m.End)
			if f, err := os.Open(via); err == nil {
				f.Close()
				return via
			}
		}
	}
	exe := fmt.Sprintf("/proc/%d/exe", pid)
	if l, err := os.Readlink(exe); err == nil && l == mapped {
		return exe
	}
	return ""
}

// CodeSource is implemented by objects whose machine code and line rows
// can be kept in a recording, so annotate works without the binary.
type CodeSource interface {
	Arch() string
	Code(start, size uint64) ([]byte, error)
	Lines(start, end uint64) []LineRow
}
