package unwind

import (
	"maps"
	"testing"

	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/collect/procfs"
	"github.com/sonde-dev/sonde/internal/collect/unwindtable"
	"github.com/sonde-dev/sonde/internal/model/stackstat"
)

func TestMappingBias(t *testing.T) {
	// A PIE's text segment: file offset 0x1000 at vaddr 0x1000, mapped
	// at 0x5555_5555_5000 (offset 0x1000).
	pie := &unwindtable.Table{Exec: []unwindtable.Segment{{Vaddr: 0x1000, Off: 0x1000, Size: 0x2000}}}
	// A non-PIE executable: vaddr 0x401000 at offset 0x1000.
	exe := &unwindtable.Table{Exec: []unwindtable.Segment{{Vaddr: 0x401000, Off: 0x1000, Size: 0x80000}}}
	// libc: the text segment starts mid-page (offset 0x26000 at vaddr 0x26000).
	libc := &unwindtable.Table{Exec: []unwindtable.Segment{{Vaddr: 0x26000, Off: 0x26000, Size: 0x155000}}}
	// Code above 4 GiB: rows count from Base.
	high := &unwindtable.Table{Base: 0x1_0000_0000, Exec: []unwindtable.Segment{{Vaddr: 0x1_0000_0000, Off: 0x1000, Size: 0x1000}}}
	for _, c := range []struct {
		name string
		t    *unwindtable.Table
		m    procfs.Mapping
		pc   uint64 // an address in the mapping
		row  uint64 // the row pc it must look up
		ok   bool
	}{
		{"pie", pie, procfs.Mapping{Start: 0x555555555000, End: 0x555555557000, Offset: 0x1000}, 0x555555555123, 0x1123, true},
		{"exe", exe, procfs.Mapping{Start: 0x401000, End: 0x481000, Offset: 0x1000}, 0x401234, 0x401234, true},
		{"libc", libc, procfs.Mapping{Start: 0x7f57bc262000, End: 0x7f57bc3b8000, Offset: 0x26000}, 0x7f57bc262010, 0x26010, true},
		{"high", high, procfs.Mapping{Start: 0x7f0000001000, End: 0x7f0000002000, Offset: 0x1000}, 0x7f0000001010, 0x10, true},
		{"data", pie, procfs.Mapping{Start: 0x555555558000, End: 0x555555559000, Offset: 0x4000}, 0, 0, false},
	} {
		bias, ok := mappingBias(c.t, c.m)
		if ok != c.ok {
			t.Errorf("%s: ok %v, want %v", c.name, ok, c.ok)
			continue
		}
		if ok && c.pc-bias != c.row {
			t.Errorf("%s: pc %#x → row pc %#x, want %#x", c.name, c.pc, c.pc-bias, c.row)
		}
	}
}

// TestEnumsMatchTheObject: stackstat's copies of the C enums agree with
// the object's (its BTF, by member name).
func TestEnumsMatchTheObject(t *testing.T) {
	spec, err := loadWalker()
	if err != nil {
		t.Fatal(err)
	}
	for enum, want := range map[string]map[string]uint64{
		"unwind_end": {"UNWIND_END_STOP": uint64(stackstat.EndStop), "UNWIND_END_ZERO": uint64(stackstat.EndZero),
			"UNWIND_END_FRAME_LIMIT": uint64(stackstat.EndFrameLimit), "UNWIND_END_READ": uint64(stackstat.EndRead),
			"UNWIND_END_UNSUPPORTED": uint64(stackstat.EndUnsupported)},
		"unwind_flag": {"UNWIND_F_FALLBACK": uint64(stackstat.FlagFallback), "UNWIND_F_NO_MAPPING": uint64(stackstat.FlagNoMapping),
			"UNWIND_F_PROC_UNKNOWN": uint64(stackstat.FlagProcUnknown)},
	} {
		got, err := bpfskel.Enum(spec, enum)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got, want) {
			t.Errorf("enum %s is %v in the object, %v in stackstat", enum, got, want)
		}
	}
}

// TestLoaderAllocReusesReleasedRows: a table no process maps gives its rows
// back, and a later table of that size or less takes them.
func TestLoaderAllocReusesReleasedRows(t *testing.T) {
	l := New(Maps{}, 100)
	a, ok := l.alloc(60)
	if !ok || a.first != 0 {
		t.Fatalf("first: %+v %v", a, ok)
	}
	if _, ok := l.alloc(50); ok {
		t.Fatal("50 more rows fit in 40")
	}
	k := unwindtable.Key{BuildID: "ab"}
	l.tables[k] = &loaded{span: a, refs: 2}
	l.release([]unwindtable.Key{k})
	if _, ok := l.alloc(50); ok {
		t.Fatal("rows of a table still mapped were reused")
	}
	l.release([]unwindtable.Key{k})
	b, ok := l.alloc(50)
	if !ok || b.first != 0 {
		t.Fatalf("released rows not reused: %+v %v", b, ok)
	}
}

func TestConsts(t *testing.T) {
	c := Consts()
	if Supported() != (c["unwind_arch"] != uint32(0)) {
		t.Errorf("Supported %v but consts %v", Supported(), c)
	}
}

// TestParentOf: the parent's pid follows a command name that holds
// spaces and parentheses.
func TestParentOf(t *testing.T) {
	for in, want := range map[string]int{
		"123 (sh) S 45 123 123 0 -1":        45,
		"7 (a) b (c)) R 9 7 7 0 -1 4194560": 9,
		"garbage":                           0,
		"1 (x)":                             0,
	} {
		if got := parentOf([]byte(in)); got != want {
			t.Errorf("parentOf(%q) = %d, want %d", in, got, want)
		}
	}
}

// The walker's Go counters name members of enum unwind_counter (no root:
// the object's BTF).
func TestCounterNames(t *testing.T) {
	if err := bpfskel.CheckCounters(loadWalker, walkerMapUnwindCounters, &Counters{}); err != nil {
		t.Fatal(err)
	}
}

// TestHasAddressSpace: the mappings of a process that is exiting (its
// memory released: nothing, or only the vsyscall page every process
// shows) or between the two images of an exec are not loaded over the
// ones its stacks are named by. A command's stacks lost every frame past
// libc when an exiting process's empty read replaced them (one offcpu run
// in 15).
func TestHasAddressSpace(t *testing.T) {
	vsyscall := procfs.Mapping{Start: 0xffffffffff600000, End: 0xffffffffff601000, Perms: "--xp", Path: "[vsyscall]"}
	exe := procfs.Mapping{Start: 0x55656b1c6000, End: 0x55656b1c7000, Offset: 0x1000, Perms: "r-xp", Path: "/tmp/first"}
	for _, c := range []struct {
		name string
		ms   []procfs.Mapping
		want bool
	}{
		{"exited", nil, false},
		{"exiting or mid-exec", []procfs.Mapping{vsyscall}, false},
		{"running", []procfs.Mapping{exe, vsyscall}, true},
		{"anonymous memory only", []procfs.Mapping{{Start: 0x1000, End: 0x2000, Perms: "rw-p"}}, true},
	} {
		if got := hasAddressSpace(c.ms); got != c.want {
			t.Errorf("%s: hasAddressSpace = %v, want %v", c.name, got, c.want)
		}
	}
}
