// Package syscount counts system calls in the kernel (raw_syscalls
// tracepoints): per syscall or per process and syscall, with total and
// maximum latency and error returns.
package syscount

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"time"

	"github.com/sonde-dev/sonde/internal/collect/bpfmaps"
	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/collect/cgroup"
	"github.com/sonde-dev/sonde/internal/collect/runctl"
	"github.com/sonde-dev/sonde/internal/collect/syscalls"
)

// Options configure a run.
type Options struct {
	Pid        int
	Cgroup     *cgroup.Target // only its tasks (nil: every task)
	Command    []string
	PerProcess bool
	Latency    bool
	Duration   time.Duration
}

// Row is one syscall (per process with PerProcess).
type Row struct {
	Pid     uint32  `json:"pid,omitempty"`
	Comm    string  `json:"comm,omitempty"`
	Nr      uint32  `json:"nr"`
	Name    string  `json:"syscall"`
	Count   uint64  `json:"count"`
	TotalNS uint64  `json:"total_ns,omitempty"`
	MaxNS   uint64  `json:"max_ns,omitempty"`
	AvgNS   float64 `json:"avg_ns,omitempty"`
	Errors  uint64  `json:"errors"`
}

// Result of a run.
type Result struct {
	Rows     []Row
	Lost     uint64
	Elapsed  time.Duration
	ExitCode int
}

// hooks are the tracepoints a run needs: with latency every syscall's entry
// and exit; without, only exits (one program run per syscall) and the
// entries of the two syscalls that never return.
func hooks(latency bool) []bpfskel.Hook {
	if latency {
		return []bpfskel.Hook{
			bpfskel.TracepointHook("raw_syscalls", "sys_enter", syscountProgSysEnter),
			bpfskel.TracepointHook("raw_syscalls", "sys_exit", syscountProgSysExit),
		}
	}
	return []bpfskel.Hook{
		bpfskel.TracepointHook("raw_syscalls", "sys_exit", syscountProgSysExit),
		bpfskel.TracepointHook("syscalls", "sys_enter_exit", syscountProgNoreturnEnter),
		bpfskel.TracepointHook("syscalls", "sys_enter_exit_group", syscountProgNoreturnEnter),
	}
}

// Run counts until the command exits, the duration passes or a signal.
func Run(ctx context.Context, o Options) (*Result, error) {
	var maps syscountMaps
	s, err := bpfskel.Open(bpfskel.Tool{
		Name: "syscall counter", Spec: loadSyscount, Maps: &maps,
		Consts: map[string]any{syscountVarTargetPid: uint32(o.Pid), syscountVarPerProcess: o.PerProcess, syscountVarLatency: o.Latency}, Cgroup: o.Cgroup,
		// The command is held before its exec, so its pid can be the filter.
		Command: o.Command, PidConst: syscountVarTargetPid, Gate: syscountVarArmed,
		Hooks: hooks(o.Latency),
	})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	run, err := s.Run(ctx, runctl.Options{Duration: o.Duration})
	if err != nil {
		return nil, err
	}
	res := &Result{Elapsed: run.Elapsed, ExitCode: run.ExitCode}
	var k syscountSyscountKey
	var v syscountSyscountVal
	add := func(k syscountSyscountKey, v syscountSyscountVal) {
		r := Row{Pid: k.Pid, Nr: k.Nr, Name: syscalls.Name(runtime.GOARCH, int(k.Nr)), Count: v.Count, TotalNS: v.TotalNs, MaxNS: v.MaxNs, Errors: v.Errors, Comm: bpfmaps.CString(v.Comm[:])}
		if o.Latency && v.Count > 0 {
			r.AvgNS = float64(v.TotalNs) / float64(v.Count)
		}
		res.Rows = append(res.Rows, r)
	}
	it := maps.Counts.Iterate()
	for it.Next(&k, &v) {
		add(k, v)
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("reading counts: %w", err)
	}
	// Per-syscall counts kept per CPU (not split by process).
	var nr uint32
	var cpus []syscountSyscountVal
	pit := maps.ByNr.Iterate()
	for pit.Next(&nr, &cpus) {
		var sum syscountSyscountVal
		for _, c := range cpus {
			sum.Count += c.Count
			sum.Errors += c.Errors
			sum.TotalNs += c.TotalNs
			sum.MaxNs = max(sum.MaxNs, c.MaxNs)
		}
		if sum.Count > 0 || sum.Errors > 0 {
			add(syscountSyscountKey{Nr: nr}, sum)
		}
	}
	if err := pit.Err(); err != nil {
		return nil, fmt.Errorf("reading per-CPU counts: %w", err)
	}
	res.Lost = bpfmaps.SumPerCPU(maps.Lost, 0)
	sort.Slice(res.Rows, func(i, j int) bool {
		if o.Latency && res.Rows[i].TotalNS != res.Rows[j].TotalNS {
			return res.Rows[i].TotalNS > res.Rows[j].TotalNS
		}
		if res.Rows[i].Count != res.Rows[j].Count {
			return res.Rows[i].Count > res.Rows[j].Count
		}
		return res.Rows[i].Nr < res.Rows[j].Nr
	})
	return res, nil
}
