package unwind

import (
	"errors"

	"github.com/cilium/ebpf"

	"github.com/sonde-dev/sonde/internal/collect/procfs"
	"github.com/sonde-dev/sonde/internal/collect/python"
)

type pyProcValue = walkerPyProc

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
	if err != nil {
		l.pyStats.Refused++
		l.pyStats.LastError = err.Error()
		return
	}
	v := pyProcValue{
		Runtime: p.Runtime, EvalStart: p.EvalStart, EvalEnd: p.EvalEnd,
		Style: p.Style, Tid: p.Tid, Minor: uint16(p.Minor),
		RuntimeInterpHead: p.RuntimeInterpHead, InterpThreadsHead: p.InterpThreadsHead,
		TstateNext: p.TstateNext, TstateTid: p.TstateTid, TstateFrame: p.TstateFrame,
		CframeFrame: p.CFrameFrame, FramePrevious: p.FramePrevious, FrameCode: p.FrameCode,
		FrameInstr: p.FrameInstr, FrameOwner: p.FrameOwner, CodeAdaptive: p.CodeAdaptive,
	}
	if err := l.py.Procs.Put(key, &v); err != nil {
		l.pyStats.Refused++
		l.pyStats.LastError = err.Error()
		return
	}
	if !l.pyKnown[key] {
		if l.pyKnown == nil {
			l.pyKnown = map[uint32]bool{}
		}
		l.pyKnown[key] = true
		l.pyStats.Processes++
	}
}

// Python says which processes got CPython frames.
func (l *Loader) Python() PythonStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pyStats
}
