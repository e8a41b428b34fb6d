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
	fileIDs := map[string]string{}
	kernelID := ""
	for _, b := range f.BuildIDs {
		if len(b.ID) == 0 {
			continue
		}
		id := hex.EncodeToString(b.ID)
		if b.Filename == "[kernel.kallsyms]" {
			kernelID = id
		}
		if _, ok := fileIDs[b.Filename]; !ok {
			fileIDs[b.Filename] = id
		}
	}
	funcs := map[string]int32{}
	files := map[string]int32{}
	addFunc := func(dso int32, fr symbolize.Frame) int32 {
		key := fmt.Sprintf("%d\x00%x\x00%s", dso, fr.FuncStart, fr.Func)
		return model.Intern(funcs, &p.Funcs, key, model.Func{Name: fr.Func, DSO: dso, Start: fr.FuncStart, Size: fr.FuncSize})
	}
	addFile := func(name string) int32 {
		return model.Intern(files, &p.Files, name, name)
	}
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
	unmatched := map[int32]string{}
	var codeBytes uint64
	leaves := symbolize.LeafLocs(p) // only their functions' code is kept, as for recordings
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
		switch kind := p.DSOs[d].Kind; {
		case kind == model.DSOKernel && d == c.kernel:
			p.DSOs[d].BuildID = kernelID
			k, delta, err := c.loadKernel(f, o, kernelID)
			if err != nil {
				unmatched[d] = err.Error()
				continue
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
					l.Func = addFunc(owner, fr)
				}
			}
		case info.anon:
			pm, err := symbolize.LoadPerfMap(int(info.pid))
			if err != nil {
				unmatched[d] = fmt.Sprintf("no JIT map /tmp/perf-%d.map", info.pid)
				continue
			}
			p.DSOs[d].Kind = model.DSOJIT
			for _, li := range locs {
				l := &p.Locs[li]
				if fr, ok := pm.Lookup(l.Addr); ok {
					l.Func = addFunc(d, fr)
				}
			}
		case kind == model.DSOUser || kind == model.DSOVDSO:
			e, err := openObject(info, o)
			if err != nil {
				unmatched[d] = err.Error()
				continue
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
					l.Func = addFunc(d, fr)
					if leaves[li] {
						sampled[l.Func] = true
					}
				}
				if fr.File != "" {
					l.File = addFile(fr.File)
					l.Line = int32(fr.Line)
				}
			}
			// Keep the code and line rows of sampled functions, so
			// annotate works without the binary.
			symbolize.KeepCode(p, e, sampled, &codeBytes, addFile)
		}
	}
	if len(unmatched) == 0 {
		return
	}
	// How many samples each unnamed object touches, to rank the list.
	perStack := make([]uint64, len(p.Stacks))
	for _, s := range p.Samples {
		perStack[s.Stack]++
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
			if _, ok := unmatched[d]; ok && !seen[d] {
				seen[d] = true
				hits[d] += perStack[si]
			}
		}
	}
	for d, why := range unmatched {
		res.Unmatched = append(res.Unmatched, Unmatched{Name: p.DSOs[d].Name, BuildID: p.DSOs[d].BuildID, Reason: why, Samples: hits[d]})
	}
	sort.Slice(res.Unmatched, func(i, j int) bool {
		a, b := res.Unmatched[i], res.Unmatched[j]
		if a.Samples != b.Samples {
			return a.Samples > b.Samples
		}
		return a.Name < b.Name
	})
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
		if (id != "" && id == running) || (id == "" && f.OSRelease != "" && f.OSRelease == kernelRelease()) {
			cands = append(cands, "/proc/kallsyms")
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
