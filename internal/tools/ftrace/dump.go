package ftrace

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// chromeEvent is one event of the Chrome trace event format (the JSON
// that chrome://tracing and Perfetto read): B and E bracket a call on a
// thread's track; ts is in microseconds.
type chromeEvent struct {
	Name string            `json:"name"`
	Ph   string            `json:"ph"`
	Ts   float64           `json:"ts"`
	Pid  int32             `json:"pid"`
	Tid  int32             `json:"tid"`
	Args map[string]string `json:"args,omitempty"`
}

// WriteChrome writes the calls as Chrome trace events: per thread, a B at
// each entry and an E at each return, properly nested (a callee's E
// before its caller's), with timestamps relative to the first call.
func WriteChrome(w io.Writer, t *Trace, cs []Call) error {
	parent, _ := nest(cs)
	var base uint64
	for i, c := range cs {
		if i == 0 || c.Start < base {
			base = c.Start
		}
	}
	us := func(ns uint64) float64 { return float64(ns-base) / 1e3 }
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	bw.WriteString("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")
	first := true
	emit := func(e chromeEvent) {
		if !first {
			bw.WriteString(",")
		}
		first = false
		enc.Encode(e)
	}
	// Thread names, for the track titles.
	seen := map[int32]bool{}
	for _, c := range cs {
		th := t.P.Threads[c.Thread]
		if !seen[th.Tid] {
			seen[th.Tid] = true
			emit(chromeEvent{Name: "thread_name", Ph: "M", Pid: th.Pid, Tid: th.Tid, Args: map[string]string{"name": th.Comm}})
		}
	}
	var open []int // calls entered and not yet ended, of the current thread
	end := func(i int) {
		th := t.P.Threads[cs[i].Thread]
		emit(chromeEvent{Name: t.FuncName(cs[i].Fn), Ph: "E", Ts: us(cs[i].End()), Pid: th.Pid, Tid: th.Tid})
	}
	for i := range cs {
		for len(open) > 0 && open[len(open)-1] != parent[i] {
			end(open[len(open)-1])
			open = open[:len(open)-1]
		}
		c := &cs[i]
		th := t.P.Threads[c.Thread]
		var args map[string]string
		if len(c.Args) > 0 {
			args = map[string]string{"args": formatArgs(c.Args)}
		}
		emit(chromeEvent{Name: t.FuncName(c.Fn), Ph: "B", Ts: us(c.Start), Pid: th.Pid, Tid: th.Tid, Args: args})
		open = append(open, i)
	}
	for len(open) > 0 {
		end(open[len(open)-1])
		open = open[:len(open)-1]
	}
	bw.WriteString("]}\n")
	return bw.Flush()
}

// Folded writes time-weighted folded stacks: each call path with the
// nanoseconds spent in its last function itself (self time), so a flame
// graph's widths are wall time.
func Folded(w io.Writer, t *Trace, cs []Call) error {
	parent, _ := nest(cs)
	self := make([]uint64, len(cs))
	for i := range cs {
		self[i] = cs[i].Dur
	}
	for i, p := range parent {
		if p >= 0 {
			self[p] -= min(self[p], cs[i].Dur)
		}
	}
	paths := make([]string, len(cs))
	sum := map[string]uint64{}
	var order []string
	for i := range cs {
		name := strings.ReplaceAll(t.FuncName(cs[i].Fn), ";", ":")
		if p := parent[i]; p >= 0 {
			paths[i] = paths[p] + ";" + name
		} else {
			paths[i] = t.P.Threads[cs[i].Thread].Comm + ";" + name
		}
		if _, ok := sum[paths[i]]; !ok {
			order = append(order, paths[i])
		}
		sum[paths[i]] += self[i]
	}
	bw := bufio.NewWriter(w)
	for _, p := range order {
		if sum[p] > 0 {
			fmt.Fprintf(bw, "%s %d\n", p, sum[p])
		}
	}
	return bw.Flush()
}
