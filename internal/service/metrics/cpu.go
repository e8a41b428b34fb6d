package metrics

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sonde-dev/sonde/internal/collect/cgroup"
	"github.com/sonde-dev/sonde/internal/tools/cputime"
)

// maxLabels bounds the comm and cgroup series kept since the agent started;
// time of names past it is added to "(other)", so memory stays bounded
// whatever runs on the machine.
const maxLabels = 5000

// cpuCollector turns cputime's exact per-task totals into counters at
// each scrape.
type cpuCollector struct {
	tr       *cputime.Tracer
	mu       sync.Mutex
	prev     cputime.Snapshot
	byComm   map[string]uint64 // ns on CPU since the agent started
	byCgroup map[string]uint64 // ns on CPU since the agent started
	cgroups  map[uint32]string // pid → cgroup, for the pids last seen
	last     map[uint32]uint64 // tid → ns on CPU counted so far
	comms    map[uint32]string // tid → its name when it last ran

	task, comm, cgroup, lost, unseen *prometheus.Desc
}

func newCPUCollector(tr *cputime.Tracer) *cpuCollector {
	return &cpuCollector{tr: tr, byComm: map[string]uint64{}, byCgroup: map[string]uint64{}, cgroups: map[uint32]string{}, last: map[uint32]uint64{}, comms: map[uint32]string{},
		task: prometheus.NewDesc("sonde_task_cpu_seconds_total",
			"Exact on-CPU time of a live task (thread) since the agent started, summed from sched_switch in the kernel.",
			[]string{"pid", "tid", "comm"}, nil),
		comm: prometheus.NewDesc("sonde_comm_cpu_seconds_total",
			"Exact on-CPU time of all tasks with this name since the agent started, exited ones included.", []string{"comm"}, nil),
		cgroup: prometheus.NewDesc("sonde_cgroup_cpu_seconds_total",
			"Exact on-CPU time of the tasks in this cgroup (v2 path) since the agent started, exited ones included; container_id and pod_uid are read from the path (docker, containerd, cri-o, podman, Kubernetes).", []string{"cgroup", "container_id", "pod_uid"}, nil),
		lost: prometheus.NewDesc("sonde_cputime_lost_slices_total",
			"Time slices the kernel could not account because the task map was full.", nil, nil),
		unseen: prometheus.NewDesc("sonde_cputime_unseen_switches_total",
			"Context switches not reported to the program; their slices went to the task switched out.", nil, nil),
	}
}

func (c *cpuCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.task, c.comm, c.cgroup, c.lost, c.unseen} {
		ch <- d
	}
}

func (c *cpuCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur, err := c.tr.Snapshot()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.task, err)
		return
	}
	seen := map[uint32]string{}
	last := make(map[uint32]uint64, len(cur.Tasks))
	comms := make(map[uint32]string, len(cur.Tasks))
	for tid, t := range cur.Tasks {
		if tid == 0 { // the idle tasks
			continue
		}
		// Growth of the task's total since the last scrape. The total read
		// then included the running slice by the clock, which the kernel's
		// accounting at the next switch may put a hair lower: never count
		// that back (the per-CPU split would lose whole slices when a task
		// migrates, so totals are compared, not CPUs).
		tot, before := t.Total(), c.last[tid]
		last[tid] = max(tot, before)
		// The kernel side keeps the name a task had on each CPU when it
		// last left it, which for a task that exec'd can be the name from
		// before: tasks that ran are named from /proc now.
		comm, ok := c.comms[tid]
		if tot > before || !ok {
			if comm = procComm(t.Pid, tid); comm == "" {
				comm = t.Comm
			}
		}
		comms[tid] = comm
		if tot > before {
			cg, ok := c.cgroups[t.Pid]
			if !ok {
				cg, _ = cgroup.PathOf(int(t.Pid))
			}
			seen[t.Pid] = cg
			addBounded(c.byComm, comm, tot-before)
			addBounded(c.byCgroup, cg, tot-before)
		} else if cg, ok := c.cgroups[t.Pid]; ok {
			seen[t.Pid] = cg
		}
		ch <- prometheus.MustNewConstMetric(c.task, prometheus.CounterValue, float64(tot)/1e9,
			strconv.Itoa(int(t.Pid)), strconv.Itoa(int(tid)), comm)
	}
	for k, v := range c.byComm {
		ch <- prometheus.MustNewConstMetric(c.comm, prometheus.CounterValue, float64(v)/1e9, k)
	}
	for k, v := range c.byCgroup {
		ct := cgroup.ContainerOf(k)
		ch <- prometheus.MustNewConstMetric(c.cgroup, prometheus.CounterValue, float64(v)/1e9, k, ct.ID, ct.PodUID)
	}
	ch <- prometheus.MustNewConstMetric(c.lost, prometheus.CounterValue, float64(c.tr.Lost()))
	ch <- prometheus.MustNewConstMetric(c.unseen, prometheus.CounterValue, float64(c.tr.Unseen()))
	c.tr.Prune(c.prev, cur)
	c.prev, c.cgroups, c.last, c.comms = cur, seen, last, comms
}

func addBounded(m map[string]uint64, k string, v uint64) {
	if _, ok := m[k]; !ok && len(m) >= maxLabels {
		k = "(other)"
	}
	m[k] += v
}

// procComm is a thread's name now, "" when it is gone.
func procComm(pid, tid uint32) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/comm", pid, tid))
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(b), "\n")
}
