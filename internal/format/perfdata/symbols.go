package perfdata

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/symbolize"
)

// buildIDDir is where perf keeps its build-id cache.
func (o Options) buildIDDir() string {
	if o.BuildIDDir != "" {
		return o.BuildIDDir
	}
	if d := os.Getenv("PERF_BUILDID_DIR"); d != "" {
		return d
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".debug")
	}
	return ""
}

func (o Options) debugDir() string {
	if o.DebugDir != "" {
		return o.DebugDir
	}
	return "/usr/lib/debug"
}

// cacheCandidates lists where perf's build-id cache may hold an object:
// ~/.debug/.build-id/ab/cdef…/<file> (a link to the next form) and
// ~/.debug/<path>/<build-id>/<file>.
func (o Options) cacheCandidates(path, id string, files ...string) []string {
	dir := o.buildIDDir()
	if dir == "" || len(id) < 3 {
		return nil
	}
	var out []string
	for _, f := range files {
		out = append(out, filepath.Join(dir, ".build-id", id[:2], id[2:], f))
		if path != "" {
			out = append(out, filepath.Join(dir, path, id, f))
		}
	}
	return out
}

// symbolize names every location: each object is opened once, found by
// build-id where the recording has one.
func (c *converter) symbolize(f *File, o Options, res *Result) {
	p := &c.prof
	fileIDs, kernelID := recordedBuildIDs(f)
	s := &symbolizer{c: c, p: p, f: f, o: o, funcs: map[string]int32{}, files: map[string]int32{},
		leaves: symbolize.LeafLocs(p), unmatched: map[int32]string{}}
	byDSO := map[int32][]int32{}
	for i, l := range p.Locs {
		if l.DSO >= 0 {
			byDSO[l.DSO] = append(byDSO[l.DSO], int32(i))
		}
	}
	ids := make([]int32, 0, len(byDSO))
	for d := range byDSO {
		ids = append(ids, d)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, d := range ids {
		locs := byDSO[d]
		info := c.dsoInfo[d]
		if info.named {
			continue
		}
		if info.buildID == "" {
			info.buildID = fileIDs[info.path]
		}
		p.DSOs[d].BuildID = info.buildID
		var err error
		switch kind := p.DSOs[d].Kind; {
		case kind == model.DSOKernel && d == c.kernel:
			p.DSOs[d].BuildID = kernelID
			err = s.kernel(d, locs, kernelID)
		case info.anon:
			err = s.jit(d, info, locs)
		case kind == model.DSOUser || kind == model.DSOVDSO:
			err = s.object(d, info, locs)
		}
		if err != nil {
			s.unmatched[d] = err.Error()
		}
	}
	if len(s.unmatched) == 0 {
		return
	}
	res.Unmatched = append(res.Unmatched, s.unmatchedList()...)
	sort.Slice(res.Unmatched, func(i, j int) bool {
		a, b := res.Unmatched[i], res.Unmatched[j]
		if a.Samples != b.Samples {
			return a.Samples > b.Samples
		}
		return a.Name < b.Name
	})
}

// recordedBuildIDs returns the build-ids the recording lists, by file name
// (the first one where a name repeats), and the kernel's.
func recordedBuildIDs(f *File) (byFile map[string]string, kernel string) {
	byFile = map[string]string{}
	for _, b := range f.BuildIDs {
		if len(b.ID) == 0 {
			continue
		}
		id := hex.EncodeToString(b.ID)
		if b.Filename == "[kernel.kallsyms]" {
			kernel = id
		}
		if _, ok := byFile[b.Filename]; !ok {
			byFile[b.Filename] = id
		}
	}
	return byFile, kernel
}

// symbolizer names the locations of one recording's objects.
type symbolizer struct {
	c         *converter
	p         *model.Profile
	f         *File
	o         Options
	funcs     map[string]int32 // function key → index in p.Funcs
	files     map[string]int32 // file name → index in p.Files
	leaves    map[int32]bool   // locations samples stopped in: only their functions' code is kept, as for recordings
	codeBytes uint64           // code kept so far, across objects
	unmatched map[int32]string // DSO → why its locations stay unnamed
}

func (s *symbolizer) addFunc(dso int32, fr symbolize.Frame) int32 {
	key := fmt.Sprintf("%d\x00%x\x00%s", dso, fr.FuncStart, fr.Func)
	return model.Intern(s.funcs, &s.p.Funcs, key, model.Func{Name: fr.Func, DSO: dso, Start: fr.FuncStart, Size: fr.FuncSize})
}

func (s *symbolizer) addFile(name string) int32 {
	return model.Intern(s.files, &s.p.Files, name, name)
}

// kernel names the kernel's locations from kallsyms, moving those in a
// module to a DSO of their own.
func (s *symbolizer) kernel(d int32, locs []int32, kernelID string) error {
	p := s.p
	k, delta, err := s.c.loadKernel(s.f, s.o, kernelID)
	if err != nil {
		return err
	}
	modules := map[string]int32{}
	for _, li := range locs {
		l := &p.Locs[li]
		addr := l.Addr - delta
		owner := d
		if mod := k.Module(addr); mod != "" {
			id, ok := modules[mod]
			if !ok {
				id = int32(len(p.DSOs))
				p.DSOs = append(p.DSOs, model.DSO{Name: "[" + mod + "]", Kind: model.DSOModule})
				modules[mod] = id
			}
			owner = id
			l.DSO = id
		}
		if fr, ok := k.Lookup(addr); ok {
			fr.FuncStart += delta
			l.Func = s.addFunc(owner, fr)
		}
	}
	return nil
}

// jit names the locations of an anonymous mapping from the process's perf map.
func (s *symbolizer) jit(d int32, info dsoInfo, locs []int32) error {
	pm, err := symbolize.LoadPerfMap(int(info.pid))
	if err != nil {
		return fmt.Errorf("no JIT map /tmp/perf-%d.map", info.pid)
	}
	s.p.DSOs[d].Kind = model.DSOJIT
	for _, li := range locs {
		l := &s.p.Locs[li]
		if fr, ok := pm.Lookup(l.Addr); ok {
			l.Func = s.addFunc(d, fr)
		}
	}
	return nil
}

// object names the locations of an ELF object (or the vDSO), turning their
// file offsets into addresses, with function, file and line.
func (s *symbolizer) object(d int32, info dsoInfo, locs []int32) error {
	p := s.p
	e, err := openObject(info, s.o)
	if err != nil {
		return err
	}
	if p.DSOs[d].BuildID == "" {
		p.DSOs[d].BuildID = e.BuildID
	}
	sampled := map[int32]bool{}
	for _, li := range locs {
		l := &p.Locs[li]
		l.Addr = e.FileOffsetToAddr(l.Addr)
		fr, ok := e.Lookup(l.Addr)
		if !ok {
			continue
		}
		if fr.Func != "" {
			l.Func = s.addFunc(d, fr)
			if s.leaves[li] {
				sampled[l.Func] = true
			}
		}
		if fr.File != "" {
			l.File = s.addFile(fr.File)
			l.Line = int32(fr.Line)
		}
	}
	// Keep the code and line rows of sampled functions, so
	// annotate works without the binary.
	symbolize.KeepCode(p, e, sampled, &s.codeBytes, s.addFile)
	return nil
}

// unmatchedList describes the objects left unnamed, with how many samples
// each touches (to rank the list).
func (s *symbolizer) unmatchedList() []Unmatched {
	p := s.p
	perStack := make([]uint64, len(p.Stacks))
	for _, smp := range p.Samples {
		perStack[smp.Stack]++
	}
	hits := map[int32]uint64{}
	seen := map[int32]bool{}
	for si, st := range p.Stacks {
		if perStack[si] == 0 {
			continue
		}
		clear(seen)
		for _, li := range st {
			d := p.Locs[li].DSO
			if _, ok := s.unmatched[d]; ok && !seen[d] {
				seen[d] = true
				hits[d] += perStack[si]
			}
		}
	}
	var list []Unmatched
	for d, why := range s.unmatched {
		list = append(list, Unmatched{Name: p.DSOs[d].Name, BuildID: p.DSOs[d].BuildID, Reason: why, Samples: hits[d]})
	}
	return list
}

// openObject finds the object a mapping named, checked by build-id when
// the recording has one: perf's build-id cache first (it holds exactly the
// recorded file), then the path itself, then debug directories.
func openObject(info dsoInfo, o Options) (*symbolize.ELF, error) {
	path := strings.TrimSuffix(info.path, " (deleted)")
	id := info.buildID
	opt := symbolize.Options{DebugDir: o.debugDir()}
	names := []string{"elf"}
	if path == "[vdso]" {
		names = []string{"vdso", "elf"}
	}
	for _, cand := range o.cacheCandidates(path, id, names...) {
		if e, err := symbolize.OpenELF(cand, opt); err == nil && e.BuildID == id {
			return e, nil
		}
	}
	if path == "[vdso]" {
		v, _, err := symbolize.VDSO()
		if err != nil {
			return nil, fmt.Errorf("no vDSO image: %w", err)
		}
		if id != "" && v.BuildID != id {
			return nil, fmt.Errorf("build-id %s not in %s, and this kernel's vDSO differs", id, o.buildIDDir())
		}
		return v, nil
	}
	local := path
	if o.SymFS != "" {
		local = filepath.Join(o.SymFS, path)
	}
	e, err := symbolize.OpenELF(local, opt)
	if err == nil && (id == "" || e.BuildID == id) {
		return e, nil
	}
	if id != "" {
		dbg := filepath.Join(o.debugDir(), ".build-id", id[:min(2, len(id))], id[min(2, len(id)):]+".debug")
		if d, derr := symbolize.OpenELF(dbg, opt); derr == nil && d.BuildID == id {
			return d, nil
		}
	}
	switch {
	case err != nil:
		return nil, fmt.Errorf("not found (looked in %s and the perf build-id cache %s)", local, o.buildIDDir())
	default:
		return nil, fmt.Errorf("%s has build-id %s, the recording %s; not in the build-id cache %s", local, e.BuildID, id, o.buildIDDir())
	}
}

// loadKernel finds kallsyms of the recorded kernel and the difference
// between its load address then and in that kallsyms (KASLR).
func (c *converter) loadKernel(f *File, o Options, id string) (*symbolize.Kernel, uint64, error) {
	var cands []string
	switch {
	case o.Kallsyms != "":
		cands = []string{o.Kallsyms}
	default:
		running := symbolize.KernelBuildID()
		// A file cut before perf's header sections (a killed perf record)
		// names no kernel at all: take this one, as perf report does, and
		// say so.
		unnamed := id == "" && f.OSRelease == "" && f.Cut
		if (id != "" && id == running) || (id == "" && f.OSRelease != "" && f.OSRelease == kernelRelease()) || unnamed {
			cands = append(cands, "/proc/kallsyms")
		}
		if unnamed {
			c.prof.Meta.Warnings = append(c.prof.Meta.Warnings, "kernel frames are named from this machine's kernel ("+kernelRelease()+"): the cut recording does not say which kernel it ran on")
		}
		cands = append(cands, o.cacheCandidates("[kernel.kallsyms]", id, "kallsyms")...)
	}
	var lastErr error
	for _, path := range cands {
		b, err := os.ReadFile(path)
		if err != nil {
			lastErr = err
			continue
		}
		k, err := symbolize.ParseKallsyms(bytes.NewReader(b))
		if err != nil {
			lastErr = fmt.Errorf("%s: %w", path, err)
			continue
		}
		var delta uint64
		if c.kernRef != "" && c.kernAddr != 0 {
			if at, ok := symbolAddr(b, c.kernRef); ok {
				delta = c.kernAddr - at
			}
		}
		return k, delta, nil
	}
	if lastErr != nil && len(cands) == 1 && o.Kallsyms != "" {
		return nil, 0, lastErr
	}
	return nil, 0, fmt.Errorf("the recorded kernel (%s, build-id %s) is not running here and its kallsyms is not in the build-id cache %s (perf archive on the recording machine puts it there)", f.OSRelease, orNone(id), o.buildIDDir())
}

func orNone(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func kernelRelease() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// symbolAddr finds one symbol's address in kallsyms text.
func symbolAddr(kallsyms []byte, name string) (uint64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(kallsyms))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 3 && f[2] == name {
			a, err := strconv.ParseUint(f[0], 16, 64)
			return a, err == nil && a != 0
		}
	}
	return 0, false
}
