package top

import (
	"strings"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/tools/cputime"
)

func frame() *Frame {
	return &Frame{
		At: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC), Span: time.Second, Busy: []float64{50, 25}, Samples: 4,
		Symbols: []Symbol{{Sym: "spin", DSO: "work", Count: 3}, {Sym: "clear_page_erms", DSO: "[kernel.kallsyms]", Kernel: true, Count: 1}},
		Tasks: []cputime.Usage{
			{Pid: 30, Tid: 30, Comm: "bash", NS: 500e6},
			{Pid: 10, Tid: 12, Comm: "work", NS: 250e6},
			{Pid: 10, Tid: 11, Comm: "work", NS: 100e6},
		},
	}
}

func TestLines(t *testing.T) {
	v := &View{SortBy: "cpu", Rows: 10}
	got := strings.Join(v.Lines(frame(), 0), "\n")
	want := `sonde top  12:00:00  cpu0  50.0%  cpu1  25.0%  sort: cpu
keys: q quit  s sort  f filter  p pause

Hot symbols (4 samples, system-wide)
OVERHEAD      SYMBOL                                   SHARED OBJECT
  75.00%  [.] spin                                     work
  25.00%  [k] clear_page_erms                          [kernel.kallsyms]

Tasks (exact CPU time from sched_switch over 1.00s)
    PID     TID COMM                CPU%         MS
     30      30 bash               50.00    500.000
     10      12 work               25.00    250.000
     10      11 work               10.00    100.000`
	if got != want {
		t.Errorf("lines:\n%s\nwant:\n%s", got, want)
	}
}

func TestSortFilterRows(t *testing.T) {
	v := &View{SortBy: "cpu", Rows: 2}
	v.NextSort()
	if v.SortBy != "pid" {
		t.Fatalf("after cpu comes %q", v.SortBy)
	}
	ts := v.tasks(frame())
	if ts[0].Tid != 11 || ts[1].Tid != 12 || ts[2].Pid != 30 {
		t.Errorf("by pid: %+v", ts)
	}
	v.Filter = "wor"
	if ts := v.tasks(frame()); len(ts) != 2 {
		t.Errorf("filter by part of a comm: %+v", ts)
	}
	v.Filter = "30"
	if ts := v.tasks(frame()); len(ts) != 1 || ts[0].Comm != "bash" {
		t.Errorf("filter by pid: %+v", ts)
	}
	v.Filter, v.Paused = "", true
	lines := v.Lines(frame(), 20)
	if len(lines[0]) != 20 || strings.Count(strings.Join(lines, "\n"), "work") != 2 {
		t.Errorf("width 20, 2 rows:\n%s", strings.Join(lines, "\n"))
	}
	if l := v.Lines(frame(), 0)[0]; !strings.HasSuffix(l, "sort: pid  [paused]") {
		t.Errorf("header %q", l)
	}
}
