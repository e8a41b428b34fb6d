package ftrace

// Calls come from the recorder flat, each with its start and duration;
// the views need who called whom. Within a thread a call's caller is the
// innermost earlier call still running when it starts, so one pass with
// a stack over the calls (sorted by start) finds every parent.

// nest returns, for each call of cs (sorted by sortCalls), the index of
// its caller (-1 for a root) and its depth in the recorded tree.
func nest(cs []Call) (parent, depth []int) {
	parent = make([]int, len(cs))
	depth = make([]int, len(cs))
	var stack []int
	for i := range cs {
		c := &cs[i]
		if i > 0 && cs[i-1].Thread != c.Thread {
			stack = stack[:0]
		}
		for len(stack) > 0 && !inside(c, &cs[stack[len(stack)-1]]) {
			stack = stack[:len(stack)-1]
		}
		parent[i] = -1
		if len(stack) > 0 {
			parent[i] = stack[len(stack)-1]
		}
		depth[i] = len(stack)
		stack = append(stack, i)
	}
	return parent, depth
}

// inside says whether c ran within p (a call that returns in the same
// nanosecond as its caller is still inside it).
func inside(c, p *Call) bool {
	return c.Start >= p.Start && c.End() <= p.End() && (c.Start > p.Start || c.Depth > p.Depth || c.Dur < p.Dur)
}

// Filter drops calls shorter than minDur or deeper than maxDepth (0: no
// limit), keeping the tree closed: a kept call's callers are kept too
// (they last longer and sit shallower).
func (t *Trace) Filter(minDur uint64, maxDepth int) []Call {
	_, depth := nest(t.Calls)
	out := make([]Call, 0, len(t.Calls))
	for i, c := range t.Calls {
		if c.Dur < minDur || (maxDepth > 0 && depth[i] >= maxDepth) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// Threads returns the calls of thread tid only (all when tid is 0).
func ThreadCalls(t *Trace, cs []Call, tid int) []Call {
	if tid == 0 {
		return cs
	}
	var out []Call
	for _, c := range cs {
		if int(t.P.Threads[c.Thread].Tid) == tid {
			out = append(out, c)
		}
	}
	return out
}
