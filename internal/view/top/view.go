package top

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/sonde-dev/sonde/internal/tools/cputime"
	"github.com/sonde-dev/sonde/internal/view/cpuusage"
)

// View is how frames are shown: the keys change it.
type View struct {
	SortBy string // one of Sorts
	Filter string // comm, part of a comm, or pid ("" for all)
	Paused bool
	Rows   int // rows per table
}

// Sorts are the task orders 's' cycles through.
var Sorts = []string{"cpu", "pid", "comm"}

// NextSort moves to the next order.
func (v *View) NextSort() {
	for i, s := range Sorts {
		if s == v.SortBy {
			v.SortBy = Sorts[(i+1)%len(Sorts)]
			return
		}
	}
	v.SortBy = Sorts[0]
}

func (v *View) tasks(f *Frame) []cputime.Usage {
	var out []cputime.Usage
	for _, t := range f.Tasks {
		if v.Filter != "" && strconv.Itoa(int(t.Pid)) != v.Filter && !strings.Contains(t.Comm, v.Filter) {
			continue
		}
		out = append(out, t)
	}
	sort.SliceStable(out, func(i, j int) bool {
		switch v.SortBy {
		case "pid":
			if out[i].Pid != out[j].Pid {
				return out[i].Pid < out[j].Pid
			}
			return out[i].Tid < out[j].Tid
		case "comm":
			return out[i].Comm < out[j].Comm
		}
		return out[i].NS > out[j].NS
	})
	return out
}

// Lines renders a frame as text lines cut to width (0: no limit), for the
// screen and for batch output alike.
func (v *View) Lines(f *Frame, width int) []string {
	var cpus []string
	for c, b := range f.Busy {
		cpus = append(cpus, fmt.Sprintf("cpu%d %5.1f%%", c, b))
	}
	state, filter := "", ""
	if v.Paused {
		state = "  [paused]"
	}
	if v.Filter != "" {
		filter = "  filter: " + v.Filter
	}
	out := []string{
		fmt.Sprintf("sonde top  %s  %s  sort: %s%s%s", f.At.Format("15:04:05"), strings.Join(cpus, "  "), v.SortBy, filter, state),
		"keys: q quit  s sort  f filter  p pause",
	}
	if f.Symbols != nil || f.Samples > 0 {
		out = append(out, "", fmt.Sprintf("Hot symbols (%d samples, system-wide)", f.Samples),
			fmt.Sprintf("%8s  %-3s %-40s %s", "OVERHEAD", "", "SYMBOL", "SHARED OBJECT"))
		for i, s := range f.Symbols {
			if i >= v.Rows {
				break
			}
			mark := "[.]"
			if s.Kernel {
				mark = "[k]"
			}
			out = append(out, fmt.Sprintf("%7.2f%%  %s %-40s %s", 100*float64(s.Count)/float64(max(f.Samples, 1)), mark, trunc(s.Sym, 40), s.DSO))
		}
	}
	out = append(out, "", fmt.Sprintf("Tasks (exact CPU time from sched_switch over %.2fs)", f.Span.Seconds()),
		fmt.Sprintf("%7s %7s %-16s %7s %10s", "PID", "TID", "COMM", "CPU%", "MS"))
	for i, t := range v.tasks(f) {
		if i >= v.Rows {
			break
		}
		out = append(out, fmt.Sprintf("%7d %7d %-16s %7.2f %10.3f", t.Pid, t.Tid, t.Comm, cpuusage.Pct(t.NS, uint64(f.Span)), float64(t.NS)/1e6))
	}
	for i := range out {
		out[i] = trunc(out[i], width)
	}
	return out
}

func trunc(s string, n int) string {
	if n > 0 && len(s) > n {
		return s[:n]
	}
	return s
}
