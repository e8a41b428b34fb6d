package ftrace

import (
	"debug/elf"
	"fmt"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/sonde-dev/sonde/internal/collect/funcexit"
	"github.com/sonde-dev/sonde/internal/collect/probe"
	"github.com/sonde-dev/sonde/internal/tools/funclat"
)

// Func is one traced function: its entry (and clones the compiler made
// of it) in one object, and what to capture at its calls.
type Func struct {
	Binary   string
	Name     string
	Syms     []string // symbols whose entries are probed (Name, or its clones)
	Addr     uint64   // ELF address of the first symbol
	Size     uint64
	Go       bool  // a Go function: return instructions are probed, not the return address
	Args     []int // 0-based integer argument positions to capture
	ArgNames []string
	Ret      bool // capture the return value
}

// startup names the C runtime's own functions, which a glob leaves out:
// they run before main or never return, and uftrace does not show them
// either (they are not compiled with -pg).
var startup = map[string]bool{
	"_start": true, "_init": true, "_fini": true, "deregister_tm_clones": true, "register_tm_clones": true,
	"__do_global_dtors_aux": true, "frame_dummy": true, "__libc_csu_init": true, "__libc_csu_fini": true,
	"_dl_relocate_static_pie": true, "__x86.get_pc_thunk.bx": true, "call_weak_fn": true,
}

// Resolve picks the functions to trace. include holds globs ("*", "a*")
// over the main binary's symbols, or "lib:glob" / "/path/obj:glob" for
// another object; an exact name is a source name (the compiler's .isra
// and .constprop clones count as it). exclude (globs over names) drops
// functions. With no include every function of the main binary is
// traced (of a Go binary, those of package main).
func Resolve(binary string, pid int, include, exclude []string) ([]Func, error) {
	if len(include) == 0 {
		include = []string{"*"}
		if isGoFile(binary) {
			include = []string{"main.*"}
		}
	}
	var out []Func
	seen := map[string]bool{} // binary:address
	for _, pat := range include {
		bin, glob := binary, pat
		if i := strings.LastIndexByte(pat, ':'); i > 0 && !strings.Contains(pat[:i], "::") {
			var err error
			if bin, err = funclat.FindObject(pat[:i], pid); err != nil {
				return nil, err
			}
			glob = pat[i+1:]
		}
		fs, err := resolveIn(bin, glob)
		if err != nil {
			return nil, err
		}
		for _, f := range fs {
			k := f.Binary + ":" + strconv.FormatUint(f.Addr, 16)
			if seen[k] || excluded(f.Name, exclude) {
				continue
			}
			seen[k] = true
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no function left to trace after -N %s", strings.Join(exclude, ", "))
	}
	return out, nil
}

func excluded(name string, exclude []string) bool {
	for _, x := range exclude {
		if ok, _ := path.Match(x, name); ok || x == name {
			return true
		}
	}
	return false
}

func isGoFile(bin string) bool {
	f, err := os.Open(bin)
	if err != nil {
		return false
	}
	defer f.Close()
	return funcexit.IsGo(f)
}

// resolveIn matches one pattern in one object.
func resolveIn(bin, glob string) ([]Func, error) {
	ef, err := elf.Open(bin)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", bin, err)
	}
	defer ef.Close()
	goBin := isGoFile(bin)
	syms := funcSymbols(ef)
	byName := map[string]elf.Symbol{}
	for _, s := range syms {
		byName[s.Name] = s
	}
	if !strings.ContainsAny(glob, "*?[") {
		r, err := probe.Resolve(ef, glob, true)
		if err != nil {
			return nil, probe.InBinary(bin, err)
		}
		names := r.Symbols()
		if len(names) == 0 {
			names = []string{glob}
		}
		s, ok := byName[names[0]]
		if !ok {
			return nil, fmt.Errorf("%s: no symbol %s", bin, names[0])
		}
		return []Func{{Binary: bin, Name: glob, Syms: names, Addr: s.Value, Size: s.Size, Go: goBin}}, nil
	}
	var out []Func
	var all []string
	for _, s := range syms {
		all = append(all, s.Name)
		if startup[s.Name] {
			continue
		}
		if ok, _ := path.Match(glob, s.Name); ok {
			out = append(out, Func{Binary: bin, Name: s.Name, Syms: []string{s.Name}, Addr: s.Value, Size: s.Size, Go: goBin})
		}
	}
	if len(out) == 0 {
		if ef.Section(".symtab") == nil {
			return nil, probe.InBinary(bin, probe.Stripped(glob, len(all)))
		}
		return nil, fmt.Errorf("no function matches %q in %s", glob, bin)
	}
	return out, nil
}

// funcSymbols lists the defined functions of ef with code (size > 0),
// by address, one name per address (symbol table first, then dynamic).
func funcSymbols(ef *elf.File) []elf.Symbol {
	var out []elf.Symbol
	seen := map[string]bool{}
	for _, get := range []func() ([]elf.Symbol, error){ef.Symbols, ef.DynamicSymbols} {
		syms, _ := get()
		for _, s := range syms {
			if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 || s.Size == 0 || s.Section == elf.SHN_UNDEF {
				continue
			}
			s.Name = strings.SplitN(s.Name, "@", 2)[0]
			if seen[s.Name] {
				continue
			}
			seen[s.Name] = true
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Value < out[j].Value })
	return out
}

// SetCaptures applies -A FUNC@ARGS and -R FUNC@retval specs. ARGS is a
// comma list of argN (N from 1, the Nth integer argument) or parameter
// names, which DWARF turns into positions (integer and pointer parameters
// passed in registers only).
func SetCaptures(fs []Func, args, rets []string) error {
	for _, spec := range args {
		name, list, ok := strings.Cut(spec, "@")
		if !ok || list == "" {
			return fmt.Errorf("-A %q: want FUNC@arg1,arg2 or FUNC@name", spec)
		}
		n := 0
		for i := range fs {
			if ok, _ := path.Match(name, fs[i].Name); !ok {
				continue
			}
			n++
			for _, a := range strings.Split(list, ",") {
				pos, err := argPosition(fs[i], a)
				if err != nil {
					return fmt.Errorf("-A %q: %w", spec, err)
				}
				fs[i].Args = append(fs[i].Args, pos)
				fs[i].ArgNames = append(fs[i].ArgNames, a)
			}
		}
		if n == 0 {
			return fmt.Errorf("-A %q: %s is not a traced function", spec, name)
		}
	}
	for _, spec := range rets {
		name, what, _ := strings.Cut(spec, "@")
		if what != "retval" {
			return fmt.Errorf("-R %q: want FUNC@retval", spec)
		}
		n := 0
		for i := range fs {
			if ok, _ := path.Match(name, fs[i].Name); ok {
				fs[i].Ret = true
				n++
			}
		}
		if n == 0 {
			return fmt.Errorf("-R %q: %s is not a traced function", spec, name)
		}
	}
	return nil
}

func argPosition(f Func, a string) (int, error) {
	if n, err := strconv.Atoi(strings.TrimPrefix(a, "arg")); err == nil && strings.HasPrefix(a, "arg") {
		if n < 1 || n > 6 {
			return 0, fmt.Errorf("%s: arguments are arg1..arg6", a)
		}
		return n - 1, nil
	}
	params, err := dwarfParams(f.Binary, f.Name)
	if err != nil {
		return 0, err
	}
	for i, p := range params {
		if p == a {
			if i >= 6 {
				return 0, fmt.Errorf("%s is parameter %d of %s: only the first 6 are in registers", a, i+1, f.Name)
			}
			return i, nil
		}
	}
	return 0, fmt.Errorf("%s has no parameter %q (it has %s)", f.Name, a, strings.Join(params, ", "))
}

// dwarfParams lists fn's formal parameters in order, from DWARF.
func dwarfParams(bin, fn string) ([]string, error) {
	ef, err := elf.Open(bin)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", bin, err)
	}
	defer ef.Close()
	d, err := ef.DWARF()
	if err != nil {
		return nil, fmt.Errorf("%s has no DWARF to name %s's parameters (use argN): %w", bin, fn, err)
	}
	return probe.ParamNames(d, fn)
}
