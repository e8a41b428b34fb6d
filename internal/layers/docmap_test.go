package layers

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// TestInternalsMapMatchesTree: docs/internals.md's package map names every
// package of internal/ (as go list does), and no package that is gone. A
// tool with a page of its own (internal/tools/X and docs/X.md) may leave
// the map to its page, so adding a tool touches no list.
func TestInternalsMapMatchesTree(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "docs", "internals.md"))
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	for pkg := range goList(t) {
		if rel, ok := strings.CutPrefix(pkg, Module+"/"); ok && strings.HasPrefix(rel, "internal/") {
			have = append(have, rel)
		}
	}
	slices.Sort(have)
	_, rest, ok1 := strings.Cut(string(doc), "<!-- package map -->")
	pkgMap, _, ok2 := strings.Cut(rest, "<!-- end of package map -->")
	if !ok1 || !ok2 {
		t.Fatal("docs/internals.md has no package map between <!-- package map --> and <!-- end of package map -->")
	}
	var listed []string
	for _, line := range strings.Split(pkgMap, "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "internal/") {
			listed = append(listed, strings.TrimSuffix(f[0], "/"))
		}
	}
	slices.Sort(listed)
	for _, p := range have {
		if tool, ok := strings.CutPrefix(p, "internal/tools/"); ok && !strings.Contains(tool, "/") {
			if _, err := os.Stat(filepath.Join(testutil.RepoRoot(), "docs", tool+".md")); err == nil {
				continue
			}
		}
		if _, found := slices.BinarySearch(listed, p); !found {
			t.Errorf("docs/internals.md's package map lacks %s", p)
		}
	}
	for _, p := range listed {
		if _, found := slices.BinarySearch(have, p); !found {
			t.Errorf("docs/internals.md's package map lists %s, which go list does not know", p)
		}
	}
}
