package symbolize

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sonde-dev/sonde/internal/procfs"
)

// Live names addresses of running processes, for live views: it caches
// kallsyms, each process's executable mappings and each object's symbols.
type Live struct {
	kernel *Kernel
	objs   map[string]*ELF
	maps   map[uint32][]procfs.Mapping
}

// NewLive loads kallsyms (kernel frames stay unnamed without it).
func NewLive() *Live {
	l := &Live{objs: map[string]*ELF{}, maps: map[uint32][]procfs.Mapping{}}
	l.kernel, _ = LoadKallsyms()
	return l
}

// Name returns a frame's function and object names.
func (l *Live) Name(pid uint32, addr uint64, kernel bool) (string, string) {
	if kernel {
		if l.kernel == nil {
			return fmt.Sprintf("[kernel.kallsyms]+0x%x", addr), "[kernel.kallsyms]"
		}
		dso := "[kernel.kallsyms]"
		if m := l.kernel.Module(addr); m != "" {
			dso = "[" + m + "]"
		}
		if f, ok := l.kernel.Lookup(addr); ok {
			return f.Func, dso
		}
		return fmt.Sprintf("%s+0x%x", dso, addr), dso
	}
	m, ok := l.mapping(pid, addr)
	if !ok {
		return fmt.Sprintf("[unknown]+0x%x", addr), "[unknown]"
	}
	dso := filepath.Base(m.Path)
	if m.Path == "" || strings.HasPrefix(m.Path, "[") {
		return fmt.Sprintf("%s+0x%x", m.Path, addr-m.Start), m.Path
	}
	e, ok := l.objs[m.Path]
	if !ok {
		e, _ = OpenELF(m.Path, Options{Root: fmt.Sprintf("/proc/%d/root", pid)})
		if e == nil {
			e, _ = OpenELF(m.Path, Options{})
		}
		l.objs[m.Path] = e
	}
	off := addr - m.Start + m.Offset
	if e == nil {
		return fmt.Sprintf("%s+0x%x", dso, off), dso
	}
	va := e.FileOffsetToAddr(off)
	if s, ok := e.syms.Find(va, false); ok {
		return Demangle(s.Name), dso
	}
	return fmt.Sprintf("%s+0x%x", dso, va), dso
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
	ms, err := procfs.ReadMaps(int(pid))
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

// Forget drops cached mappings of processes that are gone.
func (l *Live) Forget() {
	for pid := range l.maps {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
			delete(l.maps, pid)
		}
	}
}
