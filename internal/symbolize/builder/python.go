package builder

import (
	"fmt"

	"github.com/sonde-dev/sonde/internal/collect/python"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/symbolize"
)

// pyLocKey is a named Python frame: frames are named as they arrive
// (while their process runs), so one location serves every code object
// address that names the same function and line.
type pyLocKey struct {
	fn, file string
	line     int
}

// pyNames are the Python frames' own tables.
type pyNames struct {
	dso   int32 // the [python] object, -1 until the first frame
	locs  map[pyLocKey]int32
	funcs map[[2]string]int32
	files map[string]int32
	// taken and unnamed count the Python frames of the samples, and those
	// left [python] (their code object was gone or could not be read);
	// why is the last reason.
	taken, unnamed int
	why            error
}

// warning is the line that counts the unnamed Python frames, "" if none.
func (n *pyNames) warning() string {
	if n.unnamed == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d Python frames unnamed ([python]): %v", n.unnamed, n.taken, n.why)
}

// pyLoc is the location of the walked Python frame v of pid: named now,
// from the process's memory, so the name survives the process.
func (b *Builder) pyLoc(pid uint32, v uint64) int32 {
	fr, err := b.Python.Frame(int(pid), v)
	n := &b.py
	n.taken++
	if err != nil {
		// Unknown, and counted: never another object's text.
		fr = python.Frame{Func: "[python]"}
		n.unnamed++
		n.why = err
	}
	if n.locs == nil {
		n.dso = int32(len(b.prof.DSOs))
		b.prof.DSOs = append(b.prof.DSOs, model.DSO{Name: "[python]", Kind: model.DSOUnknown})
		b.objs = append(b.objs, symbolize.Object{}) // named already: the pass leaves it alone
		n.locs, n.funcs, n.files = map[pyLocKey]int32{}, map[[2]string]int32{}, map[string]int32{}
	}
	k := pyLocKey{fr.Func, fr.File, fr.Line}
	if id, ok := n.locs[k]; ok {
		return id
	}
	fn := model.Intern(n.funcs, &b.prof.Funcs, [2]string{fr.Func, fr.File}, model.Func{Name: fr.Func, DSO: n.dso})
	file := int32(-1)
	if fr.File != "" {
		file = model.Intern(n.files, &b.prof.Files, fr.File, fr.File)
	}
	id := int32(len(b.prof.Locs))
	b.prof.Locs = append(b.prof.Locs, model.Loc{DSO: n.dso, Func: fn, File: file, Line: int32(fr.Line)})
	n.locs[k] = id
	return id
}
