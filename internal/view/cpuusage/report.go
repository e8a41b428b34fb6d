// Package cpuusage shows exact CPU time per task and CPU over an interval
// (cputime's report, as text and JSON lines) and runs cputime's loop: a
// report every interval, optionally beside a sampled estimate and streamed
// to another machine.
package cpuusage

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/model/jsonout"
	"github.com/sonde-dev/sonde/internal/tools/cputime"
)

// Report is one interval's CPU time.
type Report struct {
	jsonout.Run
	Host    string `json:"host"`
	StartNS uint64 `json:"start_ns"` // CLOCK_MONOTONIC
	EndNS   uint64 `json:"end_ns"`
	CPUs    []CPU  `json:"cpus"`
	Tasks   []Task `json:"tasks"` // most CPU time first
	// Lost counts time slices the program could not record (map full);
	// UnseenSwitches switches the kernel did not report to it.
	Lost           uint64 `json:"lost"`
	UnseenSwitches uint64 `json:"unseen_switches"`
	SamplePeriodNS uint64 `json:"sample_period_ns,omitempty"` // with a sampled estimate
	at             time.Time
	o              Options
}

// CPU is one CPU's busy and idle time.
type CPU struct {
	CPU    int    `json:"cpu"`
	BusyNS uint64 `json:"busy_ns"`
	IdleNS uint64 `json:"idle_ns"`
}

// Task is one thread's time on CPU.
type Task struct {
	Pid      uint32   `json:"pid"`
	Tid      uint32   `json:"tid"`
	Comm     string   `json:"comm"`
	CPUNS    uint64   `json:"cpu_ns"`
	PerCPUNS []uint64 `json:"per_cpu_ns,omitempty"` // with PerCPU
	// SampledNS is the time a cpu-clock sampler would have estimated.
	SampledNS *uint64 `json:"sampled_ns,omitempty"`
}

// Options choose what a report shows.
type Options struct {
	Top    int   // tasks (and tasks per CPU with PerCPU)
	PerCPU bool  // each CPU's top tasks too
	Pids   []int // only these processes' threads (none: all)
	Comm   string
}

// Counters are the tracer's failure counts, cumulative.
type Counters struct{ Lost, Unseen uint64 }

// New builds a report from an interval; samples (cpu-clock samples per
// tid, nil without a sampler) of period ns each give the sampled estimate.
func New(host string, at time.Time, iv cputime.Interval, c Counters, samples map[uint32]uint64, period uint64, o Options) *Report {
	r := &Report{Run: jsonout.Run{Command: "cputime", Target: "system wide", DurationNS: jsonout.Nanos(iv.EndNS - iv.StartNS)},
		Host: host, StartNS: iv.StartNS, EndNS: iv.EndNS,
		Lost: c.Lost, UnseenSwitches: c.Unseen, at: at, o: o}
	for c := range iv.IdleNS {
		r.CPUs = append(r.CPUs, CPU{c, iv.BusyNS[c], iv.IdleNS[c]})
	}
	if samples != nil {
		r.SamplePeriodNS = period
	}
	for _, u := range iv.Tasks {
		if !model.Allows(o.Pids, int(u.Pid)) || (o.Comm != "" && u.Comm != o.Comm) {
			continue
		}
		t := Task{Pid: u.Pid, Tid: u.Tid, Comm: u.Comm, CPUNS: u.NS, PerCPUNS: u.PerCPU}
		if samples != nil {
			v := samples[u.Tid] * period
			t.SampledNS = &v
		}
		r.Tasks = append(r.Tasks, t)
	}
	return r
}

// Pct is ns as a percentage of span.
func Pct(ns, span uint64) float64 {
	if span == 0 {
		return 0
	}
	return 100 * float64(ns) / float64(span)
}

// WriteText prints the header, per-CPU busy and idle, and the top tasks
// (with each CPU's top tasks when asked).
func (r *Report) WriteText(w io.Writer) {
	span := uint64(r.DurationNS)
	fmt.Fprintf(w, "sonde cputime %s %s interval %.3fs, %d CPUs, %d slices lost, %d switches unseen\n",
		r.Host, r.at.Format("15:04:05"), float64(span)/1e9, len(r.CPUs), r.Lost, r.UnseenSwitches)
	var cpus []string
	for _, c := range r.CPUs {
		cpus = append(cpus, fmt.Sprintf("cpu%d %5.1f%% busy %5.1f%% idle", c.CPU, Pct(c.BusyNS, span), Pct(c.IdleNS, span)))
	}
	fmt.Fprintf(w, "  %s\n", strings.Join(cpus, " | "))
	fmt.Fprintf(w, "  %7s %7s %-16s %10s %7s", "PID", "TID", "COMM", "MS", "CPU%")
	if r.SamplePeriodNS != 0 {
		fmt.Fprintf(w, " %11s %8s", "SAMPLED-MS", "ERROR")
	}
	fmt.Fprintln(w)
	row := func(t Task, ns uint64) {
		fmt.Fprintf(w, "  %7d %7d %-16s %10.3f %7.2f", t.Pid, t.Tid, t.Comm, float64(ns)/1e6, Pct(ns, span))
		// The estimate is of the task's whole time, so only its total row
		// compares.
		if t.SampledNS != nil && ns == t.CPUNS {
			errPct := 0.0
			if ns > 0 {
				errPct = 100 * (float64(*t.SampledNS) - float64(ns)) / float64(ns)
			}
			fmt.Fprintf(w, " %11.3f %7.1f%%", float64(*t.SampledNS)/1e6, errPct)
		}
		fmt.Fprintln(w)
	}
	for i, t := range r.Tasks {
		if i >= r.o.Top {
			break
		}
		row(t, t.CPUNS)
	}
	if r.o.PerCPU {
		for c := range r.CPUs {
			fmt.Fprintf(w, "  cpu%d:\n", c)
			for i, t := range r.sortedOn(c) {
				if i >= r.o.Top || t.PerCPUNS[c] == 0 {
					break
				}
				row(t, t.PerCPUNS[c])
			}
		}
	}
	fmt.Fprintln(w)
}

func (r *Report) sortedOn(cpu int) []Task {
	out := append([]Task(nil), r.Tasks...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].PerCPUNS[cpu] > out[j].PerCPUNS[cpu] })
	return out
}

// WriteJSON writes the report as one line: the top tasks, or all of them
// with their per-CPU times when PerCPU.
func (r *Report) WriteJSON(w io.Writer) error {
	out := *r
	if !r.o.PerCPU {
		out.Tasks = append([]Task(nil), r.Tasks...)
		if r.o.Top > 0 && len(out.Tasks) > r.o.Top {
			out.Tasks = out.Tasks[:r.o.Top]
		}
		for i := range out.Tasks {
			out.Tasks[i].PerCPUNS = nil
		}
	}
	return jsonout.Line(w, out)
}
