package symbolize

import (
	"fmt"
	"runtime"
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
	s.ProfileLeaves(p, objs, LeafLocs(p))
}

// ProfileLeaves is Profile for a profile whose samples are not all in
// p.Samples (a recording drops them once written): leaves are the
// locations its samples stopped in, whose functions' code is kept.
func (s *Symbolizer) ProfileLeaves(p *model.Profile, objs []Object, leaves map[int32]bool) {
	ps := pass{p: p, funcs: map[funcKey]int32{}, files: map[string]int32{}, modules: map[string]int32{}, sampled: map[int32]bool{}, leaves: leaves}
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
	if s.kept != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.kept.begin(objs)
		defer s.kept.end()
		for _, d := range ids {
			obj := objs[d]
			e := s.keptOpen(obj)
			if e.err != nil {
				ps.warn(d, e.err)
				continue
			}
			ps.object(d, obj, e.o, byDSO[d], func(addr uint64) Resolved { return e.resolve(obj, addr, s.kept.Memo) })
		}
		return
	}
	opened := s.openAhead(objs, ids)
	for i, d := range ids {
		obj := objs[d]
		r := <-opened[i]
		o, err := r.o, r.err
		if err != nil {
			ps.warn(d, err)
			r.done()
			continue
		}
		if lp, ok := o.Symbols.(linePreparer); ok && !r.cached {
			// Named once and dropped: only the units of its addresses.
			lp.PrepareLines(objectAddrs(p, o, byDSO[d]))
		}
		ps.object(d, obj, o, byDSO[d], func(addr uint64) Resolved { return resolveIn(obj, o, nil, addr) })
		if cs, ok := o.Symbols.(CodeSource); ok {
			ps.keepCode(cs)
		}
		r.done()
	}
}

// linePreparer is an object that can read the lines of some addresses
// only (ELF.PrepareLines).
type linePreparer interface{ PrepareLines(addrs []uint64) }

// objectAddrs are the object addresses of locations locs of p, whose
// addresses are still recorded ones.
func objectAddrs(p *model.Profile, o *Opened, locs []int32) []uint64 {
	out := make([]uint64, 0, len(locs))
	for _, li := range locs {
		a := p.Locs[li].Addr
		if o.ToAddr != nil {
			a = o.ToAddr(a)
		}
		out = append(out, a)
	}
	return out
}

// ahead is an object opened by openAhead; done lets the next one open.
type ahead struct {
	openResult
	cached bool // from the symbolizer's cache: others may use it after this pass
	done   func()
}

// openAhead opens the objects ids of objs on goroutines, as many at a
// time as there are CPUs, while the pass names the ones before: reading
// symbol tables is most of a pass, and the objects are independent. Each
// object comes up once in a pass: it is opened without being cached, so
// its symbols and line tables are freed once named; an object counts
// against the limit until the pass is done with it (done), so no more
// than that many are in memory at once.
func (s *Symbolizer) openAhead(objs []Object, ids []int32) []chan ahead {
	out := make([]chan ahead, len(ids))
	for i := range out {
		out[i] = make(chan ahead, 1)
	}
	slots := make(chan struct{}, runtime.NumCPU())
	go func() {
		for i, d := range ids {
			slots <- struct{}{}
			go func() {
				obj := objs[d]
				s.mu.Lock()
				c, cached := s.cache[obj.key()]
				s.mu.Unlock()
				if !cached {
					c.o, c.err = s.open(obj)
				}
				out[i] <- ahead{c, cached, func() { <-slots }}
			}()
		}
	}()
	return out
}

// warn notes an object whose frames stay unnamed.
func (ps *pass) warn(d int32, err error) {
	if !Quiet(err) {
		ps.p.Meta.Warnings = append(ps.p.Meta.Warnings, fmt.Sprintf("%s: frames unnamed: %v", ps.p.DSOs[d].Name, err))
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
	sampled   map[int32]bool   // functions of the current object some sample stopped in
	leaves    map[int32]bool   // locations that are some sample's leaf
	codeBytes uint64
}

// LeafLocs are the locations samples stopped in. Only their functions'
// code is kept: annotate shows self samples, and a caller's code (python's
// whole interpreter loop, in every stack) was most of a short recording's
// bytes; annotate reads a function that was not kept from its binary.
func LeafLocs(p *model.Profile) map[int32]bool {
	m := map[int32]bool{}
	for _, s := range p.Samples {
		if s.Stack >= 0 && int(s.Stack) < len(p.Stacks) && len(p.Stacks[s.Stack]) > 0 {
			m[p.Stacks[s.Stack][0]] = true
		}
	}
	return m
}

// object names the locations locs of DSO d with resolve, noting the
// functions sampled (for keepCode).
func (ps *pass) object(d int32, obj Object, o *Opened, locs []int32, resolve func(recorded uint64) Resolved) {
	p := ps.p
	p.DSOs[d] = opened(obj, o)
	clear(ps.sampled)
	for _, li := range locs {
		l := &p.Locs[li]
		r := resolve(l.Addr)
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
			if ps.leaves[li] {
				ps.sampled[l.Func] = true
			}
		}
		if r.Frame.File != "" {
			l.File = ps.file(r.Frame.File)
			l.Line = int32(r.Frame.Line)
		}
	}
}

// keepCode stores the code and line rows of the functions the last object
// sampled, so annotate works without the binary.
func (ps *pass) keepCode(cs CodeSource) {
	KeepCode(ps.p, cs, ps.sampled, &ps.codeBytes, ps.file)
}

// KeepCode appends to p.Code the machine code and line rows of the sampled
// functions (ids into p.Funcs) that cs holds, in id order, within the
// per-function and per-profile budgets; *used counts the bytes kept so
// far and file interns a source file's name.
func KeepCode(p *model.Profile, cs CodeSource, sampled map[int32]bool, used *uint64, file func(string) int32) {
	ids := make([]int32, 0, len(sampled))
	for id := range sampled {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		f := p.Funcs[id]
		if f.Size == 0 || f.Size > maxCodePerFunc || *used+f.Size > maxCodeTotal {
			continue
		}
		b, err := cs.Code(f.Start, f.Size)
		if err != nil {
			continue
		}
		c := model.Code{Func: id, Arch: cs.Arch(), Bytes: b}
		for _, r := range cs.Lines(f.Start, f.Start+f.Size) {
			c.Lines = append(c.Lines, model.LineRow{Addr: r.Addr, File: file(r.File), Line: int32(r.Line)})
		}
		p.Code = append(p.Code, c)
		*used += f.Size
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
