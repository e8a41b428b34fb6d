package symbolize

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/testutil"
)

// keptFiles names file objects from one table, counting opens and lookups;
// each object's symbols claim size bytes and report changed when the
// resolver's version of its path moved on since it was opened.
type keptFiles struct {
	size    int64
	opens   map[string]int
	lookups int
	version map[string]int
}

type keptSyms struct {
	r       *keptFiles
	path    string
	version int
}

func (r *keptFiles) Name() string { return "kept-fake" }

func (r *keptFiles) Open(obj Object) (*Opened, error) {
	if obj.Kind != model.DSOUser && obj.Kind != model.DSOJIT {
		return nil, ErrNotMine
	}
	r.opens[obj.Path]++
	return &Opened{Symbols: &keptSyms{r: r, path: obj.Path, version: r.version[obj.Path]}}, nil
}

func (s *keptSyms) Lookup(addr uint64) (Frame, bool) {
	s.r.lookups++
	return Frame{Func: filepath.Base(s.path) + "_fn", FuncStart: addr &^ 0xff}, true
}
func (s *keptSyms) Footprint() int64 { return s.r.size }
func (s *keptSyms) Changed() bool    { return s.r.version[s.path] != s.version }
func (s *keptSyms) Arch() string     { return "amd64" }
func (s *keptSyms) Code(start, size uint64) ([]byte, error) {
	return make([]byte, size), nil
}
func (s *keptSyms) Lines(start, end uint64) []LineRow { return nil }

// keptProfile is one period: a location at addr in each of paths.
func keptProfile(addr uint64, paths ...string) (*model.Profile, []Object) {
	p := &model.Profile{}
	var objs []Object
	for i, path := range paths {
		obj := Object{Kind: model.DSOUser, Path: path, Pid: 7}
		if path == "" {
			obj = Object{Kind: model.DSOJIT, Pid: 7}
		}
		objs = append(objs, obj)
		p.DSOs = append(p.DSOs, obj.DSO())
		p.Locs = append(p.Locs, model.Loc{DSO: int32(i), Addr: addr, Func: -1, File: -1})
	}
	return p, objs
}

func TestKeptAcrossPasses(t *testing.T) {
	r := &keptFiles{size: 100, opens: map[string]int{}, version: map[string]int{}}
	s := NewKept(Kept{Budget: 1 << 20, Idle: 2, Memo: 16}, r)
	for range 3 {
		p, objs := keptProfile(0x1234, "/bin/a", "/lib/b.so", "")
		s.Profile(p, objs)
		if got := p.Funcs[p.Locs[0].Func].Name; got != "a_fn" {
			t.Fatalf("named %q, want a_fn", got)
		}
		if len(p.Code) != 0 {
			t.Errorf("a kept symbolizer kept %d functions' code", len(p.Code))
		}
	}
	// Files are opened once; anonymous memory (JIT maps grow) every pass.
	if r.opens["/bin/a"] != 1 || r.opens["/lib/b.so"] != 1 || r.opens[""] != 3 {
		t.Errorf("opens %v, want each file once and the JIT map per pass", r.opens)
	}
	// Addresses are remembered: only the JIT map's are looked up again.
	if r.lookups != 2+3 {
		t.Errorf("%d lookups, want 5", r.lookups)
	}
	if st := s.KeptStats(); st.Objects != 2 || st.Bytes != 2*(100+memoEntryBytes) {
		t.Errorf("kept %+v, want 2 objects of %d bytes", st, 100+memoEntryBytes)
	}
}

func TestKeptEvictsUnmapped(t *testing.T) {
	r := &keptFiles{size: 100, opens: map[string]int{}, version: map[string]int{}}
	s := NewKept(Kept{Budget: 1 << 20, Idle: 2, Memo: 16}, r)
	p, objs := keptProfile(0x10, "/bin/a", "/bin/gone")
	s.Profile(p, objs)
	// /bin/a is still mapped (among the objects) though not sampled.
	for range 2 {
		p, objs := keptProfile(0x10, "/bin/c")
		p.DSOs = append(p.DSOs, model.DSO{Name: "/bin/a"})
		s.Profile(p, append(objs, Object{Kind: model.DSOUser, Path: "/bin/a", Pid: 7}))
	}
	p, objs = keptProfile(0x10, "/bin/a", "/bin/gone")
	s.Profile(p, objs)
	if r.opens["/bin/a"] != 1 || r.opens["/bin/gone"] != 2 {
		t.Errorf("opens %v: want /bin/a kept while mapped, /bin/gone reopened after 2 passes away", r.opens)
	}
}

func TestKeptBudget(t *testing.T) {
	r := &keptFiles{size: 1000, opens: map[string]int{}, version: map[string]int{}}
	s := NewKept(Kept{Budget: 2500, Idle: 10, Memo: 16}, r)
	for _, path := range []string{"/bin/a", "/bin/b", "/bin/c"} {
		p, objs := keptProfile(0x10, path, "/bin/a")
		s.Profile(p, objs)
	}
	st := s.KeptStats()
	if st.Objects != 2 || st.Bytes > 2500 {
		t.Fatalf("kept %+v over a 2500-byte budget", st)
	}
	// /bin/b was the least recently used; /bin/a and /bin/c stay.
	p, objs := keptProfile(0x10, "/bin/a", "/bin/b", "/bin/c")
	s.Profile(p, objs)
	if r.opens["/bin/a"] != 1 || r.opens["/bin/b"] != 2 || r.opens["/bin/c"] != 1 {
		t.Errorf("opens %v: want only /bin/b reopened", r.opens)
	}
}

func TestKeptReopensReplacedFile(t *testing.T) {
	r := &keptFiles{size: 100, opens: map[string]int{}, version: map[string]int{}}
	s := NewKept(Kept{Budget: 1 << 20, Idle: 2, Memo: 16}, r)
	p, objs := keptProfile(0x10, "/bin/a")
	s.Profile(p, objs)
	r.version["/bin/a"]++ // a deploy replaced it
	p, objs = keptProfile(0x10, "/bin/a")
	s.Profile(p, objs)
	if r.opens["/bin/a"] != 2 || r.lookups != 2 {
		t.Errorf("opens %v, %d lookups: want the replaced file opened and looked up again", r.opens, r.lookups)
	}
}

func TestKeptMemoBounded(t *testing.T) {
	r := &keptFiles{size: 100, opens: map[string]int{}, version: map[string]int{}}
	s := NewKept(Kept{Budget: 1 << 20, Idle: 2, Memo: 4}, r)
	for a := range uint64(10) {
		p, objs := keptProfile(a, "/bin/a")
		s.Profile(p, objs)
	}
	if st := s.KeptStats(); st.Bytes > 100+4*memoEntryBytes {
		t.Errorf("kept %d bytes, want at most 4 remembered addresses", st.Bytes)
	}
}

// A real ELF file: NoLines names functions without reading DWARF, and a
// rebuilt file at the same path is seen as changed.
func TestELFNoLinesAndChanged(t *testing.T) {
	dir := t.TempDir()
	bin := testutil.BuildC(t, dir, "work", []string{"work.c"})
	e, err := OpenELF(bin, Options{NoLines: true})
	if err != nil {
		t.Fatal(err)
	}
	a := symAddr(t, bin, "spin_a")
	fr, ok := e.Lookup(a + 4)
	if !ok || fr.Func != "spin_a" || fr.File != "" || e.HasDWARF() {
		t.Errorf("NoLines lookup %+v (dwarf %v), want spin_a without a line", fr, e.HasDWARF())
	}
	if e.Footprint() <= 0 || e.Changed() {
		t.Errorf("footprint %d, changed %v", e.Footprint(), e.Changed())
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	tmp := bin + ".new"
	if err := os.WriteFile(tmp, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	if !e.Changed() {
		t.Error("a file replaced at the same path is not seen as changed")
	}
}
