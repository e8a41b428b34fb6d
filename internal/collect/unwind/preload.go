package unwind

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// maxPreload bounds how many files Preload follows through DT_NEEDED.
const maxPreload = 64

// Preload builds and loads, before a command starts, the tables of the
// files its exec will map for certain: the executable, its interpreter
// (PT_INTERP) and the shared objects its DT_NEEDED entries name, found
// where the dynamic loader looks by default. Without it the command's
// first samples are walked by frame pointers while its tables are built.
// The rows stay loaded for the loader's life, so the loads that the exec
// and the libraries' mmaps trigger find them in place. A dependency not
// found is skipped (the walker asks for it when it is mapped); errors
// are counted with the loader's (Stats.LoadErrors). It returns the files
// loaded.
func (l *Loader) Preload(exe string) []string {
	files, err := Deps(exe, os.Getenv("LD_LIBRARY_PATH"))
	if err != nil {
		l.loadError(err)
		return nil
	}
	var done []string
	for _, f := range files {
		t, key, err := l.cache.Get(f)
		tracef("preload %s err=%v", f, err)
		if err != nil {
			continue // no unwind info, or unreadable: the walk falls back as it would anyway
		}
		l.mu.Lock()
		l.idle.take(key)
		lt := l.tables[key]
		if lt == nil {
			lt = l.loadTable(t, key)
		}
		if lt == nil {
			l.mu.Unlock()
			continue
		}
		lt.refs++ // the loader's own reference: never released
		l.addFile(lt, f, f, t)
		l.mu.Unlock()
		done = append(done, f)
	}
	return done
}

func (l *Loader) loadError(err error) {
	l.mu.Lock()
	l.stats.LoadErrors++
	l.stats.LastLoadErr = err.Error()
	l.mu.Unlock()
}

// Deps lists exe, its interpreter and the shared objects it needs,
// transitively, as the dynamic loader finds them without its cache:
// libPath (LD_LIBRARY_PATH), the object's DT_RPATH/DT_RUNPATH ($ORIGIN
// expanded), the interpreter's own directory and the system's default
// directories. Objects of another ELF class or machine are skipped, as
// the loader skips them.
func Deps(exe, libPath string) ([]string, error) {
	f, err := elf.Open(exe)
	if err != nil {
		return nil, fmt.Errorf("reading %s for its unwind tables: %w", exe, err)
	}
	class, machine := f.Class, f.Machine
	f.Close()
	out := []string{exe}
	seen := map[string]bool{exe: true}
	var sys []string
	for i := 0; i < len(out) && len(out) < maxPreload; i++ {
		f, err := elf.Open(out[i])
		if err != nil {
			continue
		}
		if interp := interpreter(f); interp != "" && !seen[interp] {
			seen[interp] = true
			out = append(out, interp)
			if real, err := filepath.EvalSymlinks(interp); err == nil {
				sys = append(sys, filepath.Dir(real))
			}
		}
		needed, _ := f.DynString(elf.DT_NEEDED)
		var dirs []string
		dirs = append(dirs, filepath.SplitList(libPath)...)
		for _, tag := range []elf.DynTag{elf.DT_RPATH, elf.DT_RUNPATH} {
			vals, _ := f.DynString(tag)
			for _, v := range vals {
				for _, d := range filepath.SplitList(v) {
					dirs = append(dirs, strings.ReplaceAll(d, "$ORIGIN", filepath.Dir(out[i])))
				}
			}
		}
		f.Close()
		dirs = append(append(dirs, sys...), defaultLibDirs()...)
		for _, n := range needed {
			if p := findLib(n, dirs, class, machine); p != "" && !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// interpreter is f's PT_INTERP path ("" for a static or non-executable file).
func interpreter(f *elf.File) string {
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP || p.Filesz > 4096 {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return ""
		}
		return strings.TrimRight(string(b), "\x00")
	}
	return ""
}

// findLib finds a DT_NEEDED name in dirs: a name with a slash is a path.
func findLib(name string, dirs []string, class elf.Class, machine elf.Machine) string {
	if strings.Contains(name, "/") {
		return name
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		p := filepath.Join(d, name)
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		ok := f.Class == class && f.Machine == machine
		f.Close()
		if ok {
			return p
		}
	}
	return ""
}

// defaultLibDirs are the directories the dynamic loader searches last
// (Debian's multiarch ones first).
func defaultLibDirs() []string {
	triple := map[string]string{"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu", "arm": "arm-linux-gnueabihf"}[runtime.GOARCH]
	var dirs []string
	if triple != "" {
		dirs = append(dirs, "/lib/"+triple, "/usr/lib/"+triple)
	}
	return append(dirs, "/lib64", "/usr/lib64", "/lib", "/usr/lib")
}
