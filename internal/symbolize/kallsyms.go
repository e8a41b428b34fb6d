package symbolize

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
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
		addr, name, mod, ok := kallsymsLine(line)
		if !ok {
			continue
		}
		if addr == badAddr {
			return nil, fmt.Errorf("bad kallsyms line %q", line)
		}
		if addr == 0 {
			zero++
			continue
		}
		names = append(names, name...)
		ends = append(ends, len(names))
		syms = append(syms, Symbol{Start: addr})
		if len(mod) > 0 {
			m, in := modNames[string(mod)] // no allocation: a lookup by a converted slice
			if !in {
				m = string(mod)
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

// badAddr is kallsymsLine's address for one that is not hexadecimal.
const badAddr = ^uint64(0)

// kallsymsLine reads "ADDR TYPE NAME[\t[MODULE]]" without allocating: a
// text symbol's address (badAddr if not hexadecimal), name and module
// ("" for vmlinux); ok is false for other symbols and other lines. The
// kernel's ~200,000 lines went through bytes.Fields, a slice each: a
// sixth of record's finish, with the collections it brought on.
func kallsymsLine(line []byte) (addr uint64, name, mod []byte, ok bool) {
	sp := bytes.IndexByte(line, ' ')
	if sp <= 0 || len(line) < sp+4 || line[sp+2] != ' ' {
		return 0, nil, nil, false
	}
	if t := line[sp+1]; t != 't' && t != 'T' && t != 'w' && t != 'W' {
		return 0, nil, nil, false
	}
	for _, c := range line[:sp] {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return badAddr, nil, nil, true
		}
		addr = addr<<4 | uint64(d)
	}
	name = line[sp+3:]
	if i := bytes.IndexAny(name, " \t"); i >= 0 {
		rest := bytes.TrimLeft(name[i:], " \t")
		name = name[:i]
		if len(rest) > 1 && rest[0] == '[' {
			mod = bytes.TrimRight(rest[1:], "] \t")
		}
	}
	return addr, name, mod, len(name) > 0
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
