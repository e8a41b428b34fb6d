package layers

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// TestNoBuildOutputTracked: git holds sources, committed BPF objects and
// test fixtures, never what a build or a test run leaves behind.
func TestNoBuildOutputTracked(t *testing.T) {
	root := testutil.RepoRoot()
	out, err := testutil.TryTool("git", "-C", root, "ls-files", "-z")
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	for _, f := range strings.Split(strings.TrimRight(out, "\x00"), "\x00") {
		if why := buildOutput(f); why != "" {
			t.Errorf("%s is tracked: %s", f, why)
			continue
		}
		if st, err := os.Stat(filepath.Join(root, f)); err == nil && st.Size() > 2<<20 && !largeAllowed(f) {
			t.Errorf("%s is tracked and %d MB: only BPF objects and test fixtures may be over 2 MB", f, st.Size()>>20)
		}
	}
}

// buildOutput says why a tracked path is build output ("" if it is not).
func buildOutput(path string) string {
	base := filepath.Base(path)
	switch {
	case strings.HasSuffix(base, ".test"):
		return "a test binary"
	case base == "gmon.out":
		return "a -pg program's profile"
	case strings.HasSuffix(base, ".prof"):
		return "a Go profile"
	case strings.HasPrefix(base, "perf.data") && !strings.Contains(path, "testdata/"):
		return "a perf recording"
	}
	return ""
}

func largeAllowed(path string) bool {
	return strings.HasSuffix(path, "_bpfel.o") || strings.Contains(path, "/testdata/") || strings.HasPrefix(path, "testdata/")
}

func TestBuildOutputNamed(t *testing.T) {
	for path, want := range map[string]bool{
		"internal/collect/unwindtable/unwindtable.test": true,
		"gmon.out":      true,
		"cpu.prof":      true,
		"perf.data.old": true,
		"internal/format/perfdata/testdata/perf.data": false,
		"internal/tools/profile/profile_bpfel.o":      false,
		"cmd/sonde/main.go":                           false,
	} {
		if got := buildOutput(path) != ""; got != want {
			t.Errorf("buildOutput(%q) = %v, want %v", path, got, want)
		}
	}
}
