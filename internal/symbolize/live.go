package symbolize

import (
	"fmt"
	"os"
	"sort"

	"github.com/sonde-dev/sonde/internal/collect/procfs"
	"github.com/sonde-dev/sonde/internal/model"
)

// Live names addresses of running processes for live views (top), with the
// same resolvers and naming rule as recordings. It caches each process's
// executable mappings and, through its Symbolizer, each object's symbols.
type Live struct {
	sym  *Symbolizer
	maps map[uint32][]procfs.Mapping
	// readMaps reads a process's mappings (/proc/PID/maps; tests fake it).
	readMaps func(pid int) ([]procfs.Mapping, error)
}

// NewLive names frames with the machine's own resolvers (Default).
func NewLive() *Live { return NewLiveWith(Default(), procfs.ReadMaps) }

// NewLiveWith names frames with s, reading mappings with readMaps.
func NewLiveWith(s *Symbolizer, readMaps func(pid int) ([]procfs.Mapping, error)) *Live {
	return &Live{sym: s, maps: map[uint32][]procfs.Mapping{}, readMaps: readMaps}
}

// Name returns a frame's function (or object+0xaddr) and object names, as
// recordings print them.
func (l *Live) Name(pid uint32, addr uint64, kernel bool) (string, string) {
	r, ok := l.Resolve(pid, addr, kernel)
	if !ok {
		return model.UnnamedFrame("[unknown]", addr), "[unknown]"
	}
	return r.Name(), model.BaseName(r.DSO.Name)
}

// Resolve names one address of pid (a sampled instruction: no return
// address adjustment); false when no mapping of pid covers it.
func (l *Live) Resolve(pid uint32, addr uint64, kernel bool) (Resolved, bool) {
	if kernel {
		return l.sym.Resolve(KernelObject, addr), true
	}
	m, ok := l.mapping(pid, addr)
	if !ok {
		return Resolved{}, false
	}
	obj := MappedObject(pid, m.Path, "")
	return l.sym.Resolve(obj, obj.Offset(addr, m.Start, m.Offset)), true
}

func (l *Live) mapping(pid uint32, addr uint64) (procfs.Mapping, bool) {
	find := func(ms []procfs.Mapping) (procfs.Mapping, bool) {
		i := sort.Search(len(ms), func(i int) bool { return ms[i].End > addr })
		if i < len(ms) && ms[i].Start <= addr {
			return ms[i], true
		}
		return procfs.Mapping{}, false
	}
	if m, ok := find(l.maps[pid]); ok {
		return m, true
	}
	// Not cached, or mapped since we read the maps (dlopen): read again.
	ms, err := l.readMaps(int(pid))
	if err != nil {
		return procfs.Mapping{}, false
	}
	var exec []procfs.Mapping
	for _, m := range ms {
		if m.Exec() {
			exec = append(exec, m)
		}
	}
	l.maps[pid] = exec
	return find(exec)
}

// Forget drops cached mappings of processes that are gone, and JIT maps,
// which grow as runtimes compile more code.
func (l *Live) Forget() {
	for pid := range l.maps {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
			delete(l.maps, pid)
		}
	}
	l.sym.Forget(func(o Object) bool { return o.Kind == model.DSOJIT })
}
