package symbolize

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

var nativeOrder binary.ByteOrder = binary.LittleEndian

// PerfMap is a JIT symbol map (/tmp/perf-PID.map) written by runtimes such
// as the JVM (with perf-map-agent), V8 (--perf-basic-prof) and .NET.
type PerfMap struct{ table SymbolTable }

// ParsePerfMap reads "START SIZE name" lines (hex START and SIZE).
func ParsePerfMap(r io.Reader) (*PerfMap, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	var syms []Symbol
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		a, rest, ok1 := strings.Cut(line, " ")
		sz, name, ok2 := strings.Cut(strings.TrimLeft(rest, " "), " ")
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("bad perf map line %q", line)
		}
		start, err1 := strconv.ParseUint(strings.TrimPrefix(a, "0x"), 16, 64)
		size, err2 := strconv.ParseUint(strings.TrimPrefix(sz, "0x"), 16, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("bad perf map line %q", line)
		}
		syms = append(syms, Symbol{Name: name, Start: start, Size: size})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading perf map: %w", err)
	}
	return &PerfMap{table: NewSymbolTable(syms)}, nil
}

// LoadPerfMap reads /tmp/perf-PID.map, through the process's root when it
// still exists so containers' maps are found.
func LoadPerfMap(pid int) (*PerfMap, error) {
	paths := []string{fmt.Sprintf("/proc/%d/root/tmp/perf-%d.map", pid, pid), fmt.Sprintf("/tmp/perf-%d.map", pid)}
	var lastErr error
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			lastErr = err
			continue
		}
		defer f.Close()
		return ParsePerfMap(f)
	}
	return nil, lastErr
}

// Lookup names a JIT address.
func (m *PerfMap) Lookup(addr uint64) (Frame, bool) {
	s, ok := m.table.Find(addr, false)
	if !ok {
		return Frame{}, false
	}
	return Frame{Func: s.Name, FuncStart: s.Start, FuncSize: s.Size}, true
}
