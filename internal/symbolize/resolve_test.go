package symbolize

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/collect/procfs"
	"github.com/sonde-dev/sonde/internal/model"
)

// fakeResolver names objects of one kind from a fixed table, as the real
// resolvers do from kallsyms, perf maps, the vDSO and ELF files.
type fakeResolver struct {
	name   string
	kind   model.DSOKind
	syms   []Symbol
	lines  map[uint64]int // address → line of "fake.c"
	shift  uint64         // ToAddr adds it (an ELF load bias)
	err    error          // returned for objects of its kind
	rename string
	opens  map[string]int // object path → times opened
}

func (f *fakeResolver) Name() string { return f.name }

func (f *fakeResolver) Open(obj Object) (*Opened, error) {
	if obj.Kind != f.kind {
		return nil, ErrNotMine
	}
	if f.opens == nil {
		f.opens = map[string]int{}
	}
	f.opens[obj.Path]++
	if f.err != nil {
		return nil, f.err
	}
	syms := &fakeSymbols{table: NewSymbolTable(append([]Symbol(nil), f.syms...)), lines: f.lines, kernel: f.kind == model.DSOKernel}
	o := &Opened{Symbols: syms, BuildID: "b1d", Name: f.rename}
	if f.lines != nil {
		o.Symbols = fakeCode{syms} // only objects with lines keep code
	}
	if f.shift != 0 {
		o.ToAddr = func(a uint64) uint64 { return a + f.shift }
	}
	return o, nil
}

type fakeSymbols struct {
	table  SymbolTable
	lines  map[uint64]int
	kernel bool
}

func (s *fakeSymbols) Lookup(addr uint64) (Frame, bool) {
	sym, ok := s.table.Find(addr, s.kernel)
	var fr Frame
	if ok {
		fr = Frame{Func: sym.Name, FuncStart: sym.Start, FuncSize: sym.Size}
		// Kernel fakes put modules in the name, after a colon.
		if name, mod, found := strings.Cut(sym.Name, ":"); found && s.kernel {
			fr.Func, fr.Module = name, mod
		}
	}
	if l, lok := s.lines[addr]; lok {
		fr.File, fr.Line, ok = "fake.c", l, true
	}
	return fr, ok
}

// fakeCode is a CodeSource: one zero byte per address.
type fakeCode struct{ *fakeSymbols }

func (fakeCode) Arch() string { return "amd64" }
func (fakeCode) Code(start, size uint64) ([]byte, error) {
	return make([]byte, size), nil
}
func (s fakeCode) Lines(start, end uint64) []LineRow {
	var out []LineRow
	for a, l := range s.lines {
		if a >= start && a < end {
			out = append(out, LineRow{Addr: a, File: "fake.c", Line: l})
		}
	}
	return out
}

func TestSymbolizerTriesResolversInOrder(t *testing.T) {
	obj := Object{Kind: model.DSOUser, Path: "/bin/app"}
	cases := []struct {
		name      string
		resolvers []Resolver
		wantFunc  string
		wantErr   string // "" for a name; "quiet" for an error without warning
	}{
		{"first_claiming_wins", []Resolver{
			&fakeResolver{name: "kernel", kind: model.DSOKernel, syms: []Symbol{{Name: "wrong", Start: 0x1000, Size: 0x100}}},
			&fakeResolver{name: "a", kind: model.DSOUser, syms: []Symbol{{Name: "from_a", Start: 0x1000, Size: 0x100}}},
			&fakeResolver{name: "b", kind: model.DSOUser, syms: []Symbol{{Name: "from_b", Start: 0x1000, Size: 0x100}}},
		}, "from_a", ""},
		{"failure_falls_through", []Resolver{
			&fakeResolver{name: "a", kind: model.DSOUser, err: errors.New("no such file")},
			&fakeResolver{name: "b", kind: model.DSOUser, syms: []Symbol{{Name: "from_b", Start: 0x1000, Size: 0x100}}},
		}, "from_b", ""},
		{"first_real_error_reported", []Resolver{
			&fakeResolver{name: "a", kind: model.DSOUser, err: ErrAbsent},
			&fakeResolver{name: "b", kind: model.DSOUser, err: errors.New("bad ELF")},
			&fakeResolver{name: "c", kind: model.DSOUser, err: errors.New("later")},
		}, "", "b: bad ELF"},
		{"absent_is_quiet", []Resolver{
			&fakeResolver{name: "a", kind: model.DSOUser, err: ErrAbsent},
		}, "", "quiet"},
		{"none_claims", []Resolver{
			&fakeResolver{name: "kernel", kind: model.DSOKernel},
		}, "", "quiet"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := New(c.resolvers...)
			r := s.Resolve(obj, 0x1010)
			_, err := s.Open(obj)
			switch {
			case c.wantErr == "":
				if err != nil || !r.Found || r.Frame.Func != c.wantFunc {
					t.Errorf("got %+v, %v; want %s", r, err, c.wantFunc)
				}
			case c.wantErr == "quiet":
				if !Quiet(err) {
					t.Errorf("error %v, want a quiet one", err)
				}
			default:
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Errorf("error %v, want %q", err, c.wantErr)
				}
				if r.Found || r.Name() != "app+0x1010" {
					t.Errorf("unopened object named %q", r.Name())
				}
			}
		})
	}
}

func TestSymbolizerOpensEachObjectOnce(t *testing.T) {
	elf := &fakeResolver{name: "elf", kind: model.DSOUser, syms: []Symbol{{Name: "f", Start: 0, Size: 0x100}}}
	bad := &fakeResolver{name: "elf", kind: model.DSOUser, err: errors.New("gone")}
	s := New(elf)
	for i := 0; i < 5; i++ {
		// Another process mapping the same file is the same object.
		s.Resolve(Object{Kind: model.DSOUser, Path: "/lib/libc.so", Pid: uint32(100 + i)}, uint64(i))
	}
	if elf.opens["/lib/libc.so"] != 1 {
		t.Errorf("opened %d times, want 1", elf.opens["/lib/libc.so"])
	}
	s = New(bad)
	s.Resolve(Object{Kind: model.DSOUser, Path: "/x"}, 1)
	s.Resolve(Object{Kind: model.DSOUser, Path: "/x"}, 2)
	if bad.opens["/x"] != 1 {
		t.Errorf("a failing object was retried %d times", bad.opens["/x"])
	}
}

// fakeProfile is what the builder hands the pass: locations with recorded
// addresses in objects of every kind.
func fakeProfile() (*model.Profile, []Object) {
	objs := []Object{
		KernelObject,
		{Kind: model.DSOUser, Path: "/usr/bin/app", Pid: 7},
		MappedObject(7, "//anon", ""),
		MappedObject(7, "[vdso]", ""),
		MappedObject(7, "/usr/lib/gone.so", "abcd"),
		{},                            // sonde's synthetic frames
		MappedObject(8, "//anon", ""), // JIT code without a map
	}
	p := &model.Profile{}
	for _, o := range objs {
		p.DSOs = append(p.DSOs, o.DSO())
	}
	p.DSOs[5] = model.DSO{Name: "[sonde]", Kind: model.DSOUnknown}
	p.Funcs = []model.Func{{Name: "--", DSO: 5}}
	locs := []struct {
		dso  int32
		addr uint64
	}{
		{0, 0xffffffff81001010}, // vmlinux
		{0, 0xffffffffc0000010}, // module
		{1, 0x1010},             // file offset; main at vaddr 0x401000
		{1, 0x1020},             // main again: one Func
		{1, 0x1200},             // covered by no symbol
		{2, 0x7f0000001008},     // JIT
		{3, 0xb46},              // vdso offset
		{4, 0x10},               // object that cannot be opened
		{5, 0},                  // synthetic
		{6, 0x7f0000002000},     // JIT without map
		{-1, 0xdead},            // no mapping
	}
	for _, l := range locs {
		loc := model.Loc{DSO: l.dso, Addr: l.addr, Func: -1, File: -1}
		if l.dso == 5 {
			loc.Func = 0
		}
		p.Locs = append(p.Locs, loc)
	}
	return p, objs
}

func fakeResolvers() []Resolver {
	return []Resolver{
		&fakeResolver{name: "kallsyms", kind: model.DSOKernel, syms: []Symbol{
			{Name: "do_syscall_64", Start: 0xffffffff81001000}, {Name: "ext4_read:ext4", Start: 0xffffffffc0000000}}},
		&fakeResolver{name: "perf-map", kind: model.DSOJIT, rename: "/tmp/perf-7.map", syms: []Symbol{
			{Name: "LazyCompile:handle", Start: 0x7f0000001000, Size: 0x40}}},
		&fakeResolver{name: "vdso", kind: model.DSOVDSO, shift: 0, syms: []Symbol{
			{Name: "__vdso_clock_gettime", Start: 0xb00, Size: 0x100}}},
		&fakeResolver{name: "elf", kind: model.DSOUser, shift: 0x400000, lines: map[uint64]int{0x401010: 12}, syms: []Symbol{
			{Name: "main", Start: 0x401000, Size: 0x100}}},
	}
}

func TestProfilePass(t *testing.T) {
	p, objs := fakeProfile()
	rs := fakeResolvers()
	// The JIT map of process 8 is missing: quietly unnamed.
	rs[1] = &jitOnlyFor{pid: 7, r: rs[1]}
	// gone.so fails for real: one warning.
	rs[3] = failFor{path: "/usr/lib/gone.so", r: rs[3]}
	// One sample stopped in main (called by loc 0): main's code is kept.
	p.Threads = []model.Thread{{Pid: 7, Tid: 7}}
	p.Stacks = [][]int32{{2, 0}}
	p.Samples = []model.Sample{{Stack: 0, Period: 1}}
	New(rs...).Profile(p, objs)
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	want := []struct{ name, dso string }{
		{"do_syscall_64", "[kernel.kallsyms]"},
		{"ext4_read", "[ext4]"},
		{"main", "app"},
		{"main", "app"},
		{"app+0x401200", "app"},
		{"LazyCompile:handle", "perf-7.map"},
		{"__vdso_clock_gettime", "[vdso]"},
		{"gone.so+0x10", "gone.so"},
		{"--", "[sonde]"},
		{"[anon:8]+0x7f0000002000", "[anon:8]"},
		{"[unknown]+0xdead", "[unknown]"},
	}
	for i, w := range want {
		if got, dso := p.FrameName(int32(i)), p.DSOName(int32(i)); got != w.name || dso != w.dso {
			t.Errorf("loc %d: %s in %s, want %s in %s", i, got, dso, w.name, w.dso)
		}
	}
	if p.Locs[2].Func != p.Locs[3].Func {
		t.Error("two addresses of main made two functions")
	}
	if got := p.SrcLine(2); got != "fake.c:12" {
		t.Errorf("line of main: %s", got)
	}
	if k := p.Kind(1); k != model.DSOModule {
		t.Errorf("module frame kind %v", k)
	}
	if k := p.Kind(5); k != model.DSOJIT {
		t.Errorf("JIT frame kind %v", k)
	}
	if p.DSOs[1].BuildID != "b1d" || p.DSOs[4].BuildID != "abcd" {
		t.Errorf("build-ids: opened %q, unopened %q (want the mapped one)", p.DSOs[1].BuildID, p.DSOs[4].BuildID)
	}
	if len(p.Meta.Warnings) != 1 || !strings.Contains(p.Meta.Warnings[0], "/usr/lib/gone.so: frames unnamed") {
		t.Errorf("warnings %q, want one for gone.so", p.Meta.Warnings)
	}
	if len(p.Code) != 1 || p.Funcs[p.Code[0].Func].Name != "main" || len(p.Code[0].Bytes) != 0x100 || len(p.Code[0].Lines) != 1 {
		t.Errorf("kept code %+v, want main's 256 bytes and its line", p.Code)
	}
	// main only as a caller: its code is not kept (annotate shows self
	// samples, and reads such a function from its binary).
	p2, objs2 := fakeProfile()
	p2.Threads = []model.Thread{{Pid: 7, Tid: 7}}
	p2.Stacks = [][]int32{{4, 2}}
	p2.Samples = []model.Sample{{Stack: 0, Period: 1}}
	New(fakeResolvers()...).Profile(p2, objs2)
	if len(p2.Code) != 0 {
		t.Errorf("kept code of a caller only: %+v", p2.Code)
	}
}

// jitOnlyFor has a perf map for one process only.
type jitOnlyFor struct {
	pid uint32
	r   Resolver
}

func (j *jitOnlyFor) Name() string { return j.r.Name() }
func (j *jitOnlyFor) Open(obj Object) (*Opened, error) {
	if obj.Kind == model.DSOJIT && obj.Pid != j.pid {
		return nil, ErrAbsent
	}
	return j.r.Open(obj)
}

// failFor fails to open one file, as a deleted or replaced binary does.
type failFor struct {
	path string
	r    Resolver
}

func (f failFor) Name() string { return f.r.Name() }
func (f failFor) Open(obj Object) (*Opened, error) {
	if obj.Path == f.path {
		return nil, fmt.Errorf("opening %s: no such file or directory", f.path)
	}
	return f.r.Open(obj)
}

// TestLiveNamesLikeRecordings: a live view (top) and a recording name the
// same addresses the same way, vDSO included.
func TestLiveNamesLikeRecordings(t *testing.T) {
	maps := []procfs.Mapping{
		{Start: 0x400000, End: 0x401000, Perms: "r-xp", Offset: 0x1000, Path: "/usr/bin/app"},
		{Start: 0x7f0000000000, End: 0x7f0000100000, Perms: "rwxp", Path: ""},
		{Start: 0x7ffff7fc1000, End: 0x7ffff7fc3000, Perms: "r-xp", Path: "[vdso]"},
		{Start: 0x7ffff7fd0000, End: 0x7ffff7fd1000, Perms: "r--p", Path: "/usr/lib/data"},
	}
	readMaps := func(pid int) ([]procfs.Mapping, error) {
		if pid != 7 {
			return nil, fmt.Errorf("no process %d", pid)
		}
		return maps, nil
	}
	live := NewLiveWith(New(fakeResolvers()...), readMaps)
	cases := []struct {
		pid            uint32
		addr           uint64
		kernel         bool
		wantSym, wantD string
	}{
		{7, 0x400010, false, "main", "app"},
		{7, 0x400200, false, "app+0x401200", "app"},
		{7, 0x7f0000001008, false, "LazyCompile:handle", "perf-7.map"},
		{7, 0x7ffff7fc1b46, false, "__vdso_clock_gettime", "[vdso]"},
		{7, 0x7ffff7fd0010, false, "[unknown]+0x7ffff7fd0010", "[unknown]"}, // not executable
		{9, 0x400010, false, "[unknown]+0x400010", "[unknown]"},
		{0, 0xffffffffc0000010, true, "ext4_read", "[ext4]"},
	}
	for _, c := range cases {
		sym, dso := live.Name(c.pid, c.addr, c.kernel)
		if sym != c.wantSym || dso != c.wantD {
			t.Errorf("%d %#x: %s in %s, want %s in %s", c.pid, c.addr, sym, dso, c.wantSym, c.wantD)
		}
	}
}
