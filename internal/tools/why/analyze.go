package why

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/sonde-dev/sonde/internal/model/jsonout"
)

// Finding is one thing that takes the target's wall time: CPU work in a
// function, waits for a CPU or for the cgroup's quota, or blocks of one
// kind at one place, with who ended them followed to a root.
type Finding struct {
	Kind       string         `json:"kind"`  // cpu, runqueue, throttled, or a blocked reason (disk, net, lock, sleep, fault, pipe, other)
	Share      float64        `json:"share"` // of the target threads' summed wall time, 0–1
	Text       string         `json:"text"`  // the finding in one line
	DurationNS jsonout.Nanos  `json:"duration_ns"`
	Count      uint64         `json:"count,omitempty"` // blocks (for waits)
	Threads    []jsonout.Task `json:"threads"`
	Function   string         `json:"function,omitempty"` // where the time is charged: the first caller outside the C library
	Call       string         `json:"call,omitempty"`     // the call it blocked in (poll, usleep, pthread_mutex_lock)
	Syscall    string         `json:"syscall,omitempty"`
	Frames     []Frame        `json:"frames,omitempty"` // the heaviest stack, leaf first
	Chain      []Link         `json:"chain,omitempty"`  // who ended the waits, then who ended that one's, ...
	Root       string         `json:"root,omitempty"`   // cpu, sleep, device, peer, cycle, unknown
	Latency    []Bucket       `json:"latency,omitempty"`
	// stacks are all of its stacks and their time, for its flame graph
	// (WriteFindingFolded); Frames is only the heaviest.
	stacks []stackNS
}

// AddStack charges ns to one more stack of the finding, under thread
// comm, for its flame graph: for reports built by hand (a test's, an
// import's); Analyze adds the stacks itself.
func (f *Finding) AddStack(comm string, frames []Frame, ns uint64) {
	f.stacks = append(f.stacks, stackNS{comm: comm, frames: frames, ns: ns})
}

// stackNS is one stack of a finding and the time charged to it.
type stackNS struct {
	comm   string
	frames []Frame
	ns     uint64
}

// Link is one hop of a chain: the thread that ended the waits before it.
type Link struct {
	jsonout.Task
	Share      float64       `json:"share"`            // of the finding's time this waker ended
	Frames     []Frame       `json:"frames,omitempty"` // where it was when it woke the thread before it
	Reason     string        `json:"reason"`           // how it had itself been held up: a blocked reason, cpu, or interrupt
	Syscall    string        `json:"syscall,omitempty"`
	WaitFrames []Frame       `json:"wait_frames,omitempty"` // its own last block before the wake
	WaitNS     jsonout.Nanos `json:"wait_ns,omitempty"`     // that block's mean length
	Interrupt  string        `json:"interrupt,omitempty"`   // the wake came from an interrupt: timer, device, network, irq
}

// Bucket is one log2 slot of a latency histogram.
type Bucket struct {
	LowNS  uint64 `json:"low_ns"`
	HighNS uint64 `json:"high_ns"`
	Count  uint64 `json:"count"`
}

// Budget is the target threads' wall time, summed and split.
type Budget struct {
	WallNS      uint64            `json:"wall_ns"`
	OnCPUNS     uint64            `json:"on_cpu_ns"`
	IRQNS       uint64            `json:"irq_ns"`
	RunnableNS  uint64            `json:"runnable_ns"`
	ThrottledNS uint64            `json:"throttled_ns"`
	BlockedNS   uint64            `json:"blocked_ns"`
	ByReason    map[string]uint64 `json:"blocked_by_reason_ns"`
}

// Process is one process's threads' wall time, summed and split
// (system-wide runs).
type Process struct {
	PID     int    `json:"pid"`
	Comm    string `json:"comm"`
	Threads int    `json:"nr_threads"` // traced threads
	Budget
}

// Report is why's result.
type Report struct {
	jsonout.Run
	Budget  Budget   `json:"budget"`
	Threads []Thread `json:"threads"` // the target's, by tid
	// Processes (system-wide): every process's budget, the busiest first:
	// by time on or waiting for a CPU, then by wall time.
	Processes []Process `json:"processes,omitempty"`
	Findings  []Finding `json:"findings"` // by share, largest first
	// Timeline (with --web): each shown thread's state over the window.
	Timeline *Timeline `json:"timeline,omitempty"`
	Cgroup   *Cgroup   `json:"cgroup,omitempty"`
	Errors   Errors    `json:"bpf_errors"`
	Attach   string    `json:"attach"`
	Warnings []string  `json:"warnings,omitempty"`
	top      int
	system   bool
}

// of says whose wall time the shares are of, in the findings' words.
func of(system bool) string {
	if system {
		return "of all threads' time"
	}
	return "of the target's time"
}

// group is the waits of one finding.
type group struct {
	reason, anchor, call, comm, syscall string
	ns, count                           uint64
	slots                               [whySlots]uint64
	tids                                map[int]bool
	waits                               []*Wait
}

// Analyze splits the target threads' time and ranks the findings.
func Analyze(d *Data, top int) *Report {
	r := &Report{top: top, system: d.System, Budget: Budget{ByReason: map[string]uint64{}}}
	targets := map[int]*Thread{}
	for i := range d.Threads {
		t := &d.Threads[i]
		if t.Depth != 0 {
			continue
		}
		t.ByReason = map[string]uint64{}
		targets[t.TID] = t
	}
	byTid := map[int][]*Wait{}
	groups := map[string]*group{}
	for i := range d.Waits {
		w := &d.Waits[i]
		byTid[w.Tid] = append(byTid[w.Tid], w)
		t := targets[w.Tid]
		if t == nil {
			continue
		}
		reason := Classify(w.Frames, w.Syscall)
		t.ByReason[reason] += w.NS
		g := groups[w.groupKey(reason)]
		if g == nil {
			g = &group{reason: reason, anchor: Anchor(w.Frames, w.Syscall), call: leafUser(w.Frames), comm: w.Comm, syscall: w.Syscall, tids: map[int]bool{}}
			groups[w.groupKey(reason)] = g
		}
		g.add(w)
	}
	r.Cgroup = d.Cgroup
	apportionThrottling(d.Cgroup, targets)
	for _, t := range targets {
		r.Threads = append(r.Threads, *t)
		r.Budget.add(t)
	}
	sort.Slice(r.Threads, func(i, j int) bool { return r.Threads[i].TID < r.Threads[j].TID })
	if d.System {
		r.Processes = processes(r.Threads)
	}
	r.Timeline = shownTimeline(d.Timeline, targets, r.shown())
	wall := float64(r.Budget.WallNS)
	if wall == 0 {
		return r
	}
	for _, g := range groups {
		r.Findings = append(r.Findings, g.finding(wall, byTid, targets, of(d.System)))
	}
	r.Findings = append(r.Findings, cpuFindings(d, targets, wall)...)
	r.Findings = append(r.Findings, queueFindings(r, wall)...)
	sort.SliceStable(r.Findings, func(i, j int) bool { return r.Findings[i].Share > r.Findings[j].Share })
	return r
}

// apportionThrottling: when the kernel gave the program no way to see a
// throttled runqueue (no CONFIG_CFS_BANDWIDTH fields, or a kernel that
// throttles tasks as they return to user space) but cpu.stat counted
// throttled time, the runnable time of the cgroup's threads is split in
// the same proportion: throttled_time over their summed runnable time.
func apportionThrottling(cg *Cgroup, targets map[int]*Thread) {
	if cg == nil || cg.ThrottledNS == 0 {
		return
	}
	var runq uint64
	for _, t := range targets {
		if t.ThrottledNS > 0 {
			return // the program saw it
		}
		runq += t.RunnableNS
	}
	if runq == 0 {
		return
	}
	frac := min(1, float64(cg.ThrottledNS)/float64(runq))
	for _, t := range targets {
		th := uint64(frac * float64(t.RunnableNS))
		t.ThrottledNS += th
		t.RunnableNS -= th
	}
}

func (w *Wait) groupKey(reason string) string {
	return reason + "\x00" + Anchor(w.Frames, w.Syscall) + "\x00" + leafUser(w.Frames) + "\x00" + w.Comm
}

func (g *group) add(w *Wait) {
	g.ns += w.NS
	g.count += w.Count
	for i, c := range w.Slots {
		g.slots[i] += c
	}
	g.tids[w.Tid] = true
	g.waits = append(g.waits, w)
}

func (g *group) finding(wall float64, byTid map[int][]*Wait, targets map[int]*Thread, ofWhat string) Finding {
	f := Finding{Kind: g.reason, Share: float64(g.ns) / wall, DurationNS: jsonout.Nanos(g.ns), Count: g.count,
		Function: g.anchor, Call: g.call, Syscall: g.syscall, Latency: buckets(g.slots)}
	heaviest := g.waits[0]
	for _, w := range g.waits {
		if w.NS > heaviest.NS {
			heaviest = w
		}
		f.stacks = append(f.stacks, stackNS{comm: w.Comm, frames: w.Frames, ns: w.NS})
	}
	f.Frames = heaviest.Frames
	for _, tid := range slices.Sorted(maps.Keys(g.tids)) {
		f.Threads = append(f.Threads, jsonout.Task{PID: targets[tid].PID, TID: tid, Comm: targets[tid].Comm})
	}
	f.Chain, f.Root = chain(g.waits, g.reason, byTid, g.tids)
	f.Text = waitText(&f, g, ofWhat)
	return f
}

// buckets are the non-empty slots of a histogram in µs log2 slots.
func buckets(slots [whySlots]uint64) []Bucket {
	var out []Bucket
	for i, c := range slots {
		if c == 0 {
			continue
		}
		lo := uint64(1000) << i
		if i == 0 {
			lo = 0
		}
		out = append(out, Bucket{LowNS: lo, HighNS: uint64(1000) << (i + 1), Count: c})
	}
	return out
}

// cpuFindings: time on a CPU, by the function the slices ended in.
func cpuFindings(d *Data, targets map[int]*Thread, wall float64) []Finding {
	type cg struct {
		ns     uint64
		frames []Frame
		heavy  uint64
		tids   map[int]bool
		stacks []stackNS
	}
	gs := map[string]*cg{}
	for _, c := range d.CPU {
		if targets[c.Tid] == nil {
			continue
		}
		a := Anchor(c.Frames, "")
		g := gs[a]
		if g == nil {
			g = &cg{tids: map[int]bool{}}
			gs[a] = g
		}
		g.ns += c.NS
		g.tids[c.Tid] = true
		g.stacks = append(g.stacks, stackNS{comm: c.Comm, frames: userOnly(c.Frames), ns: c.NS})
		if c.NS > g.heavy {
			g.heavy, g.frames = c.NS, c.Frames
		}
	}
	var out []Finding
	for a, g := range gs {
		f := Finding{Kind: "cpu", Share: float64(g.ns) / wall, DurationNS: jsonout.Nanos(g.ns), Function: a, Frames: g.frames, stacks: g.stacks}
		for _, tid := range slices.Sorted(maps.Keys(g.tids)) {
			f.Threads = append(f.Threads, jsonout.Task{PID: targets[tid].PID, TID: tid, Comm: targets[tid].Comm})
		}
		f.Root = "cpu"
		f.Text = fmt.Sprintf("%s ran on a CPU %s %s in %s", threadsWords(f.Threads), pct(f.Share), of(d.System), a)
		out = append(out, f)
	}
	return out
}

// queueFindings: waiting for a CPU, and for the cgroup's CPU quota.
func queueFindings(r *Report, wall float64) []Finding {
	var out []Finding
	add := func(kind string, ns uint64, words string) {
		if ns == 0 {
			return
		}
		var ts []jsonout.Task
		var stacks []stackNS
		for _, t := range r.Threads {
			n := t.RunnableNS
			if kind == "throttled" {
				n = t.ThrottledNS
			}
			if n > 0 {
				ts = append(ts, t.Task)
				stacks = append(stacks, stackNS{comm: t.Comm, ns: n})
			}
		}
		f := Finding{Kind: kind, Share: float64(ns) / wall, DurationNS: jsonout.Nanos(ns), Threads: ts, Root: "cpu", stacks: stacks}
		f.Text = fmt.Sprintf("%s waited %s %s %s", threadsWords(ts), pct(f.Share), of(r.system), words)
		out = append(out, f)
	}
	add("runqueue", r.Budget.RunnableNS, "for a CPU, runnable (other work had the CPUs)")
	add("throttled", r.Budget.ThrottledNS, "throttled: its cgroup had used its CPU quota (cpu.max)")
	return out
}

// Vocabulary is what why's JSON keys mean beyond the shared vocabulary
// (internal/model/jsonout); docs/why.md says the same.
var Vocabulary = map[string]string{
	"budget":               "why: the target threads' wall time, summed and split",
	"wall_ns":              "wall-clock time a thread existed while traced (summed over threads in budget)",
	"on_cpu_ns":            "time on a CPU",
	"irq_ns":               "time on a CPU in interrupts, softirqs (a loopback send's delivery) or stolen by the hypervisor: in the thread's slices, but charged to no task by the kernel",
	"runnable_ns":          "time runnable, waiting for a CPU",
	"throttled_ns":         "time runnable while the cgroup had used its CPU quota",
	"blocked_by_reason_ns": "blocked_ns split by reason: disk, net, lock, sleep, fault, pipe, other",
	"exited":               "the thread exited while traced",
	"findings":             "why: what takes the target's time, by share, largest first",
	"share":                "a fraction (0–1): of the target threads' wall time for a finding, of the finding's time for a chain link",
	"call":                 "the call a thread blocked in, as its innermost user frame names it",
	"chain":                "who ended the waits, then who ended that thread's own wait, and so on",
	"root":                 "where a chain ends: cpu, sleep, device, peer, cycle, unknown",
	"latency":              "a histogram of wait lengths in log2 buckets",
	"low_ns":               "a bucket's lower bound",
	"high_ns":              "a bucket's upper bound (excluded)",
	"wait_frames":          "a waker's stack in its own last block before the wake",
	"wait_ns":              "the mean length of that block",
	"interrupt":            "the wake came from an interrupt: timer, device, network, irq",
	"cgroup":               "the target's CPU cgroup: path, and its throttling while traced from cpu.stat",
	"nr_periods":           "CFS bandwidth periods that elapsed (cpu.stat)",
	"nr_throttled":         "periods in which the cgroup was throttled (cpu.stat)",
	"lost_threads":         "threads not followed because the thread table was full",
	"processes":            "why -a: every process's threads' wall time, summed and split, the busiest first",
	"nr_threads":           "why -a: how many of a process's threads were traced",
	"timeline":             "why --web: each shown thread's state over the window, in slices",
	"edges_ns":             "the timeline's slice edges, ns since the window opened",
}
