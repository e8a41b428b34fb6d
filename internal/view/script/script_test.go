package script

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/model/jsonout"
)

// profile is one cpu-clock sample of work (pid 42, tid 43) on CPU 1 at
// 2.5 s, in main ← start.
func profile() *model.Profile {
	return &model.Profile{
		Meta:    model.Meta{Event: "cpu-clock", Events: []model.EventInfo{{Name: "cpu-clock", Kind: "software"}}},
		Threads: []model.Thread{{Pid: 42, Tid: 43, Comm: "work"}},
		DSOs:    []model.DSO{{Name: "/usr/bin/work", Kind: model.DSOUser}, {Name: "[kernel.kallsyms]", Kind: model.DSOKernel}},
		Funcs:   []model.Func{{Name: "main", DSO: 0, Start: 0x1000}, {Name: "start", DSO: 0, Start: 0x900}},
		Locs:    []model.Loc{{DSO: 0, Addr: 0x1010, Func: 0, File: -1}, {DSO: 0, Addr: 0x910, Func: 1, File: -1}},
		Stacks:  [][]int32{{0, 1}},
		Samples: []model.Sample{{Time: 2_500_000_000, Thread: 0, CPU: 1, Stack: 0, Period: 1_003_009, Event: 0}},
	}
}

func TestText(t *testing.T) {
	fields, err := ParseFields([]string{"comm", "pid", "tid", "cpu", "time", "event", "sym", "dso"})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Write(&b, profile(), fields, false); err != nil {
		t.Fatal(err)
	}
	want := "            work      42/43      [001] 2.500000: cpu-clock:\n\tmain (work)\n\tstart (work)\n\n"
	if b.String() != want {
		t.Errorf("got:\n%q\nwant:\n%q", b.String(), want)
	}
}

func TestJSON(t *testing.T) {
	fields, _ := ParseFields(nil)
	var b bytes.Buffer
	if err := Write(&b, profile(), fields, true); err != nil {
		t.Fatal(err)
	}
	var e Event
	if err := json.Unmarshal(b.Bytes(), &e); err != nil {
		t.Fatal(err)
	}
	if e.PID != 42 || e.TID != 43 || e.Comm != "work" || *e.TimeNS != 2_500_000_000 || *e.CPU != 1 || *e.Period != 1_003_009 {
		t.Errorf("event %+v", e)
	}
	if len(e.Stack) != 2 || e.Stack[0].Sym != "main" || e.Stack[0].Addr != "0x1010" || e.Stack[1].DSO != "work" {
		t.Errorf("stack %+v", e.Stack)
	}
	if bad := jsonout.Undocumented(e); len(bad) > 0 {
		t.Errorf("undocumented keys %v", bad)
	}
}

func TestParseFields(t *testing.T) {
	if _, err := ParseFields([]string{"comm", "tiem"}); err == nil || !strings.Contains(err.Error(), `unknown field "tiem"`) {
		t.Errorf("err %v", err)
	}
}
