package why

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sonde-dev/sonde/internal/model/jsonout"
)

func pct(share float64) string { return fmt.Sprintf("%.1f%%", 100*share) }

// threadsWords: "thread worker (42)" or "4 threads (worker)".
func threadsWords(ts []jsonout.Task) string {
	if len(ts) == 1 {
		return fmt.Sprintf("thread %s (%d)", ts[0].Comm, ts[0].TID)
	}
	var comms []string
	seen := map[string]bool{}
	for _, t := range ts {
		if !seen[t.Comm] {
			seen[t.Comm] = true
			comms = append(comms, t.Comm)
		}
	}
	return fmt.Sprintf("%d threads (%s)", len(ts), strings.Join(comms, ", "))
}

// median is the slot holding the middle wait, as "16-32ms".
func median(bs []Bucket) string {
	var n, half uint64
	for _, b := range bs {
		n += b.Count
	}
	for _, b := range bs {
		half += b.Count
		if 2*half >= n {
			return time.Duration(b.LowNS).String() + "-" + time.Duration(b.HighNS).String()
		}
	}
	return "?"
}

// rootWords says a chain's root in words.
var rootWords = map[string]string{
	"cpu": "CPU work", "sleep": "a sleep", "device": "a device", "peer": "an external peer (the network)",
	"cycle": "a cycle of threads waking each other", "unknown": "unknown",
}

// waitText is a wait finding in one line.
func waitText(f *Finding, g *group, ofWhat string) string {
	in := f.Call
	if in == "" {
		in = g.syscall
	}
	if in == "" {
		in = "the kernel"
	}
	s := fmt.Sprintf("%s spent %s %s blocked in %s (%s)", threadsWords(f.Threads), pct(f.Share), ofWhat, in, reasonWords[f.Kind])
	if f.Function != "" && f.Function != in {
		s += " under " + f.Function
	}
	s += fmt.Sprintf(", %d waits", f.Count)
	if len(f.Latency) > 0 {
		s += ", median " + median(f.Latency)
	}
	for i, l := range f.Chain {
		if i == 0 {
			s += "; woken by "
		} else {
			s += ", which was woken by "
		}
		s += linkWords(l)
	}
	switch {
	case len(f.Chain) == 0 && f.Root == "":
		s += "; nothing woke it while traced"
	case f.Root != "":
		s += "; root: " + rootWords[f.Root]
	}
	return s
}

func linkWords(l Link) string {
	if l.Reason == "interrupt" {
		return "an interrupt (" + l.Interrupt + ")"
	}
	s := fmt.Sprintf("%s (tid %d)", l.Comm, l.TID)
	if a := Anchor(l.Frames, ""); a != "[unknown]" {
		s += " in " + a
	}
	switch l.Reason {
	case "cpu":
		s += ", which had been running"
	case "cycle":
		s += " again"
	default:
		in := leafUser(l.WaitFrames)
		if in == "" {
			in = Anchor(l.WaitFrames, l.Syscall)
		}
		s += fmt.Sprintf(", which had waited %s in %s (%s)", time.Duration(l.WaitNS).Round(10*time.Microsecond), in, reasonWords[l.Reason])
		if a := Anchor(l.WaitFrames, l.Syscall); a != in {
			s += " under " + a
		}
	}
	return s
}

// WriteText prints the budget, the findings and the per-thread table.
func (r *Report) WriteText(w io.Writer) {
	b := r.Budget
	wall := float64(b.WallNS)
	share := func(ns uint64) string {
		if wall == 0 {
			return "-"
		}
		return pct(float64(ns) / wall)
	}
	fmt.Fprintf(w, "sonde why: %s, %s, %d threads, %s of thread time\n", r.Target, time.Duration(r.DurationNS).Round(time.Millisecond), len(r.Threads), time.Duration(b.WallNS).Round(time.Millisecond))
	fmt.Fprintf(w, "  on CPU %s (+ %s in interrupts), runnable %s, throttled %s, blocked %s", share(b.OnCPUNS), share(b.IRQNS), share(b.RunnableNS), share(b.ThrottledNS), share(b.BlockedNS))
	var parts []string
	for _, k := range Reasons {
		if ns := b.ByReason[k]; ns > 0 {
			parts = append(parts, reasonWords[k]+" "+share(ns))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, " (%s)", strings.Join(parts, ", "))
	}
	fmt.Fprintln(w)
	if r.system {
		r.writeProcesses(w)
	}
	who := "the target's"
	if r.system {
		who = "all threads'"
	}
	fmt.Fprintf(w, "\nFindings, by share of %s wall time:\n", who)
	r.writeFindings(w)
	r.writeThreads(w)
	fmt.Fprintf(w, "\n# why: %d findings (%s); %d stack walks failed, %d blocks lost to full maps, %d threads not followed\n",
		len(r.Findings), r.Attach, r.Errors.StackFailures, r.Errors.MapFull, r.Errors.ThreadsFull)
	for _, s := range r.Warnings {
		fmt.Fprintf(w, "# warning: %s\n", s)
	}
}

func (r *Report) writeFindings(w io.Writer) {
	for i, f := range r.Findings {
		if i >= r.top {
			fmt.Fprintf(w, "  (%d more in --json)\n", len(r.Findings)-i)
			break
		}
		fmt.Fprintf(w, "%2d. %5s  %s\n", i+1, pct(f.Share), f.Text)
		writeFrames(w, "        ", f.Frames, 8)
		for _, l := range f.Chain {
			if l.Reason == "interrupt" {
				continue
			}
			fmt.Fprintf(w, "      <- %s (tid %d, pid %d), %s of these waits, woke it from:\n", l.Comm, l.TID, l.PID, pct(l.Share))
			writeFrames(w, "           ", l.Frames, 6)
			if len(l.WaitFrames) > 0 {
				fmt.Fprintf(w, "         having waited (%s) in:\n", reasonWords[l.Reason])
				writeFrames(w, "           ", l.WaitFrames, 6)
			}
		}
	}
}

// budgetRow is a budget's parts as shares of its wall time, and its
// blocked time by reason.
func budgetRow(b *Budget) (on, runq, throttled, blocked, reasons string) {
	wall := float64(b.WallNS)
	p := func(ns uint64) string {
		if wall == 0 {
			return "-"
		}
		return pct(float64(ns) / wall)
	}
	var rs []string
	for _, k := range Reasons {
		if ns := b.ByReason[k]; ns > 0 {
			rs = append(rs, fmt.Sprintf("%s %s", k, p(ns)))
		}
	}
	return p(b.OnCPUNS), p(b.RunnableNS), p(b.ThrottledNS), p(b.BlockedNS), strings.Join(rs, ", ")
}

// writeProcesses prints the top processes' budgets (system-wide runs).
func (r *Report) writeProcesses(w io.Writer) {
	fmt.Fprintf(w, "\nProcesses, by time on or waiting for a CPU (shares of each one's wall time):\n")
	fmt.Fprintf(w, "%7s %-16s %7s %10s %8s %8s %8s %8s  %s\n", "PID", "COMM", "THREADS", "WALL", "ONCPU", "RUNQ", "THROTTL", "BLOCKED", "BLOCKED BY REASON")
	for i, p := range r.Processes {
		if i >= r.top {
			fmt.Fprintf(w, "  (%d more in --json)\n", len(r.Processes)-i)
			break
		}
		on, runq, thr, blk, rs := budgetRow(&p.Budget)
		fmt.Fprintf(w, "%7d %-16s %7d %10s %8s %8s %8s %8s  %s\n", p.PID, p.Comm, p.Threads, time.Duration(p.WallNS).Round(time.Millisecond), on, runq, thr, blk, rs)
	}
}

// writeThreads prints each thread's budget; system-wide, those of the
// top processes only.
func (r *Report) writeThreads(w io.Writer) {
	shown := r.shown()
	hidden := 0
	// System-wide, threads of several processes: each says its own.
	pid := func(p any) string { return "" }
	if r.system {
		pid = func(p any) string { return fmt.Sprintf("%7v ", p) }
	}
	fmt.Fprintf(w, "\n%s%7s %-16s %10s %8s %8s %8s %8s  %s\n", pid("PID"), "TID", "COMM", "WALL", "ONCPU", "RUNQ", "THROTTL", "BLOCKED", "BLOCKED BY REASON")
	for _, t := range r.Threads {
		if shown != nil && !shown[t.PID] {
			hidden++
			continue
		}
		b := Budget{WallNS: t.WallNS, OnCPUNS: t.OnCPUNS, RunnableNS: t.RunnableNS, ThrottledNS: t.ThrottledNS, BlockedNS: t.BlockedNS, ByReason: t.ByReason}
		on, runq, thr, blk, rs := budgetRow(&b)
		fmt.Fprintf(w, "%s%7d %-16s %10s %8s %8s %8s %8s  %s\n", pid(t.PID), t.TID, t.Comm, time.Duration(t.WallNS).Round(time.Millisecond), on, runq, thr, blk, rs)
	}
	if hidden > 0 {
		fmt.Fprintf(w, "  (%d threads of the other processes in --json)\n", hidden)
	}
}

// writeFrames prints up to n frames of a stack, user frames first (the
// kernel's are the scheduler's, the same in every wait), leaf first.
func writeFrames(w io.Writer, indent string, fs []Frame, n int) {
	shown := 0
	var kernel []Frame
	for _, f := range fs {
		if f.Kernel {
			kernel = append(kernel, f)
			continue
		}
		if shown < n {
			fmt.Fprintf(w, "%s%s\n", indent, f.Sym)
		}
		shown++
	}
	if shown == 0 {
		for i, f := range kernel {
			if i >= n {
				break
			}
			fmt.Fprintf(w, "%s%s [k]\n", indent, f.Sym)
		}
	}
	if shown > n {
		fmt.Fprintf(w, "%s... %d more\n", indent, shown-n)
	}
}

// WriteJSON writes the report as one document.
func (r *Report) WriteJSON(w io.Writer) error { return jsonout.Write(w, r) }
