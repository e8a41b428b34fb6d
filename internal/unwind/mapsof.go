package unwind

import (
	"reflect"

	"github.com/cilium/ebpf"

	"github.com/sonde-dev/sonde/internal/bpfskel"
)

// MapsOf finds the walker's maps in a tool's loaded maps: a pointer to
// bpf2go's <stem>Maps struct, whose fields for the walker's maps are
// always named UnwindRules, UnwindRows, … (from the map names in
// sonde_unwind.h). A field that is missing is nil.
func MapsOf(objs any) Maps {
	v := reflect.Indirect(reflect.ValueOf(objs))
	get := func(name string) *ebpf.Map {
		f := v.FieldByName(name)
		if !f.IsValid() {
			return nil
		}
		m, _ := f.Interface().(*ebpf.Map)
		return m
	}
	return Maps{Rules: get("UnwindRules"), Rows: get("UnwindRows"), Procs: get("UnwindProcs"),
		Stacks: get("UnwindStacks"), Counters: get("UnwindCounters"), Notices: get("UnwindNotices")}
}

// Open opens a tool wired to l (Wire): on failure l is stopped as well,
// so the caller has only the session to close, and l to stop after it.
func (l *Loader) Open(t bpfskel.Tool) (*bpfskel.Session, error) {
	s, err := bpfskel.Open(t)
	if err != nil {
		l.Stop()
		return nil, err
	}
	return s, nil
}
