package deadlock

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sonde-dev/sonde/internal/model/jsonout"
)

// Report is what sonde deadlock prints: each inversion in
// ThreadSanitizer's "lock-order-inversion (potential deadlock)" shape,
// then the size of the graph and what the program counted.
type Report struct {
	jsonout.Run
	Inversions   []Inversion `json:"inversions"`
	LocksInGraph int         `json:"locks_in_graph"`
	EdgesInGraph int         `json:"edges_in_graph"`
	Binary       string      `json:"binary"` // where the probes are
	Counters     Counters    `json:"lock_events"`
	Warnings     []string    `json:"warnings,omitempty"`
}

// Inversion is one cycle of the lock-order graph.
type Inversion struct {
	Pid   uint32       `json:"pid"`
	Locks []Lock       `json:"locks"`
	Edges []EdgeReport `json:"edges"` // Edges[i] goes from Locks[i] to Locks[i+1] (the last to Locks[0])
}

// Lock is one lock of a cycle, named M1, M2, … as ThreadSanitizer does.
type Lock struct {
	Name   string `json:"name"`
	Addr   uint64 `json:"addr"`
	Symbol string `json:"symbol,omitempty"` // the global or static variable it is, if any
}

// EdgeReport is one edge of a cycle: a thread acquired a lock while
// holding another, the first time that order was seen.
type EdgeReport struct {
	jsonout.Task
	Count    uint64      `json:"count"` // acquisitions in this order, over the run
	Held     Acquisition `json:"held"`
	Acquired Acquisition `json:"acquired"`
}

// Acquisition is where one lock was taken, and how.
type Acquisition struct {
	Lock   string  `json:"lock"` // its name in the cycle (M1)
	Mode   string  `json:"mode"` // mutex, read or write
	Frames []Frame `json:"frames"`
}

// NewReport builds the report of a run; target names what was traced
// (a command run is named by its command line).
func NewReport(res *Result, target string) *Report {
	if res.Command != nil {
		target = "'" + strings.Join(res.Command, " ") + "'"
	}
	r := &Report{Run: jsonout.Run{Command: "deadlock", Target: target, DurationNS: jsonout.NS(res.Elapsed)},
		Inversions: []Inversion{}, Binary: res.Lib, Counters: res.Counters}
	if res.Command != nil {
		r.ExitCode = &res.ExitCode
	}
	locks := map[LockID]bool{}
	for _, e := range res.Edges {
		locks[LockID{e.Pid, e.From}] = true
		locks[LockID{e.Pid, e.To}] = true
	}
	r.LocksInGraph, r.EdgesInGraph = len(locks), len(res.Edges)
	for _, c := range FindCycles(res.Edges) {
		inv := Inversion{Pid: c[0].Pid}
		for i, e := range c {
			inv.Locks = append(inv.Locks, Lock{Name: fmt.Sprintf("M%d", i+1), Addr: e.From, Symbol: res.Names[LockID{e.Pid, e.From}]})
		}
		for i, e := range c {
			from, to := inv.Locks[i].Name, inv.Locks[(i+1)%len(c)].Name
			inv.Edges = append(inv.Edges, EdgeReport{
				Task:     jsonout.Task{PID: int(e.Pid), TID: int(e.Tid), Comm: e.Comm},
				Count:    e.Count,
				Held:     Acquisition{Lock: from, Mode: e.FromMode.String(), Frames: orEmpty(res.Stacks[e.FromStack])},
				Acquired: Acquisition{Lock: to, Mode: e.ToMode.String(), Frames: orEmpty(res.Stacks[e.ToStack])},
			})
		}
		r.Inversions = append(r.Inversions, inv)
	}
	c := res.Counters
	if c.Dropped() > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("the graph misses some orders: %d new pairs lost to a full map, %d acquisitions past %d held locks, %d with the thread map full",
			c.EdgesFull, c.HeldFull, maxHeld, c.ThreadsFull))
	}
	if res.Fallback != "" {
		r.Warnings = append(r.Warnings, "a uprobe per lock function, slower to attach and detach ("+res.Fallback+")")
	}
	return r
}

// maxHeld is DL_MAX_HELD in deadlock.h.
const maxHeld = int(deadlockDlLimitDL_LIMIT_HELD)

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func orEmpty(f []Frame) []Frame {
	if f == nil {
		return []Frame{}
	}
	return f
}

// WriteText prints each inversion as ThreadSanitizer does, then a summary.
func (r *Report) WriteText(w io.Writer) {
	for _, inv := range r.Inversions {
		fmt.Fprintln(w, "==================")
		fmt.Fprintf(w, "WARNING: lock-order-inversion (potential deadlock) (pid %d)\n", inv.Pid)
		var cyc []string
		for _, l := range inv.Locks {
			s := fmt.Sprintf("%s (%#x", l.Name, l.Addr)
			if l.Symbol != "" {
				s += " " + l.Symbol
			}
			cyc = append(cyc, s+")")
		}
		fmt.Fprintf(w, "  Cycle in lock order graph: %s => %s\n", strings.Join(cyc, " => "), inv.Locks[0].Name)
		for _, e := range inv.Edges {
			fmt.Fprintf(w, "\n  %s acquired here while holding %s in thread %d (%s):\n", lockWord(e.Acquired, true), lockWord(e.Held, false), e.TID, e.Comm)
			writeFrames(w, e.Acquired.Frames)
			fmt.Fprintf(w, "\n  %s previously acquired by the same thread here:\n", lockWord(e.Held, true))
			writeFrames(w, e.Held.Frames)
		}
		fmt.Fprintln(w, "==================")
	}
	graph := fmt.Sprintf("%s, %s, %s", plural(r.LocksInGraph, "lock"), plural(r.EdgesInGraph, "edge"), plural(int(r.Counters.Acquisitions), "acquisition"))
	if len(r.Inversions) == 0 {
		fmt.Fprintf(w, "no lock-order inversions found (%s)\n", graph)
	} else {
		fmt.Fprintf(w, "SUMMARY: %s (potential deadlock) in a graph of %s\n", plural(len(r.Inversions), "lock-order inversion"), graph)
	}
	c := r.Counters
	fmt.Fprintf(w, "# %s traced in %s: %d try-locks busy, %d recursive, %d releases of locks taken before tracing, %d stacks reused from the same place\n",
		r.Binary, time.Duration(r.DurationNS).Round(time.Millisecond), c.TryFailed, c.Recursive, c.UnknownReleases, c.StacksReused)
	fmt.Fprintf(w, "# dropped: %d pairs (edge map full), %d acquisitions (over %d held), %d (thread map full); %d stacks not taken\n",
		c.EdgesFull, c.HeldFull, maxHeld, c.ThreadsFull, c.StackFailed)
	for _, s := range r.Warnings {
		fmt.Fprintln(w, "# warning: "+s)
	}
}

// lockWord names a lock as ThreadSanitizer does ("Mutex M1"), with the
// rwlock side ("RWLock M2 (read)").
func lockWord(a Acquisition, capital bool) string {
	if a.Mode == Mutex.String() {
		if capital {
			return "Mutex " + a.Lock
		}
		return "mutex " + a.Lock
	}
	return fmt.Sprintf("RWLock %s (%s)", a.Lock, a.Mode)
}

func writeFrames(w io.Writer, fs []Frame) {
	if len(fs) == 0 {
		fmt.Fprintln(w, "    [no stack]")
	}
	for i, f := range fs {
		fmt.Fprintf(w, "    #%d %#x %s (%s)\n", i, f.Addr, f.Sym, f.DSO)
	}
}

// WriteJSON writes the report as one document.
func (r *Report) WriteJSON(w io.Writer) error { return jsonout.Write(w, r) }
