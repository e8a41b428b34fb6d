// Package profile samples on-CPU stacks with a BPF perf_event program that
// counts (process, user stack, kernel stack) in the kernel: unlike record,
// no sample crosses to user space until the end, so the cost stays flat at
// high rates and on busy systems. The counts become a model.Profile that
// every view (report, flame graph, pprof) reads.
package profile

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/sonde-dev/sonde/internal/bpfmaps"
	"github.com/sonde-dev/sonde/internal/builder"
	"github.com/sonde-dev/sonde/internal/host"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/perf"
	"github.com/sonde-dev/sonde/internal/runctl"
)

// Options configure one profile run.
type Options struct {
	Freq      uint64
	Pid       int // 0: system-wide
	PerThread bool
	User      bool
	Kernel    bool
	Idle      bool
	CPUs      []int
	Duration  time.Duration
	Version   string
	// Interval, when set, ends a report every Interval: OnInterval gets
	// that interval's stacks and the counts start over.
	Interval   time.Duration
	OnInterval func(*Result)
}

// Errors the BPF program counted; non-zero values mean incomplete data.
type Errors struct {
	UserStack   uint64 `json:"user_stack_failures"`
	KernelStack uint64 `json:"kernel_stack_failures"`
	MapFull     uint64 `json:"samples_lost_map_full"`
}

// Result of a run.
type Result struct {
	Profile *model.Profile
	Errors  Errors
}

// Run loads the program, samples until the duration passes, ctx ends or
// SIGINT/SIGTERM arrives, then reads the counts.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Freq == 0 {
		o.Freq = 49
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("raising the locked-memory limit for BPF maps: %w", err)
	}
	spec, err := loadProfile()
	if err != nil {
		return nil, err
	}
	set := map[string]any{
		"target_pid": uint32(o.Pid), "per_thread": o.PerThread,
		"user_stacks": o.User, "kernel_stacks": o.Kernel, "include_idle": o.Idle,
	}
	for name, v := range set {
		if err := spec.Variables[name].Set(v); err != nil {
			return nil, fmt.Errorf("setting %s: %w", name, err)
		}
	}
	var objs profileObjects
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		return nil, loadError(err)
	}
	defer objs.Close()

	cpus := o.CPUs
	if cpus == nil {
		if cpus, err = perf.OnlineCPUs(); err != nil {
			return nil, err
		}
	}
	ev, _ := perf.ParseEvent("cpu-clock")
	attr := perf.NewAttr(perf.AttrOptions{Event: ev, Freq: o.Freq, Disabled: true})
	attr.Bits &^= unix.PerfBitWatermark // no ring: the program consumes samples
	attr.Wakeup = 0
	var fds []int
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for _, c := range cpus {
		a := attr
		fd, err := perf.Open(&a, -1, c, -1, ev)
		if err != nil {
			return nil, err
		}
		fds = append(fds, fd)
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_BPF, objs.DoSample.FD()); err != nil {
			return nil, fmt.Errorf("attaching the BPF program to cpu %d: %w", c, err)
		}
	}
	start := time.Now()
	for _, fd := range fds {
		if err := perf.Enable(fd); err != nil {
			return nil, fmt.Errorf("enabling sampling: %w", err)
		}
	}
	last := start
	runctl.Until(ctx, o.Duration, o.Interval, nil, func() {
		now := time.Now()
		r, err := collect(&objs, o, now.Sub(last), last)
		if err != nil {
			return
		}
		clearCounts(&objs)
		last = now
		if o.OnInterval != nil {
			o.OnInterval(r)
		}
	})
	for _, fd := range fds {
		perf.Disable(fd)
	}
	return collect(&objs, o, time.Since(last), last)
}

// clearCounts starts the counts over (stack ids may still be in use by
// later samples, so the stack map is kept).
func clearCounts(objs *profileObjects) {
	var keys []profileProfileKey
	var k profileProfileKey
	var v uint64
	it := objs.Counts.Iterate()
	for it.Next(&k, &v) {
		keys = append(keys, k)
	}
	for _, k := range keys {
		objs.Counts.Delete(k)
	}
}

func collect(objs *profileObjects, o Options, elapsed time.Duration, start time.Time) (*Result, error) {
	b := builder.New()
	res := &Result{}
	period := uint64(time.Second) / o.Freq
	var key profileProfileKey
	var count uint64
	kbuf, ubuf := make([]uint64, perf.MaxStack), make([]uint64, perf.MaxStack)
	it := objs.Counts.Iterate()
	for it.Next(&key, &count) {
		tid := key.Tid
		if !o.PerThread {
			tid = key.Pid
		}
		locs := b.StackLocs(key.Pid, bpfmaps.Stack(objs.Stacks, key.KernelStack, kbuf), bpfmaps.Stack(objs.Stacks, key.UserStack, ubuf))
		if len(locs) == 0 {
			continue
		}
		b.SetComm(tid, bpfmaps.CString(key.Comm[:]))
		// The kernel counted them: one stack, count samples.
		b.SampleLocsN(key.Pid, tid, locs, period, count)
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("reading stack counts: %w", err)
	}
	res.Errors.UserStack = bpfmaps.SumPerCPU(objs.Errors, 0)
	res.Errors.KernelStack = bpfmaps.SumPerCPU(objs.Errors, 1)
	res.Errors.MapFull = bpfmaps.SumPerCPU(objs.Errors, 2)
	meta := model.Meta{
		Event: "cpu-clock", Freq: o.Freq, Callchain: true, Target: "system-wide",
		Arch: runtime.GOARCH, SondeVersion: o.Version, StartUnixNS: start.UnixNano(),
		DurationNS: uint64(elapsed.Nanoseconds()), Lost: res.Errors.MapFull, Unwinder: "bpf-fp",
	}
	if o.Pid != 0 {
		meta.Target = fmt.Sprintf("pid %d", o.Pid)
	}
	host.Fill(&meta)
	if res.Errors.UserStack+res.Errors.KernelStack > 0 {
		meta.Warnings = append(meta.Warnings, fmt.Sprintf("stack walks failed: %d user, %d kernel (stack map full or no frame pointers)", res.Errors.UserStack, res.Errors.KernelStack))
	}
	res.Profile = b.Finish(meta)
	return res, nil
}

func loadError(err error) error {
	var ve *ebpf.VerifierError
	switch {
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		return fmt.Errorf("loading the BPF profiler: permission denied: need CAP_BPF and CAP_PERFMON (or root), and kernel.unprivileged_bpf_disabled does not apply to root: %w", err)
	case errors.As(err, &ve):
		return fmt.Errorf("the kernel's verifier rejected the BPF profiler (kernel too old?): %w", err)
	}
	return fmt.Errorf("loading the BPF profiler: %w", err)
}
