package profile

import (
	"fmt"

	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/sonde-dev/sonde/internal/bpfmaps"
	"github.com/sonde-dev/sonde/internal/perf"
)

// Hit is one sampled leaf address with its count.
type Hit struct {
	Pid    uint32
	Comm   string
	Addr   uint64
	Kernel bool
	Count  uint64
}

// Live samples continuously; Take returns and clears the counts (for top).
type Live struct {
	objs profileObjects
	fds  []int
}

// StartLive attaches the sampling program system-wide at hz.
func StartLive(hz uint64) (*Live, error) {
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("raising the locked-memory limit for BPF maps: %w", err)
	}
	spec, err := loadProfile()
	if err != nil {
		return nil, err
	}
	for n, v := range map[string]any{"user_stacks": true, "kernel_stacks": true} {
		if err := spec.Variables[n].Set(v); err != nil {
			return nil, err
		}
	}
	l := &Live{}
	if err := spec.LoadAndAssign(&l.objs, nil); err != nil {
		return nil, loadError(err)
	}
	cpus, err := perf.OnlineCPUs()
	if err != nil {
		l.Close()
		return nil, err
	}
	ev, _ := perf.ParseEvent("cpu-clock")
	for _, c := range cpus {
		attr := perf.NewAttr(perf.AttrOptions{Event: ev, Freq: hz})
		attr.Bits &^= unix.PerfBitWatermark
		attr.Wakeup = 0
		fd, err := perf.Open(&attr, -1, c, -1, ev)
		if err != nil {
			l.Close()
			return nil, err
		}
		l.fds = append(l.fds, fd)
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_BPF, l.objs.DoSample.FD()); err != nil {
			l.Close()
			return nil, fmt.Errorf("attaching the BPF program to cpu %d: %w", c, err)
		}
		perf.Enable(fd)
	}
	return l, nil
}

// Take returns the leaf addresses sampled since the last call and clears
// the maps.
func (l *Live) Take() ([]Hit, error) {
	var key profileProfileKey
	var count uint64
	var keys []profileProfileKey
	var out []Hit
	stack := make([]uint64, perf.MaxStack)
	it := l.objs.Counts.Iterate()
	for it.Next(&key, &count) {
		keys = append(keys, key)
		h := Hit{Pid: key.Pid, Comm: bpfmaps.CString(key.Comm[:]), Count: count}
		if k := bpfmaps.Stack(l.objs.Stacks, key.KernelStack, stack); len(k) > 0 {
			h.Addr, h.Kernel = k[0], true
		} else if u := bpfmaps.Stack(l.objs.Stacks, key.UserStack, stack); len(u) > 0 {
			h.Addr = u[0]
		} else {
			continue
		}
		out = append(out, h)
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("reading samples: %w", err)
	}
	for _, k := range keys {
		l.objs.Counts.Delete(k)
		if k.UserStack >= 0 {
			l.objs.Stacks.Delete(uint32(k.UserStack))
		}
		if k.KernelStack >= 0 {
			l.objs.Stacks.Delete(uint32(k.KernelStack))
		}
	}
	return out, nil
}

// Close stops sampling.
func (l *Live) Close() {
	for _, fd := range l.fds {
		unix.Close(fd)
	}
	l.objs.Close()
}
