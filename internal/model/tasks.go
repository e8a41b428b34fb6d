package model

import (
	"slices"
	"strconv"
	"strings"
)

// Tasks chooses samples by the task that took them: its command name, its
// process or its thread (--comm, --pid, --tid). A tool applies it once,
// before any output is formed, so its text, JSON, folded stacks, flame
// graph and data file count the same samples.
type Tasks struct {
	Comms      []string
	Pids, Tids []int
}

// Empty says nothing is filtered.
func (f Tasks) Empty() bool { return len(f.Comms) == 0 && len(f.Pids) == 0 && len(f.Tids) == 0 }

// Keep says whether a sample of thread t passes: each list given must
// hold t's comm, pid or tid.
func (f Tasks) Keep(t Thread) bool {
	return Allows(f.Comms, t.Comm) && Allows(f.Pids, int(t.Pid)) && Allows(f.Tids, int(t.Tid))
}

// Allows says whether v passes a filter option that lists the values
// wanted (--comm, --port, ...): an empty list is no filter, so it allows
// every value.
func Allows[T comparable](only []T, v T) bool { return len(only) == 0 || slices.Contains(only, v) }

// String names the filter as the options gave it: "comm a,b pid 7" ("" when empty).
func (f Tasks) String() string {
	var parts []string
	if len(f.Comms) > 0 {
		parts = append(parts, "comm "+strings.Join(f.Comms, ","))
	}
	for _, l := range []struct {
		name string
		ids  []int
	}{{"pid", f.Pids}, {"tid", f.Tids}} {
		if len(l.ids) == 0 {
			continue
		}
		s := make([]string, len(l.ids))
		for i, id := range l.ids {
			s[i] = strconv.Itoa(id)
		}
		parts = append(parts, l.name+" "+strings.Join(s, ","))
	}
	return strings.Join(parts, " ")
}

// Only is p with the samples (or sample groups) of the tasks f keeps: a
// copy that shares p's tables, its target naming the filter. p itself is
// returned when f is empty.
func (p *Profile) Only(f Tasks) *Profile {
	if f.Empty() {
		return p
	}
	q := *p
	q.Samples, q.Groups = nil, nil
	for _, s := range p.Samples {
		if f.Keep(p.Threads[s.Thread]) {
			q.Samples = append(q.Samples, s)
		}
	}
	if p.Groups != nil {
		q.Groups = []SampleGroup{}
		for _, g := range p.Groups {
			if f.Keep(p.Threads[g.Thread]) {
				q.Groups = append(q.Groups, g)
			}
		}
	}
	q.Meta.Target = FilteredTarget(p.Meta.Target, f)
	return &q
}

// FilteredTarget is target with the filter that chose its samples, so a
// data file says it holds only some tasks: "system-wide, only comm a".
func FilteredTarget(target string, f Tasks) string {
	if f.Empty() {
		return target
	}
	if target == "" {
		return "only " + f.String()
	}
	return target + ", only " + f.String()
}
