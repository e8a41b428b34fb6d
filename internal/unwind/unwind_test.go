package unwind

import (
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/procfs"
	"github.com/sonde-dev/sonde/internal/unwindtable"
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

func TestCompletenessString(t *testing.T) {
	var c Completeness
	if got := c.String(); got != "stacks complete: 100.0%" {
		t.Errorf("empty: %q", got)
	}
	l := &Loader{procs: map[uint32]*proc{7: {maps: []mapping{{start: 0x1000, end: 0x2000, path: "/opt/x/libfoo.so"}}}}}
	for i := 0; i < 956; i++ {
		c.Add(l, 7, Stack{End: EndStop}, 1)
	}
	for i := 0; i < 41; i++ {
		c.Add(l, 7, Stack{End: EndRead, Flags: FlagFallback, FallbackPC: 0x1800}, 1)
	}
	for i := 0; i < 3; i++ {
		c.Add(l, 7, Stack{End: EndFrameLimit}, 1)
	}
	want := "stacks complete: 95.6% (41 through code without unwind info, by frame pointers) — 44 truncated: 41 no unwind info for /opt/x/libfoo.so; 3 at the frame limit"
	if got := c.String(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if c.NoUnwindFiles["/opt/x/libfoo.so"] != 41 || c.FrameLimit != 3 || c.Total != 1000 {
		t.Errorf("counters: %+v", c)
	}
	d := Completeness{Unit: "ns"}
	d.Add(l, 7, Stack{End: EndZero}, 3e6)
	d.Add(l, 7, Stack{End: EndUnsupported}, 1e6)
	if got := d.String(); !strings.Contains(got, "75.0%") || !strings.Contains(got, "1ms at an unsupported unwind rule") {
		t.Errorf("ns: %q", got)
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
