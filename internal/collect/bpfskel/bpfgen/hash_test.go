package main

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

var bpfgenLine = regexp.MustCompile(`(?m)^//go:generate go tool bpfgen (.*)$`)

// TestObjectsFresh: every committed BPF object was generated from the C
// that is there now. bpfgen records the hash of the source and the headers
// it includes in the Go it writes; a .bpf.c or header changed since then
// fails here, without clang: run make generate.
func TestObjectsFresh(t *testing.T) {
	root := testutil.RepoRoot()
	include := filepath.Join(root, "bpf", "include")
	n := 0
	filepath.WalkDir(filepath.Join(root, "internal"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.Name() != "gen.go" {
			return err
		}
		b, _ := os.ReadFile(path)
		for _, m := range bpfgenLine.FindAllSubmatch(b, -1) {
			stem, source := generateArgs(strings.Fields(string(m[1])))
			dir := filepath.Dir(path)
			want, err := sourceHash(filepath.Join(dir, source), []string{include})
			if err != nil {
				t.Errorf("%s: %v", path, err)
				continue
			}
			gens, _ := filepath.Glob(filepath.Join(dir, strings.ToLower(stem)+"_bpf*.go"))
			if len(gens) == 0 {
				t.Errorf("%s: no generated Go for %s", dir, stem)
			}
			for _, g := range gens {
				n++
				if got := recordedHash(t, g); got != want {
					t.Errorf("%s is stale: generated from a source hashed %.12s, the source and its headers now hash %.12s; run make generate", g, got, want)
				}
			}
		}
		return nil
	})
	if n < 10 {
		t.Errorf("checked %d generated files; the walk found too few", n)
	}
}

// generateArgs picks the stem and the source out of a bpfgen command line.
func generateArgs(args []string) (stem, source string) {
	var pos []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			i = len(args)
		case strings.HasPrefix(a, "-") && !strings.Contains(a, "="):
			i++ // -type T, -target T, -cc C, -cflags F
		case strings.HasPrefix(a, "-"):
		default:
			pos = append(pos, a)
		}
	}
	if len(pos) < 2 {
		return "", ""
	}
	return pos[0], pos[1]
}

func recordedHash(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for i := 0; i < 5 && sc.Scan(); i++ {
		if h, ok := strings.CutPrefix(sc.Text(), sourcePrefix); ok {
			return h
		}
	}
	return "(none)"
}

func TestSourceHashFollowsIncludes(t *testing.T) {
	dir := t.TempDir()
	inc := filepath.Join(dir, "include")
	os.Mkdir(inc, 0o755)
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src := filepath.Join(dir, "x.bpf.c")
	write(src, "#include <linux/bpf.h>\n#include \"x.h\"\n#include \"shared.h\"\n")
	write(filepath.Join(dir, "x.h"), "struct x { int a; };\n")
	write(filepath.Join(inc, "shared.h"), "#include \"more.h\"\n")
	write(filepath.Join(inc, "more.h"), "#define MORE 1\n")
	a, err := sourceHash(src, []string{inc})
	if err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(inc, "more.h"), "#define MORE 2\n")
	b, _ := sourceHash(src, []string{inc})
	if a == b {
		t.Error("a changed header did not change the hash")
	}
	write(src, "#include \"missing.h\"\n")
	if _, err := sourceHash(src, []string{inc}); err == nil {
		t.Error("a missing header gave no error")
	}
}
