package deadlock

import (
	"debug/elf"
	"fmt"
	"os"

	"github.com/sonde-dev/sonde/internal/collect/procfs"
	"github.com/sonde-dev/sonde/internal/collect/python"
	"github.com/sonde-dev/sonde/internal/collect/unwind"
	"github.com/sonde-dev/sonde/internal/symbolize"
)

// resolve symbolizes what the report shows: the stacks of the edges in
// cycles and the names of their locks. It runs before the session closes
// (stacks live in a BPF map) and reads the mappings of processes that
// exited from the unwinder, which kept them.
func resolve(res *Result, cycles []Cycle, ld *unwind.Loader) {
	res.Stacks = map[uint64][]Frame{}
	res.Names = map[LockID]string{}
	readMaps := func(pid int) ([]procfs.Mapping, error) {
		if ms, ok := ld.Exited(uint32(pid)); ok {
			return ms, nil
		}
		return procfs.ReadMaps(pid)
	}
	live := symbolize.NewLiveWith(symbolize.Default(), readMaps)
	py := python.NewReader()
	vars := map[uint32]*variables{}
	var buf [unwind.MaxFrames]uint64
	for _, c := range cycles {
		for _, e := range c {
			for _, key := range []uint64{e.FromStack, e.ToStack} {
				if _, done := res.Stacks[key]; done || key == 0 {
					continue
				}
				st, ok := ld.Stack(key, &buf)
				if !ok {
					continue
				}
				frames := make([]Frame, len(st.PCs))
				for i, pc := range st.PCs {
					if _, ok := python.Pid(pc); ok {
						frames = frames[:i] // the process id that ends a stack with Python frames
						break
					}
					if python.IsFrame(pc) {
						frames[i] = pyFrame(py, e.Pid, pc)
						continue
					}
					at := pc
					if i > 0 {
						at-- // a return address: name the call, not what follows it
					}
					sym, dso := live.Name(e.Pid, at, false)
					frames[i] = Frame{Sym: sym, DSO: dso, Addr: pc}
				}
				res.Stacks[key] = frames
			}
			v := vars[e.Pid]
			if v == nil {
				ms, _ := readMaps(int(e.Pid))
				v = newVariables(e.Pid, ms)
				vars[e.Pid] = v
			}
			for _, a := range []uint64{e.From, e.To} {
				if n := v.name(a); n != "" {
					res.Names[LockID{e.Pid, a}] = n
				}
			}
		}
	}
}

// variables names addresses of a process's global and static variables
// from the ELF symbols of its executable and libraries. Only executable
// mappings are needed: they give each file's load bias, and the
// unwinder keeps them for processes that exited.
type variables struct {
	objs []varObject
}

type varObject struct {
	bias uint64
	syms symbolize.SymbolTable
}

func newVariables(pid uint32, ms []procfs.Mapping) *variables {
	v := &variables{}
	seen := map[string]bool{}
	for _, m := range ms {
		if !m.Exec() || seen[m.Path] || len(m.Path) == 0 || m.Path[0] != '/' {
			continue
		}
		seen[m.Path] = true
		path := fmt.Sprintf("/proc/%d/root%s", pid, m.Path)
		if _, err := os.Stat(path); err != nil {
			path = m.Path
		}
		if o, ok := openVariables(path, m); ok {
			v.objs = append(v.objs, o)
		}
	}
	return v
}

// openVariables reads the data symbols of the file mapped executable at m.
func openVariables(path string, m procfs.Mapping) (varObject, bool) {
	f, err := elf.Open(path)
	if err != nil {
		return varObject{}, false
	}
	defer f.Close()
	var o varObject
	found := false
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			// A file offset f is at p.Vaddr + f - p.Off in the file's
			// address space and at m.Start + f - m.Offset in the process.
			o.bias = m.Start - m.Offset + p.Off - p.Vaddr
			found = true
			break
		}
	}
	if !found {
		return varObject{}, false
	}
	var syms []symbolize.Symbol
	for _, get := range []func() ([]elf.Symbol, error){f.Symbols, f.DynamicSymbols} {
		ss, _ := get()
		for _, s := range ss {
			if elf.ST_TYPE(s.Info) == elf.STT_OBJECT && s.Size > 0 && s.Section != elf.SHN_UNDEF {
				syms = append(syms, symbolize.Symbol{Name: s.Name, Start: s.Value, Size: s.Size})
			}
		}
	}
	o.syms = symbolize.NewSymbolTable(syms)
	return o, len(o.syms) > 0
}

// name is the variable holding addr ("lock_a", "table+0x40"), "" when
// none does (a lock on the heap or the stack).
func (v *variables) name(addr uint64) string {
	for _, o := range v.objs {
		if addr < o.bias {
			continue
		}
		if s, ok := o.syms.Find(addr-o.bias, false); ok {
			if off := addr - o.bias - s.Start; off != 0 {
				return fmt.Sprintf("%s+%#x", s.Name, off)
			}
			return s.Name
		}
	}
	return ""
}

// pyFrame names a walked CPython frame from the process's memory.
func pyFrame(r *python.Reader, pid uint32, pc uint64) Frame {
	fr, err := r.Frame(int(pid), pc)
	if err != nil {
		return Frame{Sym: "[python]", DSO: "[python]", Addr: pc}
	}
	sym := fr.Func
	if fr.File != "" {
		sym = fmt.Sprintf("%s (%s:%d)", fr.Func, fr.File, fr.Line)
	}
	return Frame{Sym: sym, DSO: "[python]", Addr: pc}
}
