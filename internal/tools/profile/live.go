package profile

import (
	"fmt"

	"github.com/sonde-dev/sonde/internal/collect/bpfmaps"
	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/collect/perf"
	"github.com/sonde-dev/sonde/internal/collect/unwind"
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
	sess *bpfskel.Session
	ld   *unwind.Loader
	maps profileMaps
}

// StartLive attaches the sampling program system-wide at hz.
func StartLive(hz uint64) (*Live, error) {
	l := &Live{}
	var err error
	if l.sess, l.ld, err = open(&l.maps, sampler{hz: hz, leaf: true}, map[string]any{profileVarUserStacks: true, profileVarKernelStacks: true}); err != nil {
		return nil, err
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
	var ubuf [unwind.MaxFrames]uint64
	it := l.maps.Counts.Iterate()
	for it.Next(&key, &count) {
		keys = append(keys, key)
		h := Hit{Pid: key.Pid, Comm: bpfmaps.CString(key.Comm[:]), Count: count}
		if k := bpfmaps.HashedStack(l.maps.Kstacks, key.KernelStack, stack); len(k) > 0 {
			h.Addr, h.Kernel = k[0], true
		} else if u, ok := l.ld.Stack(key.UserStack, &ubuf); ok && len(u.PCs) > 0 {
			h.Addr = u.PCs[0]
		} else {
			continue
		}
		out = append(out, h)
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("reading samples: %w", err)
	}
	for _, k := range keys {
		l.maps.Counts.Delete(k)
		if k.UserStack != 0 {
			l.maps.UnwindStacks.Delete(k.UserStack)
		}
		if k.KernelStack != 0 {
			l.maps.Kstacks.Delete(k.KernelStack)
		}
	}
	return out, nil
}

// Close stops sampling.
func (l *Live) Close() {
	l.sess.Detach()
	l.ld.Stop()
	l.sess.Close()
}
