package python

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/sonde-dev/sonde/internal/collect/procfs"
)

// Proc is a CPython found in a process: where its runtime state and eval
// loop are, and its version's layout.
type Proc struct {
	Layout
	Runtime            uint64 // address of _PyRuntime
	EvalStart, EvalEnd uint64 // _PyEval_EvalFrameDefault's code
	Path               string // the file that holds the interpreter
	HowFound           string // "_Py_DebugOffsets", "table"
	// Types are the addresses of the type objects a code object and the
	// objects it names point to (PyCode_Type, PyUnicode_Type,
	// PyBytes_Type): the reader names a frame only from a live object of
	// the right type at the walked address (0: not found, so not named).
	Types ObjTypes
}

// ObjTypes are the addresses of the interpreter's type objects the reader
// checks.
type ObjTypes struct{ Code, Str, Bytes uint64 }

// ErrNotPython: no mapping of the process is a CPython interpreter.
var ErrNotPython = errors.New("not a CPython process")

// candidate says whether a mapped file may hold the interpreter: the
// executable or libpython, by name (other files are never opened).
func candidate(path string) bool {
	b := filepath.Base(path)
	return strings.HasPrefix(b, "python") || strings.HasPrefix(b, "libpython")
}

var versionInName = regexp.MustCompile(`python3\.(\d+)`)

// Find looks for a CPython in pid's executable mappings ms. ErrNotPython
// when there is none; another error, in one line, when there is one sonde
// cannot walk (its version, a free-threaded build, a file without the
// symbols).
func Find(pid int, ms []procfs.Mapping) (*Proc, error) {
	seen := map[string]bool{}
	for _, m := range ms {
		if !m.Exec() || !strings.HasPrefix(m.Path, "/") || !candidate(m.Path) || seen[m.Path] {
			continue
		}
		seen[m.Path] = true
		p, err := findIn(pid, m)
		if errors.Is(err, ErrNotPython) {
			continue
		}
		return p, err
	}
	return nil, ErrNotPython
}

// findIn reads the interpreter's symbols from the file behind m and its
// version from the process's memory.
func findIn(pid int, m procfs.Mapping) (*Proc, error) {
	f, err := openMapped(pid, m)
	if err != nil {
		return nil, ErrNotPython
	}
	defer f.Close()
	ef, err := elf.NewFile(f)
	if err != nil {
		return nil, ErrNotPython
	}
	syms := map[string]elf.Symbol{}
	want := map[string]bool{"_PyRuntime": true, "_PyEval_EvalFrameDefault": true, "Py_Version": true,
		"PyCode_Type": true, "PyUnicode_Type": true, "PyBytes_Type": true}
	for _, read := range []func() ([]elf.Symbol, error){ef.DynamicSymbols, ef.Symbols} {
		ss, _ := read()
		for _, s := range ss {
			if want[s.Name] && s.Value != 0 {
				if _, ok := syms[s.Name]; !ok {
					syms[s.Name] = s
				}
			}
		}
	}
	rt, ok1 := syms["_PyRuntime"]
	ev, ok2 := syms["_PyEval_EvalFrameDefault"]
	if !ok1 {
		return nil, ErrNotPython
	}
	if !ok2 || ev.Size == 0 {
		return nil, fmt.Errorf("%s: CPython without a sized _PyEval_EvalFrameDefault symbol: its frames cannot be placed", m.Path)
	}
	bias, ok := loadBias(ef, m)
	if !ok {
		return nil, fmt.Errorf("%s: mapping at offset %#x matches no executable segment", m.Path, m.Offset)
	}
	p := &Proc{Runtime: rt.Value + bias, EvalStart: ev.Value + bias, EvalEnd: ev.Value + ev.Size + bias, Path: m.Path}
	at := func(name string) uint64 {
		if s, ok := syms[name]; ok {
			return s.Value + bias
		}
		return 0
	}
	p.Types = ObjTypes{Code: at("PyCode_Type"), Str: at("PyUnicode_Type"), Bytes: at("PyBytes_Type")}
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		return nil, fmt.Errorf("reading process %d's memory: %w", pid, err)
	}
	defer mem.Close()
	head := make([]byte, debugOffsets313Size)
	if _, err := mem.ReadAt(head, int64(p.Runtime)); err != nil {
		return nil, fmt.Errorf("reading _PyRuntime of process %d: %w", pid, err)
	}
	l, err := ParseDebugOffsets(head)
	switch {
	case err == nil:
		p.Layout, p.HowFound = l, "_Py_DebugOffsets"
		return p, nil
	case !errors.Is(err, ErrNoCookie):
		return nil, fmt.Errorf("%s: %w", m.Path, err)
	}
	minor := -1
	if s, ok := syms["Py_Version"]; ok {
		var b [4]byte
		if _, err := mem.ReadAt(b[:], int64(s.Value+bias)); err == nil {
			if v := binary.LittleEndian.Uint32(b[:]); v>>24 == 3 {
				minor = int(v >> 16 & 0xff)
			}
		}
	}
	if minor < 0 {
		// 3.10 has no Py_Version: its file names the version.
		if mm := versionInName.FindStringSubmatch(filepath.Base(m.Path)); mm != nil {
			minor, _ = strconv.Atoi(mm[1])
		}
	}
	l, ok = Known(minor)
	if !ok {
		return nil, fmt.Errorf("%s: CPython 3.%d is not supported (3.10–3.13 are)", m.Path, minor)
	}
	if l.Tid == TidPthread && !pthreadIsThreadPointer() {
		return nil, fmt.Errorf("%s: CPython 3.10 threads are found by their pthread_t, which is the thread pointer on x86-64 only", m.Path)
	}
	p.Layout, p.HowFound = l, "table"
	return p, nil
}

// openMapped opens the file the process really mapped (even deleted or
// in another mount namespace), else its path through the process's root.
func openMapped(pid int, m procfs.Mapping) (*os.File, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/map_files/%x-%x", pid, m.Start, m.End))
	if err == nil {
		return f, nil
	}
	return os.Open(fmt.Sprintf("/proc/%d/root%s", pid, m.Path))
}

// loadBias is what turns the file's virtual addresses into the process's:
// the executable segment that m maps.
func loadBias(ef *elf.File, m procfs.Mapping) (uint64, bool) {
	for _, pr := range ef.Progs {
		if pr.Type != elf.PT_LOAD || pr.Flags&elf.PF_X == 0 {
			continue
		}
		if m.Offset >= pr.Off && m.Offset < pr.Off+pr.Filesz {
			return m.Start - m.Offset - (pr.Vaddr - pr.Off), true
		}
	}
	return 0, false
}
