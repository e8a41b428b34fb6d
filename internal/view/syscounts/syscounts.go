// Package syscounts shows syscount's table: calls, errors and (with -L)
// time per system call, optionally per process, as text and typed JSON.
package syscounts

import (
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/sonde-dev/sonde/internal/model/jsonout"
	"github.com/sonde-dev/sonde/internal/tools/syscount"
)

// Report is one syscount table.
type Report struct {
	jsonout.Run
	Syscalls []syscount.Row `json:"syscalls"` // most calls first
	Lost     uint64         `json:"lost"`     // updates dropped with the map full
	o        Options
}

// Options choose the table's columns and rows.
type Options struct {
	PerProcess bool   // a PID and COMM column
	Latency    bool   // TOTAL, AVG and MAX columns
	Top        int    // rows in the text table (0: all)
	Comm       string // only processes with this name (rows must be per process)
	Target     string // what was traced, as the text names it
	Command    bool   // a command was run: its exit status is part of the report
}

// New builds the report from a run.
func New(res *syscount.Result, o Options) *Report {
	rows := res.Rows
	if o.Comm != "" {
		rows = filterComm(rows, o.Comm, o.PerProcess)
	}
	r := &Report{Run: jsonout.Run{Command: "syscount", Target: o.Target, DurationNS: jsonout.NS(res.Elapsed)}, Syscalls: rows, Lost: res.Lost, o: o}
	if o.Command {
		r.ExitCode = &res.ExitCode
	}
	return r
}

// WriteText prints the table and a footer.
func (r *Report) WriteText(w io.Writer) {
	var total uint64
	for _, s := range r.Syscalls {
		total += s.Count
	}
	if r.o.PerProcess {
		fmt.Fprintf(w, "%-8s %-16s ", "PID", "COMM")
	}
	fmt.Fprintf(w, "%-22s %10s %8s", "SYSCALL", "COUNT", "ERRORS")
	if r.o.Latency {
		fmt.Fprintf(w, " %14s %12s %12s", "TOTAL(us)", "AVG(us)", "MAX(us)")
	}
	fmt.Fprintln(w)
	for i, s := range r.Syscalls {
		if r.o.Top > 0 && i >= r.o.Top {
			break
		}
		if r.o.PerProcess {
			fmt.Fprintf(w, "%-8d %-16s ", s.Pid, s.Comm)
		}
		fmt.Fprintf(w, "%-22s %10d %8d", s.Name, s.Count, s.Errors)
		if r.o.Latency {
			fmt.Fprintf(w, " %14.1f %12.3f %12.1f", float64(s.TotalNS)/1e3, s.AvgNS/1e3, float64(s.MaxNS)/1e3)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "# %d syscalls in %s, %d lost to a full map\n", total, time.Duration(r.DurationNS).Round(time.Millisecond), r.Lost)
}

// WriteJSON writes the report as one document.
func (r *Report) WriteJSON(w io.Writer) error { return jsonout.Write(w, r) }

// filterComm keeps the rows of processes named comm, merged per syscall
// unless keepProcs.
func filterComm(rows []syscount.Row, comm string, keepProcs bool) []syscount.Row {
	var out []syscount.Row
	idx := map[uint32]int{}
	for _, r := range rows {
		if r.Comm != comm {
			continue
		}
		if keepProcs {
			out = append(out, r)
			continue
		}
		i, ok := idx[r.Nr]
		if !ok {
			r.Pid, r.Comm = 0, ""
			idx[r.Nr] = len(out)
			out = append(out, r)
			continue
		}
		o := &out[i]
		o.Count += r.Count
		o.Errors += r.Errors
		o.TotalNS += r.TotalNS
		o.MaxNS = max(o.MaxNS, r.MaxNS)
		if o.Count > 0 {
			o.AvgNS = float64(o.TotalNS) / float64(o.Count)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Count > out[j].Count })
	return out
}
