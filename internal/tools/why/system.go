package why

import (
	"sort"
)

// add sums a thread's wall time into the budget.
func (b *Budget) add(t *Thread) {
	b.WallNS += t.WallNS
	b.OnCPUNS += t.OnCPUNS
	b.IRQNS += t.IRQNS
	b.RunnableNS += t.RunnableNS
	b.ThrottledNS += t.ThrottledNS
	b.BlockedNS += t.BlockedNS
	if b.ByReason == nil {
		b.ByReason = map[string]uint64{}
	}
	for k, v := range t.ByReason {
		b.ByReason[k] += v
	}
}

// busy is the time a budget's threads ran or waited for a CPU.
func (b *Budget) busy() uint64 { return b.OnCPUNS + b.IRQNS + b.RunnableNS + b.ThrottledNS }

// processes sums the threads by process, the busiest first (time on or
// waiting for a CPU, then wall time, then pid). A process is named by
// its main thread, else by its first thread.
func processes(ts []Thread) []Process {
	by := map[int]*Process{}
	var out []*Process
	for i := range ts {
		t := &ts[i]
		p := by[t.PID]
		if p == nil {
			p = &Process{PID: t.PID, Comm: t.Comm, Budget: Budget{ByReason: map[string]uint64{}}}
			by[t.PID] = p
			out = append(out, p)
		}
		if t.TID == t.PID {
			p.Comm = t.Comm
		}
		p.Threads++
		p.add(t)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.busy() != b.busy() {
			return a.busy() > b.busy()
		}
		if a.WallNS != b.WallNS {
			return a.WallNS > b.WallNS
		}
		return a.PID < b.PID
	})
	ps := make([]Process, len(out))
	for i, p := range out {
		ps[i] = *p
	}
	return ps
}

// shown are the processes whose threads the text and the timeline show:
// system-wide, the top ones; nil (all) otherwise.
func (r *Report) shown() map[int]bool {
	if !r.system {
		return nil
	}
	pids := map[int]bool{}
	for i, p := range r.Processes {
		if i >= r.top {
			break
		}
		pids[p.PID] = true
	}
	return pids
}

// shownTimeline keeps the timeline's target threads of the shown
// processes (nil: all of them).
func shownTimeline(tl *Timeline, targets map[int]*Thread, pids map[int]bool) *Timeline {
	if tl == nil {
		return nil
	}
	out := &Timeline{EdgesNS: tl.EdgesNS, Threads: []ThreadStates{}}
	for _, ts := range tl.Threads {
		if targets[ts.TID] == nil || (pids != nil && !pids[ts.PID]) {
			continue
		}
		out.Threads = append(out.Threads, ts)
	}
	sort.Slice(out.Threads, func(i, j int) bool { return out.Threads[i].TID < out.Threads[j].TID })
	return out
}
