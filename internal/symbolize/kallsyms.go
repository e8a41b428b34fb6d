package symbolize

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
)

// KernelSymbol is a kallsyms function with the module it belongs to ("" for vmlinux).
type KernelSymbol struct {
	Symbol
	Module string
}

// Kernel resolves kernel addresses from a kallsyms snapshot.
type Kernel struct {
	syms    []KernelSymbol // sorted by Start
	table   SymbolTable
	modules map[uint64]string // symbol start → module
}

// ParseKallsyms reads the /proc/kallsyms format, keeping text symbols.
func ParseKallsyms(r io.Reader) (*Kernel, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	// The names go into one string, which the symbols slice: a string
	// per line would keep ~120,000 lines whole for as long as the kernel's
	// symbols are kept (the agent keeps them for good).
	var syms []Symbol
	var names []byte
	var ends []int
	mods := map[uint64]string{}
	modNames := map[string]string{}
	zero := 0
	for sc.Scan() {
		line := sc.Bytes()
		f := bytes.Fields(line)
		if len(f) < 3 {
			continue
		}
		if t := string(f[1]); t != "t" && t != "T" && t != "w" && t != "W" {
			continue
		}
		addr, err := strconv.ParseUint(string(f[0]), 16, 64)
		if err != nil {
			return nil, fmt.Errorf("bad kallsyms line %q", line)
		}
		if addr == 0 {
			zero++
			continue
		}
		names = append(names, f[2]...)
		ends = append(ends, len(names))
		syms = append(syms, Symbol{Start: addr})
		if len(f) >= 4 && bytes.HasPrefix(f[3], []byte("[")) {
			m := string(bytes.Trim(f[3], "[]"))
			if in, ok := modNames[m]; ok {
				m = in
			} else {
				modNames[m] = m
			}
			mods[addr] = m
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading kallsyms: %w", err)
	}
	all, start := string(names), 0
	for i, end := range ends {
		syms[i].Name = all[start:end]
		start = end
	}
	if len(syms) == 0 && zero > 0 {
		return nil, fmt.Errorf("kallsyms addresses are hidden: run as root or set kernel.kptr_restrict=0")
	}
	return &Kernel{table: NewSymbolTable(syms), modules: mods}, nil
}

// LoadKallsyms reads /proc/kallsyms.
func LoadKallsyms() (*Kernel, error) {
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return nil, fmt.Errorf("opening /proc/kallsyms: %w", err)
	}
	defer f.Close()
	return ParseKallsyms(f)
}

// Lookup names a kernel address; kallsyms has no sizes, so a symbol runs to the next.
func (k *Kernel) Lookup(addr uint64) (Frame, bool) {
	s, ok := k.table.Find(addr, true)
	if !ok {
		return Frame{}, false
	}
	return Frame{Func: s.Name, FuncStart: s.Start, Module: k.modules[s.Start]}, true
}

// Module returns the module name of the symbol covering addr, "" for vmlinux.
func (k *Kernel) Module(addr uint64) string {
	s, ok := k.table.Find(addr, true)
	if !ok {
		return ""
	}
	return k.modules[s.Start]
}

// Len is the number of text symbols.
func (k *Kernel) Len() int { return len(k.table) }

// KernelBuildID reads the running kernel's build-id from /sys/kernel/notes.
func KernelBuildID() string {
	b, err := os.ReadFile("/sys/kernel/notes")
	if err != nil {
		return ""
	}
	return parseBuildIDNote(b, nativeOrder)
}
