package ftrace

import (
	"bufio"
	"fmt"
	"io"
	"sort"

	"github.com/sonde-dev/sonde/internal/model/jsonout"
)

// Row is one function's calls in a report.
type Row struct {
	Function string        `json:"function"`
	Total    jsonout.Nanos `json:"total_ns"` // inclusive, recursion counted once
	Self     jsonout.Nanos `json:"self_ns"`  // without its callees
	Count    uint64        `json:"count"`
	Avg      jsonout.Nanos `json:"avg_ns"` // mean of the calls' inclusive durations
	Max      jsonout.Nanos `json:"max_ns"`
	Min      jsonout.Nanos `json:"min_ns"`
}

// ReportDoc is report --json.
type ReportDoc struct {
	Command   string        `json:"command"`
	Mechanism string        `json:"mechanism"`
	Lost      uint64        `json:"lost"`
	Duration  jsonout.Nanos `json:"duration_ns"`
	Warnings  []string      `json:"warnings,omitempty"`
	Functions []Row         `json:"functions"`
}

// SortKeys are report's -s keys.
var SortKeys = []string{"total", "self", "call", "avg", "max", "min", "func"}

// Stats sums the calls per function. Total time counts a recursive
// function's outermost call only (as uftrace does), so it never exceeds
// the wall time; self time is each call's duration minus its callees'.
func Stats(t *Trace, cs []Call) []Row {
	parent, _ := nest(cs)
	callees := make([]uint64, len(cs))
	for i, p := range parent {
		if p >= 0 {
			callees[p] += cs[i].Dur
		}
	}
	rows := map[int32]*Row{}
	var order []int32
	for i := range cs {
		c := &cs[i]
		r := rows[c.Fn]
		if r == nil {
			r = &Row{Function: t.FuncName(c.Fn), Min: jsonout.Nanos(c.Dur)}
			rows[c.Fn] = r
			order = append(order, c.Fn)
		}
		r.Count++
		r.Self += jsonout.Nanos(c.Dur - min(callees[i], c.Dur))
		r.Max = max(r.Max, jsonout.Nanos(c.Dur))
		r.Min = min(r.Min, jsonout.Nanos(c.Dur))
		r.Avg += jsonout.Nanos(c.Dur) // the sum until the division below
		outer := true
		for p := parent[i]; p >= 0; p = parent[p] {
			if cs[p].Fn == c.Fn {
				outer = false
				break
			}
		}
		if outer {
			r.Total += jsonout.Nanos(c.Dur)
		}
	}
	out := make([]Row, 0, len(order))
	for _, fn := range order {
		r := rows[fn]
		r.Avg /= jsonout.Nanos(r.Count)
		out = append(out, *r)
	}
	return out
}

// SortRows orders rows by key (one of SortKeys), largest first (by name
// for "func").
func SortRows(rows []Row, key string) error {
	var less func(a, b *Row) bool
	switch key {
	case "total", "":
		less = func(a, b *Row) bool { return a.Total > b.Total }
	case "self":
		less = func(a, b *Row) bool { return a.Self > b.Self }
	case "call", "calls":
		less = func(a, b *Row) bool { return a.Count > b.Count }
	case "avg":
		less = func(a, b *Row) bool { return a.Avg > b.Avg }
	case "max":
		less = func(a, b *Row) bool { return a.Max > b.Max }
	case "min":
		less = func(a, b *Row) bool { return a.Min > b.Min }
	case "func":
		less = func(a, b *Row) bool { return a.Function < b.Function }
	default:
		return fmt.Errorf("unknown sort key %q (one of %v)", key, SortKeys)
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if less(&rows[i], &rows[j]) != less(&rows[j], &rows[i]) {
			return less(&rows[i], &rows[j])
		}
		return rows[i].Function < rows[j].Function
	})
	return nil
}

// Report writes the rows as a table (uftrace's report columns, with
// average and maximum).
func Report(w io.Writer, rows []Row) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "  %11s  %11s  %10s  %11s  %11s  %s\n", "Total time", "Self time", "Calls", "Avg", "Max", "Function")
	fmt.Fprintf(bw, "  %11s  %11s  %10s  %11s  %11s  %s\n", "===========", "===========", "==========", "===========", "===========", "====================")
	for _, r := range rows {
		fmt.Fprintf(bw, "  %s  %s  %10d  %s  %s  %s\n", dur10(r.Total), dur10(r.Self), r.Count, dur10(r.Avg), dur10(r.Max), r.Function)
	}
	return bw.Flush()
}

func dur10(d jsonout.Nanos) string { return FormatDuration(uint64(d)) }

// Doc is the JSON document of a report.
func (t *Trace) Doc(rows []Row) ReportDoc {
	m := &t.P.Meta
	return ReportDoc{Command: "ftrace report", Mechanism: t.Mechanism(), Lost: m.Lost,
		Duration: jsonout.Nanos(m.DurationNS), Warnings: m.Warnings, Functions: rows}
}
