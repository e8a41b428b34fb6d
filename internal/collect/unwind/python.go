package unwind

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/sonde-dev/sonde/internal/collect/procfs"
	"github.com/sonde-dev/sonde/internal/collect/python"
)

type pyProcValue = walkerPyProc

// PythonOff is the walker's option (a tool's Consts key) that leaves
// Python frames out: --no-interp. Wire makes the loader skip CPython
// processes too.
const PythonOff = "python_off"

// pyMaps are the Python walk's maps (bpf/include/sonde_python.h), in every
// object that includes the walker.
type pyMaps struct {
	Procs *ebpf.Map `ebpf:"py_procs"` // tgid → struct py_proc
}

// PythonStats say which processes got CPython frames.
type PythonStats struct {
	Processes int    `json:"processes"`            // processes whose Python frames are walked
	Refused   int    `json:"refused"`              // CPython processes sonde cannot walk
	LastError string `json:"last_error,omitempty"` // why, in one line
}

// python finds a CPython in pid's mappings ms and tells the walker where
// its state is (py_procs), or forgets it: a new image is no Python.
func (l *Loader) python(pid int, ms []procfs.Mapping) {
	if l.NoInterp || l.py.Procs == nil {
		return
	}
	p, err := python.Find(pid, ms)
	key := uint32(pid)
	if errors.Is(err, python.ErrNotPython) {
		l.py.Procs.Delete(key)
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil {
		err = l.py.Procs.Put(key, &pyProcValue{
			Runtime: p.Runtime, EvalStart: p.EvalStart, EvalEnd: p.EvalEnd,
			Style: p.Style, Tid: p.Tid, Minor: uint16(p.Minor),
			RuntimeInterpHead: p.RuntimeInterpHead, InterpThreadsHead: p.InterpThreadsHead,
			TstateNext: p.TstateNext, TstateTid: p.TstateTid, TstateFrame: p.TstateFrame,
			CframeFrame: p.CFrameFrame, FramePrevious: p.FramePrevious, FrameCode: p.FrameCode,
			FrameInstr: p.FrameInstr, FrameOwner: p.FrameOwner, CodeAdaptive: p.CodeAdaptive,
			CodeName: p.CodeName, CodeFilename: p.CodeFilename,
		})
	}
	// A process is counted once, however often it is reloaded.
	if l.pyKnown == nil {
		l.pyKnown = map[uint32]bool{}
	}
	first := !l.pyKnown[key]
	l.pyKnown[key] = true
	switch {
	case err != nil:
		l.stats.Python.LastError = err.Error()
		if first {
			l.stats.Python.Refused++
		}
	case first:
		l.stats.Python.Processes++
	}
}

// walksPython says whether some process got Python frames.
func (l *Loader) walksPython() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats.Python.Processes > 0
}

// PythonNames is the reader that names the Python frames of this
// loader's stacks: it read each code object as its stack arrived, while
// the process ran, so a builder given it names them after the process
// has gone.
func (l *Loader) PythonNames() *python.Reader { return l.pyNames }

// PythonWarning is the one line saying why a CPython's frames were not
// walked ("" when none was refused).
func (l *Loader) PythonWarning() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	py := l.stats.Python
	if py.Refused == 0 {
		return ""
	}
	return fmt.Sprintf("Python frames not walked in %d process(es): %s", py.Refused, py.LastError)
}
