package model

import "testing"

func TestTasksOnly(t *testing.T) {
	p := &Profile{
		Meta:    Meta{Target: "system-wide"},
		Threads: []Thread{{Pid: 1, Tid: 1, Comm: "a"}, {Pid: 1, Tid: 2, Comm: "a"}, {Pid: 3, Tid: 3, Comm: "b"}},
		Samples: []Sample{{Thread: 0, Period: 1}, {Thread: 1, Period: 10}, {Thread: 2, Period: 100}, {Thread: 1, Period: 1000}},
	}
	for _, c := range []struct {
		name   string
		f      Tasks
		total  uint64
		target string
	}{
		{"none", Tasks{}, 1111, "system-wide"},
		{"comm", Tasks{Comms: []string{"a"}}, 1011, "system-wide, only comm a"},
		{"pid", Tasks{Pids: []int{3}}, 100, "system-wide, only pid 3"},
		{"tid", Tasks{Tids: []int{2}}, 1010, "system-wide, only tid 2"},
		{"comm_and_pid_disjoint", Tasks{Comms: []string{"a"}, Pids: []int{3}}, 0, "system-wide, only comm a pid 3"},
		{"two_comms", Tasks{Comms: []string{"b", "a"}}, 1111, "system-wide, only comm b,a"},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := p.Only(c.f)
			if got := q.TotalPeriod(); got != c.total || q.Meta.Target != c.target {
				t.Errorf("total %d target %q, want %d %q", got, q.Meta.Target, c.total, c.target)
			}
			// Grouped profiles (report's, flamegraph's) filter the same.
			g := &Profile{Meta: p.Meta, Threads: p.Threads, Groups: p.SampleGroups()}
			if got := g.Only(c.f).TotalPeriod(); got != c.total {
				t.Errorf("grouped: total %d, want %d", got, c.total)
			}
		})
	}
	if len(p.Samples) != 4 {
		t.Errorf("Only changed its input: %d samples", len(p.Samples))
	}
}
