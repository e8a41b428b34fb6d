package symbolize

import (
	"fmt"
	"sort"

	"github.com/sonde-dev/sonde/internal/model"
)

// Code kept per recording for annotate: enough for hot loops, bounded so a
// profile of a huge binary stays small.
const (
	maxCodePerFunc = 256 << 10
	maxCodeTotal   = 16 << 20
)

// Profile names every location of p in one pass, opening each object once
// while it is still on disk. objs describes p.DSOs as the source saw them
// (objs[i] is DSO i); a zero Object is left alone (sonde's own synthetic
// frames). On entry location addresses are recorded addresses (see
// Object.Offset); on return named objects' locations hold object addresses.
// Objects that cannot be opened leave a warning in p.Meta.Warnings.
func (s *Symbolizer) Profile(p *model.Profile, objs []Object) {
	ps := pass{p: p, funcs: map[funcKey]int32{}, files: map[string]int32{}, modules: map[string]int32{}}
	// Group locations by object so each object is opened once.
	byDSO := map[int32][]int32{}
	for i, l := range p.Locs {
		if l.DSO >= 0 && int(l.DSO) < len(objs) && objs[l.DSO] != (Object{}) {
			byDSO[l.DSO] = append(byDSO[l.DSO], int32(i))
		}
	}
	ids := make([]int32, 0, len(byDSO))
	for d := range byDSO {
		ids = append(ids, d)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, d := range ids {
		obj := objs[d]
		// Each object comes up once in a pass: it is opened without being
		// cached, so its symbols and line tables are freed once named.
		s.mu.Lock()
		c, cached := s.cache[obj.key()]
		s.mu.Unlock()
		o, err := c.o, c.err
		if !cached {
			o, err = s.open(obj)
		}
		if err != nil {
			if !Quiet(err) {
				p.Meta.Warnings = append(p.Meta.Warnings, fmt.Sprintf("%s: frames unnamed: %v", p.DSOs[d].Name, err))
			}
			continue
		}
		ps.object(d, obj, o, byDSO[d])
	}
}

type funcKey struct {
	dso   int32
	start uint64
	name  string
}

type pass struct {
	p         *model.Profile
	funcs     map[funcKey]int32
	files     map[string]int32
	modules   map[string]int32 // kernel module name → DSO id
	codeBytes uint64
}

func (ps *pass) object(d int32, obj Object, o *Opened, locs []int32) {
	p := ps.p
	p.DSOs[d] = opened(obj, o)
	sampled := map[int32]bool{}
	for _, li := range locs {
		l := &p.Locs[li]
		r := resolveIn(obj, o, nil, l.Addr)
		l.Addr = r.Addr
		owner := d
		if r.DSO.Kind == model.DSOModule {
			owner = ps.module(r.DSO)
			l.DSO = owner
		}
		if !r.Found {
			continue
		}
		if r.Frame.Func != "" {
			l.Func = ps.function(owner, r.Frame)
			sampled[l.Func] = true
		}
		if r.Frame.File != "" {
			l.File = ps.file(r.Frame.File)
			l.Line = int32(r.Frame.Line)
		}
	}
	if cs, ok := o.Symbols.(CodeSource); ok {
		ps.keepCode(cs, sampled)
	}
}

// keepCode stores the code and line rows of sampled functions, so annotate
// works without the binary.
func (ps *pass) keepCode(cs CodeSource, sampled map[int32]bool) {
	p := ps.p
	ids := make([]int32, 0, len(sampled))
	for id := range sampled {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		f := p.Funcs[id]
		if f.Size == 0 || f.Size > maxCodePerFunc || ps.codeBytes+f.Size > maxCodeTotal {
			continue
		}
		b, err := cs.Code(f.Start, f.Size)
		if err != nil {
			continue
		}
		c := model.Code{Func: id, Arch: cs.Arch(), Bytes: b}
		for _, r := range cs.Lines(f.Start, f.Start+f.Size) {
			c.Lines = append(c.Lines, model.LineRow{Addr: r.Addr, File: ps.file(r.File), Line: int32(r.Line)})
		}
		p.Code = append(p.Code, c)
		ps.codeBytes += f.Size
	}
}

func (ps *pass) module(d model.DSO) int32 {
	if id, ok := ps.modules[d.Name]; ok {
		return id
	}
	id := int32(len(ps.p.DSOs))
	ps.p.DSOs = append(ps.p.DSOs, d)
	ps.modules[d.Name] = id
	return id
}

func (ps *pass) function(dso int32, fr Frame) int32 {
	k := funcKey{dso, fr.FuncStart, fr.Func}
	if id, ok := ps.funcs[k]; ok {
		return id
	}
	id := int32(len(ps.p.Funcs))
	ps.funcs[k] = id
	ps.p.Funcs = append(ps.p.Funcs, model.Func{Name: fr.Func, DSO: dso, Start: fr.FuncStart, Size: fr.FuncSize})
	return id
}

func (ps *pass) file(f string) int32 {
	if id, ok := ps.files[f]; ok {
		return id
	}
	id := int32(len(ps.p.Files))
	ps.files[f] = id
	ps.p.Files = append(ps.p.Files, f)
	return id
}
