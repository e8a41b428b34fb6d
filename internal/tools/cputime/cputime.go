// Package cputime accounts exact on-CPU time per task from sched_switch,
// summed per CPU in the kernel (seed 002). User space reads the totals once
// per interval, adds the slices still running, and turns them into deltas.
// An optional sampler (perf cpu-clock at F Hz) runs beside it to show how
// wrong a sampled estimate can be.
package cputime

import (
	"fmt"
	"os"
	"sort"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/sonde-dev/sonde/internal/collect/bpfmaps"
	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/collect/perf"
	"github.com/sonde-dev/sonde/internal/collect/procfs"
)

// Task is one thread's on-CPU time, per CPU, in ns.
type Task struct {
	Tid, Pid uint32
	Comm     string
	PerCPU   []uint64
}

// Total sums the CPUs.
func (t *Task) Total() uint64 {
	var s uint64
	for _, v := range t.PerCPU {
		s += v
	}
	return s
}

// Snapshot is the cumulative state at one instant (CLOCK_MONOTONIC ns).
type Snapshot struct {
	At    uint64
	Tasks map[uint32]*Task
}

// Tracer holds the loaded program.
type Tracer struct {
	sess   *bpfskel.Session
	maps   cputimeMaps
	ncpu   int
	seeded bool
	Attach string // "tp_btf" or "raw_tp"
}

// Start loads and attaches the accounting program.
func Start() (*Tracer, error) {
	n, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, fmt.Errorf("counting possible CPUs: %w", err)
	}
	t := &Tracer{ncpu: n}
	t.sess, err = bpfskel.Open(bpfskel.Tool{
		Name: "CPU time accounting", Spec: loadCputime, Maps: &t.maps,
		Hooks: []bpfskel.Hook{bpfskel.BTFTracepoint("sched_switch", cputimeProgTpBtfSwitch, cputimeProgRawSwitch)},
	})
	if err != nil {
		return nil, err
	}
	t.Attach = t.sess.Mode()
	return t, nil
}

// Close detaches and frees everything.
func (t *Tracer) Close() { t.sess.Close() }

// CPUs is the number of possible CPUs (the per-CPU value count).
func (t *Tracer) CPUs() int { return t.ncpu }

// Now is CLOCK_MONOTONIC in ns, the clock of bpf_ktime_get_ns.
func Now() uint64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

// Snapshot reads the totals and adds each CPU's running slice. The order
// matters: totals first, then who is running since when, then the time. A
// switch in between then shows up in the next snapshot's totals instead of
// being counted twice (the running slice of the old task plus its stored
// slice).
func (t *Tracer) Snapshot() (Snapshot, error) {
	if !t.seeded {
		t.seeded = true
		t.seed()
	}
	s := Snapshot{Tasks: map[uint32]*Task{}}
	var tid uint32
	var vals []cputimeCputimeVal
	it := t.maps.Times.Iterate()
	for it.Next(&tid, &vals) {
		task := &Task{Tid: tid, PerCPU: make([]uint64, t.ncpu)}
		for cpu, v := range vals {
			task.PerCPU[cpu] = v.Ns
			if v.Pid != 0 && task.Pid == 0 {
				task.Pid = v.Pid
			}
			if c := bpfmaps.CString(v.Comm[:]); c != "" && task.Comm == "" {
				task.Pid, task.Comm = v.Pid, c
			}
		}
		if task.Comm == "" { // only charged for a switch the kernel did not report
			task.Comm = threadComm(task.Pid, tid)
		}
		s.Tasks[tid] = task
	}
	if err := it.Err(); err != nil {
		return s, fmt.Errorf("reading task times: %w", err)
	}
	var curr []cputimeCputimeCurr
	if err := t.maps.Curr.Lookup(uint32(0), &curr); err != nil {
		return s, fmt.Errorf("reading running tasks: %w", err)
	}
	s.At = Now()
	for cpu, c := range curr {
		if c.Seen == 0 || c.Tid == 0 {
			continue
		}
		// The running slice: the task's runtime now (the kernel's own
		// counter) less its runtime when it came in.
		now, err := procfs.OnCPU(int(c.Pid), int(c.Tid))
		if err != nil || uint64(now) <= c.Base {
			continue // gone: its last switch-out charged it
		}
		task := s.Tasks[c.Tid]
		if task == nil {
			task = &Task{Tid: c.Tid, Pid: c.Pid, Comm: threadComm(c.Pid, c.Tid), PerCPU: make([]uint64, t.ncpu)}
			s.Tasks[c.Tid] = task
		}
		task.PerCPU[cpu] += uint64(now) - c.Base
	}
	t.settleRepairs()
	return s, nil
}

// settleRepairs clears the program's repairs_pending flag once no repair
// is left, so its switches stop looking for one. The flag is cleared
// before the map is looked at: a repair added in between sets it again.
func (t *Tracer) settleRepairs() {
	v := t.sess.Variable(cputimeVarRepairsPending)
	var pending uint32
	if v == nil || v.Get(&pending) != nil || pending == 0 {
		return
	}
	v.Set(uint32(0))
	var k uint32
	if err := t.maps.Repair.NextKey(nil, &k); err == nil {
		v.Set(uint32(1))
	}
}

// seed gives every thread its runtime now (the kernel's own counter,
// /proc/TID/schedstat), just before the first snapshot. The program reads
// it only at the first switch it sees on a CPU: that CPU's outgoing task
// came in before tracing began, and without a seed nothing of that slice
// after the first snapshot would be counted (up to a scheduler slice of a
// CPU hog: 65 ms of 5 s here). A CPU whose first switch came before the
// seed charged nothing of that slice, which is before the first snapshot.
func (t *Tracer) seed() {
	for tid, d := range procfs.ThreadsOnCPU() {
		t.maps.Seed.Update(uint32(tid), uint64(d), ebpf.UpdateNoExist)
	}
}

// Prune forgets tasks that have exited and did not run since prev, so the
// map holds live tasks; exited tasks are reported in the interval they ran.
func (t *Tracer) Prune(prev, cur Snapshot) {
	for tid, task := range cur.Tasks {
		if tid == 0 {
			continue
		}
		if p := prev.Tasks[tid]; p != nil && p.Total() == task.Total() {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", tid)); err != nil { // a stat, not a read: every idle task, every interval
				t.maps.Times.Delete(tid)
				t.maps.Seed.Delete(tid)
				t.maps.Repair.Delete(tid)
			}
		}
	}
}

// counts are the program's counters (each tag names its member of enum
// cputime_counter, bpfskel.Counters).
type counts struct {
	Lost   uint64 `counter:"CPUTIME_LOST_FULL"`
	Unseen uint64 `counter:"CPUTIME_UNSEEN"`
}

// counts reads the counters; zero when they cannot be read (a test checks
// the tags against the object).
func (t *Tracer) counts() counts {
	var c counts
	t.maps.Lost.Read(&c)
	return c
}

// Lost is how many slices were dropped because the map was full.
func (t *Tracer) Lost() uint64 { return t.counts().Lost }

// Unseen is how many switches the kernel did not report to the program
// (their slices went to the task that switched out).
func (t *Tracer) Unseen() uint64 { return t.counts().Unseen }

// Usage is one task's time in an interval.
type Usage struct {
	Tid    uint32   `json:"tid"`
	Pid    uint32   `json:"pid"`
	Comm   string   `json:"comm"`
	NS     uint64   `json:"ns"`
	PerCPU []uint64 `json:"per_cpu_ns,omitempty"`
	// Sampled estimate, with --compare-sampled.
	SampledNS *uint64 `json:"sampled_ns,omitempty"`
}

// Interval is the difference of two snapshots.
type Interval struct {
	StartNS, EndNS uint64
	Tasks          []Usage  // busy tasks, most time first (idle excluded)
	IdleNS         []uint64 // per CPU
	BusyNS         []uint64 // per CPU
}

// Diff computes cur − prev.
func Diff(prev, cur Snapshot, ncpu int) Interval {
	iv := Interval{StartNS: prev.At, EndNS: cur.At, IdleNS: make([]uint64, ncpu), BusyNS: make([]uint64, ncpu)}
	defer iv.idle()
	for tid, t := range cur.Tasks {
		p := prev.Tasks[tid]
		u := Usage{Tid: tid, Pid: t.Pid, Comm: t.Comm, PerCPU: make([]uint64, ncpu)}
		for cpu := range t.PerCPU {
			v := t.PerCPU[cpu]
			if p != nil && cpu < len(p.PerCPU) {
				if p.PerCPU[cpu] > v {
					v = 0 // pruned and recreated: cannot go back
				} else {
					v -= p.PerCPU[cpu]
				}
			}
			u.PerCPU[cpu] = v
			u.NS += v
			iv.BusyNS[cpu] += v
		}
		if tid != 0 && u.NS > 0 {
			iv.Tasks = append(iv.Tasks, u)
		}
	}
	sort.Slice(iv.Tasks, func(i, j int) bool {
		if iv.Tasks[i].NS != iv.Tasks[j].NS {
			return iv.Tasks[i].NS > iv.Tasks[j].NS
		}
		return iv.Tasks[i].Tid < iv.Tasks[j].Tid
	})
	return iv
}

// idle sets each CPU's idle time: the interval less its tasks' time (the
// program does not clock the idle task).
func (iv *Interval) idle() {
	span := iv.EndNS - iv.StartNS
	for cpu, b := range iv.BusyNS {
		if b < span {
			iv.IdleNS[cpu] = span - b
		}
	}
}

// threadComm names a task that has not switched out yet.
func threadComm(pid, tid uint32) string {
	if tid == 0 {
		return "swapper"
	}
	return procfs.Comm(int(pid), int(tid))
}

// Sampler counts cpu-clock samples per thread, the way a sampling profiler
// would estimate CPU time.
type Sampler struct {
	rings  []*perf.Ring
	Period uint64 // ns per sample
	counts map[uint32]uint64
	sample perf.Sample
}

// NewSampler opens a cpu-clock event per CPU at hz.
func NewSampler(hz uint64) (*Sampler, error) {
	cpus, err := perf.OnlineCPUs()
	if err != nil {
		return nil, err
	}
	ev, _ := perf.ParseEvent("cpu-clock")
	s := &Sampler{Period: 1_000_000_000 / hz, counts: map[uint32]uint64{}}
	for _, c := range cpus {
		attr := perf.NewAttr(perf.AttrOptions{Event: ev, Period: s.Period})
		fd, err := perf.Open(&attr, -1, c, -1, ev)
		if err != nil {
			s.Close()
			return nil, err
		}
		r, err := perf.NewRing(fd, c, 16)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.rings = append(s.rings, r)
	}
	return s, nil
}

// Take returns the samples per thread since the last call.
func (s *Sampler) Take() map[uint32]uint64 {
	for _, r := range s.rings {
		r.Read(func(typ uint32, misc uint16, body []byte) {
			if typ == perf.RecordSample && perf.ParseSample(body, false, &s.sample) == nil {
				s.counts[s.sample.Tid]++
			}
		})
	}
	out := s.counts
	s.counts = map[uint32]uint64{}
	return out
}

// Close releases the events.
func (s *Sampler) Close() {
	for _, r := range s.rings {
		r.Close()
	}
}
