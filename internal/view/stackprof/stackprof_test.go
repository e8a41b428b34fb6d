package stackprof

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/view/emit"
)

// prof has 3 samples of main → spin and 1 of main alone, in "work".
func prof() *model.Profile {
	return &model.Profile{
		Meta:    model.Meta{Event: "cpu-clock", DurationNS: 1e9},
		Threads: []model.Thread{{Pid: 7, Tid: 7, Comm: "work"}},
		DSOs:    []model.DSO{{Name: "/bin/work"}},
		Funcs:   []model.Func{{Name: "main"}, {Name: "spin"}},
		Locs:    []model.Loc{{Func: 0, File: -1}, {Func: 1, File: -1}},
		Stacks:  [][]int32{{1, 0}, {0}},
		Samples: []model.Sample{{Stack: 0, Period: 1}, {Stack: 0, Period: 1}, {Stack: 0, Period: 1}, {Stack: 1, Period: 1}},
	}
}

func TestReport(t *testing.T) {
	r := New(prof(), Errors{UserStack: 2, LostMapFull: 1}, "system wide")
	var b bytes.Buffer
	r.WriteText(&b)
	if !strings.Contains(b.String(), "spin") || !strings.HasSuffix(b.String(), "# BPF: 2 user and 0 kernel stack walks failed, 1 samples lost (map full)\n\n") {
		t.Errorf("text:\n%s", b.String())
	}
	b.Reset()
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got["command"] != "profile" || got["duration_ns"] != 1e9 || got["bpf_errors"].(map[string]any)["user_stack_failures"] != 2.0 || got["entries"] == nil {
		t.Errorf("JSON %s", b.String())
	}
}

func TestFinish(t *testing.T) {
	dir := t.TempDir()
	var b bytes.Buffer
	w := emit.New(&b, false)
	f := Files{Flame: filepath.Join(dir, "f.svg"), Data: filepath.Join(dir, "p.data"), Folded: true, Title: "sonde profile", What: "4 samples"}
	if err := f.Finish(w, prof(), New(prof(), Errors{}, "")); err != nil {
		t.Fatal(err)
	}
	// Folded stacks replace the report: root first, with their counts.
	if !strings.Contains(b.String(), "work;main;spin 3") || strings.Contains(b.String(), "# BPF") {
		t.Errorf("folded:\n%s", b.String())
	}
	svg, err := os.ReadFile(f.Flame)
	if err != nil || !bytes.Contains(svg, []byte("<svg")) || !bytes.Contains(svg, []byte("4 samples")) {
		t.Errorf("flame graph: %v %.200s", err, svg)
	}
	if st, err := os.Stat(f.Data); err != nil || st.Size() == 0 {
		t.Errorf("data file: %v", err)
	}
	if err := (Files{Flame: filepath.Join(dir, "missing", "f.html")}).Write(prof()); err == nil || !strings.Contains(err.Error(), "flame graph") {
		t.Errorf("unwritable flame graph: %v", err)
	}
}
