package builder

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/collect/perf"
	"github.com/sonde-dev/sonde/internal/collect/procfs"
	"github.com/sonde-dev/sonde/internal/collect/python"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/symbolize"
)

const protExec = 0x4

// fakeSystem stands in for /proc: processes that were running before the
// recording, with their mappings and thread names.
type fakeSystem struct {
	maps  map[int][]procfs.Mapping
	comms map[int]string
	reads map[int]int // pid → times its maps were read
}

func newTestBuilder(sys *fakeSystem) *Builder {
	b := New()
	sys.reads = map[int]int{}
	b.readMaps = func(pid int) ([]procfs.Mapping, error) {
		sys.reads[pid]++
		m, ok := sys.maps[pid]
		if !ok {
			return nil, fmt.Errorf("no process %d", pid)
		}
		return m, nil
	}
	b.tids = func(pid int) ([]int, error) { return []int{pid}, nil }
	b.comm = func(pid, tid int) string { return sys.comms[tid] }
	return b
}

// table names addresses of objects by path (file objects: ELF virtual
// addresses = file offset + 0x400000 load bias) and the kernel.
type table map[string][]symbolize.Symbol

func (t table) Name() string { return "table" }

func (t table) Open(obj symbolize.Object) (*symbolize.Opened, error) {
	key := obj.Path
	if obj.Kind == model.DSOKernel {
		key = "kernel"
	}
	syms, ok := t[key]
	if !ok {
		return nil, symbolize.ErrNotMine
	}
	o := &symbolize.Opened{Symbols: lookup(symbolize.NewSymbolTable(append([]symbolize.Symbol(nil), syms...)))}
	if obj.Kind == model.DSOUser {
		o.ToAddr = func(off uint64) uint64 { return off + 0x400000 }
	}
	return o, nil
}

type lookup symbolize.SymbolTable

func (l lookup) Lookup(addr uint64) (symbolize.Frame, bool) {
	s, ok := symbolize.SymbolTable(l).Find(addr, false)
	return symbolize.Frame{Func: s.Name, FuncStart: s.Start, FuncSize: s.Size}, ok
}

var testSyms = symbolize.New(table{
	"/bin/app":     {{Name: "main", Start: 0x401000, Size: 0x100}, {Name: "work", Start: 0x401100, Size: 0x100}},
	"/lib/libc.so": {{Name: "write", Start: 0x402000, Size: 0x80}},
	"kernel":       {{Name: "ksys_write", Start: 0xffffffff81000000, Size: 0x1000}},
})

func names(p *model.Profile, stack int32) []string {
	var out []string
	for _, l := range p.Stacks[stack] {
		out = append(out, p.FrameName(l))
	}
	return out
}

func TestSamplesBecomeNamedStacks(t *testing.T) {
	sys := &fakeSystem{}
	b := newTestBuilder(sys)
	b.Comm(perf.Comm{Pid: 10, Tid: 10, Comm: "app", Exec: true})
	// /bin/app's text: file offsets 0x1000.. mapped at 0x55000000.
	b.Mmap(perf.Mmap{Pid: 10, Addr: 0x55000000, Len: 0x1000, Pgoff: 0x1000, Prot: protExec, Filename: "/bin/app"})
	b.Mmap(perf.Mmap{Pid: 10, Addr: 0x56000000, Len: 0x1000, Pgoff: 0, Prot: 0x1, Filename: "/bin/data"}) // not code
	b.Mmap(perf.Mmap{Pid: 10, Addr: 0x7f000000, Len: 0x2000, Pgoff: 0x1000, Prot: protExec, Filename: "/lib/libc.so"})
	s := perf.Sample{Pid: 10, Tid: 10, Period: 1000, Callchain: []uint64{
		perf.ContextKernel, 0xffffffff81000010,
		perf.ContextUser, 0x7f001010, // the interrupted instruction in write: exact
		0x55000110, // return address into work+0x10 → the call at work+0xf
		0x55000100, // return address = work's first byte: the call was main's last
	}}
	for i := 0; i < 3; i++ {
		b.Sample(&s, perf.MiscKernel)
	}
	p := b.FinishWith(testSyms, model.Meta{Event: "cpu-clock"})
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(p.Samples) != 3 || len(p.Stacks) != 1 {
		t.Fatalf("%d samples in %d stacks, want 3 in 1 (deduplicated)", len(p.Samples), len(p.Stacks))
	}
	want := []string{"ksys_write", "write", "work", "main"}
	if got := names(p, 0); !slices.Equal(got, want) {
		t.Errorf("stack %v, want %v", got, want)
	}
	st := p.Stacks[0]
	if a := p.Locs[st[1]].Addr; a != 0x402010 {
		t.Errorf("leaf address %#x, want libc's vaddr 0x402010 (offset 0x2010 + bias)", a)
	}
	if a := p.Locs[st[2]].Addr; a != 0x40110f {
		t.Errorf("return address %#x, want the call before it, 0x40110f", a)
	}
	if th := p.Threads[p.Samples[0].Thread]; th.Comm != "app" || th.Pid != 10 {
		t.Errorf("thread %+v", th)
	}
	if k := p.Kind(st[0]); k != model.DSOKernel {
		t.Errorf("kernel frame kind %v", k)
	}
	if len(sys.reads) != 0 {
		t.Errorf("read /proc for a process whose start was recorded: %v", sys.reads)
	}
}

func TestAddressSpaces(t *testing.T) {
	sys := &fakeSystem{
		maps: map[int][]procfs.Mapping{
			// Running before the recording: known from /proc.
			20: {{Start: 0x10000, End: 0x11000, Perms: "r-xp", Offset: 0x1000, Path: "/bin/app"},
				{Start: 0x20000, End: 0x21000, Perms: "rw-p", Path: "/bin/app"}},
		},
		comms: map[int]string{20: "old"},
	}
	b := newTestBuilder(sys)
	b.Synthesize(20)
	leaf := func(pid, tid uint32, ip uint64) int32 {
		s := perf.Sample{Pid: pid, Tid: tid, IP: ip}
		b.Sample(&s, perf.MiscUser)
		return b.prof.Samples[len(b.prof.Samples)-1].Stack
	}
	s1 := leaf(20, 20, 0x10010) // main, from /proc
	// A child process inherits the mappings; a thread shares them.
	b.Fork(perf.Task{Pid: 21, Ppid: 20, Tid: 21, Ptid: 20})
	s2 := leaf(21, 21, 0x10110) // work
	b.Fork(perf.Task{Pid: 20, Ppid: 20, Tid: 22, Ptid: 20})
	s3 := leaf(20, 22, 0x10010)
	// MAP_FIXED over part of the text: the middle is libc now, the rest app.
	b.Mmap(perf.Mmap{Pid: 20, Addr: 0x10080, Len: 0x80, Pgoff: 0x2000, Prot: protExec, Filename: "/lib/libc.so"})
	s4 := leaf(20, 20, 0x10090) // write+0x10
	s5 := leaf(20, 20, 0x10110) // still work
	// exec: a fresh address space, with nothing mapped yet.
	b.Comm(perf.Comm{Pid: 21, Tid: 21, Comm: "new", Exec: true})
	s6 := leaf(21, 21, 0x10010)
	// Anonymous memory is an object per process; files are shared.
	b.Mmap(perf.Mmap{Pid: 20, Addr: 0x90000, Len: 0x1000, Prot: protExec, Filename: "//anon"})
	b.Mmap(perf.Mmap{Pid: 21, Addr: 0x90000, Len: 0x1000, Prot: protExec, Filename: "//anon"})
	s7 := leaf(20, 20, 0x90010)
	s8 := leaf(21, 21, 0x90010)
	p := b.FinishWith(testSyms, model.Meta{})
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		stack int32
		want  string
	}{
		{"from_proc", s1, "main"},
		{"forked_child", s2, "work"},
		{"thread", s3, "main"},
		{"map_fixed_middle", s4, "write"},
		{"map_fixed_rest", s5, "work"},
		{"after_exec", s6, "[unknown]+0x10010"},
		{"anon_20", s7, "[anon:20]+0x90010"},
		{"anon_21", s8, "[anon:21]+0x90010"},
	}
	for _, c := range cases {
		if got := names(p, c.stack); len(got) != 1 || got[0] != c.want {
			t.Errorf("%s: %v, want %s", c.name, got, c.want)
		}
	}
	files := 0
	for _, d := range p.DSOs {
		if d.Name == "/bin/app" {
			files++
		}
	}
	if files != 1 {
		t.Errorf("/bin/app is %d objects, want 1 shared by parent and child", files)
	}
	if sys.reads[20] != 1 {
		t.Errorf("read /proc/20/maps %d times, want once", sys.reads[20])
	}
	comms := map[int32]string{}
	for _, th := range p.Threads {
		comms[th.Tid] = th.Comm
	}
	if comms[20] != "old" || comms[22] != "old" {
		t.Errorf("thread names %v: want /proc's name for 20 and the creator's for 22", comms)
	}
}

// TestKernelCountedStacks: BPF sources hand in stacks read from a stack
// map and counts aggregated in the kernel.
func TestKernelCountedStacks(t *testing.T) {
	sys := &fakeSystem{maps: map[int][]procfs.Mapping{
		30: {{Start: 0x10000, End: 0x11000, Perms: "r-xp", Offset: 0x1000, Path: "/bin/app"}},
	}}
	b := newTestBuilder(sys)
	b.SetComm(30, "srv")
	// Leaf first; the user leaf is exact, the next one a return address.
	locs := b.StackLocs(30, []uint64{0xffffffff81000020}, []uint64{0x10110, 0x10020})
	b.SampleLocsN(30, 30, locs, 1000, 5)
	blocked := b.StackLocs(30, nil, []uint64{0x10010})
	wake := []int32{b.SyntheticLoc("waker"), b.SyntheticLoc("--")}
	b.SampleLocs(30, 30, append(wake, blocked...), 7)
	if b.SyntheticLoc("--") != wake[1] {
		t.Error("synthetic location made twice")
	}
	p := b.FinishWith(testSyms, model.Meta{Unit: "ns"})
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(p.Samples) != 6 || p.TotalPeriod() != 5*1000+7 {
		t.Fatalf("%d samples, period %d; want 6 and 5007", len(p.Samples), p.TotalPeriod())
	}
	if got, want := names(p, p.Samples[0].Stack), []string{"ksys_write", "work", "main"}; !slices.Equal(got, want) {
		t.Errorf("counted stack %v, want %v", got, want)
	}
	if got, want := names(p, p.Samples[5].Stack), []string{"waker", "--", "main"}; !slices.Equal(got, want) {
		t.Errorf("combined stack %v, want %v", got, want)
	}
	if th := p.Threads[p.Samples[0].Thread]; th.Comm != "srv" {
		t.Errorf("comm %q, want srv", th.Comm)
	}
}

func TestFramePointerUnwinder(t *testing.T) {
	s := perf.Sample{IP: 0x1234}
	if got := (FramePointer{}).Frames(&s, perf.MiscUser, nil); len(got) != 1 || got[0] != (Frame{Addr: 0x1234, Leaf: true}) {
		t.Errorf("no callchain: %+v", got)
	}
	s.Callchain = []uint64{perf.ContextKernel, 1, 2, perf.ContextUser, 3, 4}
	got := (FramePointer{}).Frames(&s, perf.MiscKernel, nil)
	want := []Frame{{1, true, true}, {2, true, false}, {3, false, true}, {4, false, false}}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("frame %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestAddressOutsideCode: a frame-pointer walk through code without frame
// pointers yields return addresses in data ([heap], anonymous memory) or
// in no mapping at all. The first are named by their mapping with an
// offset; at the second the stack ends, as the rest is junk; a process
// that mapped code since its maps were read is read again.
func TestAddressOutsideCode(t *testing.T) {
	sys := &fakeSystem{maps: map[int][]procfs.Mapping{
		40: {
			{Start: 0x10000, End: 0x11000, Perms: "r-xp", Offset: 0x1000, Path: "/bin/app"},
			{Start: 0x20000, End: 0x30000, Perms: "rw-p", Path: "[heap]"},
			{Start: 0x7f0000, End: 0x800000, Perms: "rw-p"},
		},
	}}
	b := newTestBuilder(sys)
	b.SetComm(40, "py")
	b.SampleLocs(40, 40, b.StackLocs(40, nil, []uint64{0x10110, 0x20101, 0x7f0011, 0x10020}), 1)
	b.SampleLocs(40, 40, b.StackLocs(40, nil, []uint64{0x10110, 0, 0x10020}), 1)
	b.SampleLocs(40, 40, b.StackLocs(40, nil, []uint64{0x10110, 0x746c7561666563}), 1)
	// A library mapped after the first read (dlopen without a record).
	sys.maps[40] = append(sys.maps[40], procfs.Mapping{Start: 0x90000, End: 0x91000, Perms: "r-xp", Offset: 0x2000, Path: "/lib/libc.so"})
	b.procs[40].reread = time.Time{}
	b.SampleLocs(40, 40, b.StackLocs(40, nil, []uint64{0x90010, 0x10020}), 1)
	p := b.FinishWith(testSyms, model.Meta{})
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	for i, want := range [][]string{
		{"work", "[heap]+0x100", "[anon:40]+0x7f0010", "main"},
		{"work"},
		{"work"},
		{"write", "main"},
	} {
		if got := names(p, p.Samples[i].Stack); !slices.Equal(got, want) {
			t.Errorf("sample %d: %v, want %v", i, got, want)
		}
	}
}

// TestPythonFrameGoneCounted: a walked Python frame whose code object
// cannot be read (here: nothing lies at its address) is the unknown
// [python], and the profile's warnings count it among the Python frames.
func TestPythonFrameGoneCounted(t *testing.T) {
	sys := &fakeSystem{maps: map[int][]procfs.Mapping{
		50: {{Start: 0x10000, End: 0x11000, Perms: "r-xp", Offset: 0x1000, Path: "/bin/app"}},
	}}
	b := newTestBuilder(sys)
	b.Python = python.NewReaderWith(func(int) (*python.Proc, io.ReaderAt, error) {
		l, _ := python.Known(10)
		return &python.Proc{Layout: l, Types: python.ObjTypes{Code: 0x1000, Str: 0x2000, Bytes: 0x3000}}, emptyMem{}, nil
	})
	end := uint64(1)<<63 | 0x3fff<<48 | 50 // the pid that ends a stack with Python frames
	locs := b.StackLocs(50, nil, []uint64{python.Encode(0x7f00_0000_1000, 0, 3), 0x10110, 0x10020, end})
	b.SampleLocs(50, 50, locs, 1)
	p := b.FinishWith(testSyms, model.Meta{})
	if got, want := names(p, p.Samples[0].Stack), []string{"[python]", "work", "main"}; !slices.Equal(got, want) {
		t.Errorf("stack %v, want %v", got, want)
	}
	if len(p.Meta.Warnings) != 1 || !strings.HasPrefix(p.Meta.Warnings[0], "1 of 1 Python frames unnamed ([python])") {
		t.Errorf("warnings %q, want one counting the unnamed Python frame", p.Meta.Warnings)
	}
}

// emptyMem is a process memory with nothing readable.
type emptyMem struct{}

func (emptyMem) ReadAt(p []byte, off int64) (int, error) {
	return 0, fmt.Errorf("no memory at %#x", off)
}
