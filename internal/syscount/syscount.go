// Package syscount counts system calls in the kernel (raw_syscalls
// tracepoints): per syscall or per process and syscall, with total and
// maximum latency and error returns.
package syscount

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"syscall"
	"time"

	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"

	"github.com/sonde-dev/sonde/internal/bpfmaps"
	"github.com/sonde-dev/sonde/internal/runctl"
	"github.com/sonde-dev/sonde/internal/syscalls"
)

// Options configure a run.
type Options struct {
	Pid        int
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

// Run counts until the command exits, the duration passes or a signal.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("raising the locked-memory limit for BPF maps: %w", err)
	}
	var child *runctl.Child
	var err error
	if len(o.Command) > 0 {
		// The command is held before its exec, so its pid can be the filter.
		if child, err = runctl.StartChild(o.Command); err != nil {
			return nil, err
		}
		o.Pid = child.Cmd.Process.Pid
	}
	fail := func(err error) (*Result, error) {
		if child != nil {
			child.Abort()
		}
		return nil, err
	}
	spec, err := loadSyscount()
	if err != nil {
		return fail(err)
	}
	for n, v := range map[string]any{"target_pid": uint32(o.Pid), "per_process": o.PerProcess, "latency": o.Latency} {
		if err := spec.Variables[n].Set(v); err != nil {
			return fail(fmt.Errorf("setting %s: %w", n, err))
		}
	}
	var objs syscountObjects
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		return fail(fmt.Errorf("loading the syscall counter: %w", err))
	}
	defer objs.Close()
	l1, err := link.Tracepoint("raw_syscalls", "sys_enter", objs.SysEnter, nil)
	if err != nil {
		return fail(fmt.Errorf("attaching to raw_syscalls:sys_enter: %w", err))
	}
	defer l1.Close()
	l2, err := link.Tracepoint("raw_syscalls", "sys_exit", objs.SysExit, nil)
	if err != nil {
		return fail(fmt.Errorf("attaching to raw_syscalls:sys_exit: %w", err))
	}
	defer l2.Close()
	res := &Result{}
	start := time.Now()
	done := make(chan struct{})
	var waitErr error
	if child != nil {
		if err := child.Go(); err != nil {
			return fail(err)
		}
		go func() { waitErr = child.Cmd.Wait(); close(done) }()
	}
	var doneCh <-chan struct{}
	if child != nil {
		doneCh = done
	}
	if runctl.Until(ctx, o.Duration, 0, doneCh, nil) == runctl.Deadline && child != nil {
		child.Cmd.Process.Signal(syscall.SIGTERM)
	}
	if child != nil {
		<-done
		res.ExitCode = runctl.ExitCode(waitErr, child.Cmd.ProcessState)
	}
	l1.Close()
	l2.Close()
	res.Elapsed = time.Since(start)
	var k syscountSyscountKey
	var v syscountSyscountVal
	it := objs.Counts.Iterate()
	for it.Next(&k, &v) {
		r := Row{Pid: k.Pid, Nr: k.Nr, Name: syscalls.Name(runtime.GOARCH, int(k.Nr)), Count: v.Count, TotalNS: v.TotalNs, MaxNS: v.MaxNs, Errors: v.Errors, Comm: bpfmaps.CString(v.Comm[:])}
		if o.Latency && v.Count > 0 {
			r.AvgNS = float64(v.TotalNs) / float64(v.Count)
		}
		res.Rows = append(res.Rows, r)
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("reading counts: %w", err)
	}
	res.Lost = bpfmaps.SumPerCPU(objs.Lost, 0)
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
