package ftrace

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// The in-process recorder needs no privilege: this runs the real
// recorder (embedded object, LD_PRELOAD, shared-memory ring) on the call
// tree built with -finstrument-functions and checks what it recorded. It
// also proves csrc/ring.h and the Go offsets agree: a wrong offset reads
// garbage functions or no calls at all.
func TestPreloadRecorder(t *testing.T) {
	dir := t.TempDir()
	bin := testutil.BuildC(t, dir, "calltree-fi", []string{"calltree.c"}, "-finstrument-functions")
	if Instrumented(bin) != "-finstrument-functions" {
		t.Fatal("a -finstrument-functions build not recognised")
	}
	if plain := testutil.BuildC(t, dir, "calltree", []string{"calltree.c"}); Instrumented(plain) != "" {
		t.Fatal("a plain build taken for instrumented")
	}
	if runtime.GOARCH == "amd64" {
		// -pg: mcount, with returns caught by swapping return addresses.
		pg := testutil.BuildC(t, dir, "calltree-pg", []string{"calltree.c"}, "-pg")
		t.Chdir(dir) // the -pg binary writes gmon.out where it runs
		if Instrumented(pg) != "-pg" {
			t.Fatal("a -pg build not recognised")
		}
		out := filepath.Join(dir, "pg.data")
		if _, err := Record(context.Background(), Options{Command: []string{pg}, Output: out, Log: io.Discard}); err != nil {
			t.Fatal(err)
		}
		tr, err := Load(out)
		if err != nil {
			t.Fatal(err)
		}
		checkCounts(t, "-pg", tr)
	}
	out := filepath.Join(dir, "fi.data")
	o := Options{Command: []string{bin}, Output: out, Log: io.Discard}
	s, err := Record(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if s.Mechanism != "preload" || s.Lost != 0 {
		t.Errorf("summary %+v", s)
	}
	tr, err := Load(out)
	if err != nil {
		t.Fatal(err)
	}
	checkCounts(t, "-finstrument-functions", tr)
	// The program may be gone before its calls are drained: its thread is
	// still named in the Chrome trace.
	var chrome bytes.Buffer
	if err := WriteChrome(&chrome, tr, tr.Calls); err != nil {
		t.Fatal(err)
	}
	if _, names := checkChrome(t, chrome.Bytes()); len(names) != 1 || names[int(tr.P.Threads[0].Tid)] != "calltree-fi" {
		t.Errorf("thread names in the Chrome trace: %v, want calltree-fi", names)
	}
	g := Graph(tr, tr.Calls, "a", "")
	if g == nil || len(g.Children) != 1 || g.Children[0].Name != "b" || g.Children[0].Count != 30 {
		t.Errorf("b not nested under a: %+v", g)
	}
	// -D 1 in the recorder: main only.
	o.Depth = 1
	if _, err := Record(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if tr, _ = Load(out); len(tr.Calls) != 1 || tr.FuncName(tr.Calls[0].Fn) != "main" {
		t.Errorf("-D 1 kept %d calls", len(tr.Calls))
	}
}

func checkCounts(t *testing.T, what string, tr *Trace) {
	t.Helper()
	got := map[string]uint64{}
	for _, r := range Stats(tr, tr.Calls) {
		got[r.Function] = r.Count
	}
	for fn, n := range map[string]uint64{"main": 1, "a": 3, "b": 30, "c": 5} {
		if got[fn] != n {
			t.Errorf("%s: %s: %d calls, want %d (all: %v)", what, fn, got[fn], n, got)
		}
	}
}
