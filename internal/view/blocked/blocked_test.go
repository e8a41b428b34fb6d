package blocked

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/model"
)

// fakeProfile has two threads of one process blocked in two stacks: 3 ms
// in read (kernel) ← main, 1 ms in nanosleep ← main, and 6 ms of another
// command.
func fakeProfile() *model.Profile {
	return &model.Profile{
		Meta:    model.Meta{DurationNS: 2_000_400_000, Unit: "ns"},
		Threads: []model.Thread{{Pid: 10, Tid: 10, Comm: "srv"}, {Pid: 10, Tid: 11, Comm: "srv"}, {Pid: 20, Tid: 20, Comm: "other"}},
		DSOs:    []model.DSO{{Name: "/usr/bin/srv", Kind: model.DSOUser}, {Name: "[kernel.kallsyms]", Kind: model.DSOKernel}},
		Funcs:   []model.Func{{Name: "main", DSO: 0}, {Name: "ksys_read", DSO: 1}, {Name: "hrtimer_nanosleep", DSO: 1}},
		Locs:    []model.Loc{{DSO: 0, Func: 0, File: -1}, {DSO: 1, Func: 1, File: -1}, {DSO: 1, Func: 2, File: -1}},
		Stacks:  [][]int32{{1, 0}, {2, 0}},
		Samples: []model.Sample{
			{Thread: 1, Stack: 1, Period: 1_000_000},
			{Thread: 0, Stack: 0, Period: 3_000_000},
			{Thread: 2, Stack: 0, Period: 6_000_000},
		},
	}
}

func TestReportText(t *testing.T) {
	p := fakeProfile().Only(model.Tasks{Comms: []string{"srv"}})
	r := New(p, "tp_btf", Errors{StackFailures: 2, LostMapFull: 1}, Options{Command: "offcpu", Top: 20})
	var b bytes.Buffer
	r.WriteText(&b)
	want := `    ksys_read
    main
    -                srv (10)
        3000 us (75.0%)

    hrtimer_nanosleep
    main
    -                srv (10)
        1000 us (25.0%)

# offcpu: 2 stacks, 4000 us blocked in 2s (tp_btf); 2 stack walks failed, 1 lost to full maps

`
	if b.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", b.String(), want)
	}
	// --top cuts the text, not the count in the footer.
	r.top = 1
	b.Reset()
	r.WriteText(&b)
	if strings.Contains(b.String(), "hrtimer_nanosleep") || !strings.Contains(b.String(), "2 stacks") {
		t.Errorf("top 1:\n%s", b.String())
	}
}

func TestReportJSON(t *testing.T) {
	r := New(fakeProfile(), "raw_tp", Errors{}, Options{Command: "wakeup", Top: 1})
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Stacks []struct {
			Comm      string `json:"comm"`
			Pid       int32  `json:"pid"`
			Tid       *int32 `json:"tid"`
			BlockedNS uint64 `json:"blocked_ns"`
			Frames    []Frame
		} `json:"stacks"`
		Total    uint64 `json:"total_blocked_ns"`
		Duration uint64 `json:"duration_ns"`
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	// JSON keeps every stack whatever --top says, largest first.
	if len(got.Stacks) != 3 || got.Total != 10_000_000 || got.Duration != 2_000_400_000 {
		t.Fatalf("got %+v", got)
	}
	s := got.Stacks[0]
	if s.Comm != "other" || s.BlockedNS != 6_000_000 || s.Tid != nil || len(s.Frames) != 2 || s.Frames[0] != (Frame{Sym: "ksys_read", DSO: "[kernel.kallsyms]", Kernel: true}) {
		t.Errorf("first stack %+v", s)
	}
	// A thread other than the main one carries its tid.
	if last := got.Stacks[2]; last.Tid == nil || *last.Tid != 11 {
		t.Errorf("thread 11's stack has tid %v", last.Tid)
	}
}
