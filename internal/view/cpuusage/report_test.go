package cpuusage

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/tools/cputime"
)

func interval() cputime.Interval {
	return cputime.Interval{StartNS: 1e9, EndNS: 1.5e9,
		IdleNS: []uint64{100e6, 400e6}, BusyNS: []uint64{400e6, 100e6},
		Tasks: []cputime.Usage{
			{Tid: 5, Pid: 5, Comm: "hog", NS: 400e6, PerCPU: []uint64{400e6, 0}},
			{Tid: 9, Pid: 8, Comm: "alt", NS: 100e6, PerCPU: []uint64{0, 100e6}},
		}}
}

func TestText(t *testing.T) {
	at := time.Date(2026, 11, 23, 9, 30, 15, 0, time.UTC)
	// 30 samples of 10 ms for the hog (300 ms: 25% under), none for alt.
	r := New("box", at, interval(), Counters{Lost: 1, Unseen: 2}, map[uint32]uint64{5: 30}, 10e6, Options{Top: 10, PerCPU: true})
	var b bytes.Buffer
	r.WriteText(&b)
	want := `sonde cputime box 09:30:15 interval 0.500s, 2 CPUs, 1 slices lost, 2 switches unseen
  cpu0  80.0% busy  20.0% idle | cpu1  20.0% busy  80.0% idle
      PID     TID COMM                     MS    CPU%  SAMPLED-MS    ERROR
        5       5 hog                 400.000   80.00     300.000   -25.0%
        8       9 alt                 100.000   20.00       0.000  -100.0%
  cpu0:
        5       5 hog                 400.000   80.00     300.000   -25.0%
  cpu1:
        8       9 alt                 100.000   20.00       0.000  -100.0%

`
	if b.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestJSON(t *testing.T) {
	r := New("box", time.Now(), interval(), Counters{}, nil, 0, Options{Top: 1, Comm: "hog"})
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	tasks := got["tasks"].([]any)
	task := tasks[0].(map[string]any)
	if len(tasks) != 1 || task["cpu_ns"] != 400e6 || task["comm"] != "hog" || task["per_cpu_ns"] != nil || task["sampled_ns"] != nil ||
		got["duration_ns"] != 500e6 || got["sample_period_ns"] != nil {
		t.Errorf("JSON %s", b.String())
	}
	// Writing JSON leaves the report as it was.
	if len(r.Tasks[0].PerCPUNS) != 2 {
		t.Errorf("per-CPU times lost: %+v", r.Tasks[0])
	}
}

// TestPids: -p a,b keeps the threads of every process named, and only them.
func TestPids(t *testing.T) {
	iv := interval()
	iv.Tasks = append(iv.Tasks, cputime.Usage{Tid: 12, Pid: 11, Comm: "other", NS: 50e6, PerCPU: []uint64{50e6, 0}})
	for _, c := range []struct {
		pids []int
		want []uint32
	}{{nil, []uint32{5, 9, 12}}, {[]int{5, 8}, []uint32{5, 9}}, {[]int{11}, []uint32{12}}, {[]int{99}, nil}} {
		r := New("box", time.Now(), iv, Counters{}, nil, 0, Options{Top: 10, Pids: c.pids})
		var tids []uint32
		for _, task := range r.Tasks {
			tids = append(tids, task.Tid)
		}
		if !slices.Equal(tids, c.want) {
			t.Errorf("-p %v: threads %v, want %v", c.pids, tids, c.want)
		}
	}
}
