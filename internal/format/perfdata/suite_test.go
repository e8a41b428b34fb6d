package perfdata

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// flameGraphSuite is FlameGraph's own stackcollapse-perf test input (see
// testdata/README.md): perf script text of Java, Node, Rust, OCaml and C
// programs, with frames named by blanks only, Java inlining, JIT maps,
// half-demangled Rust and pid/tid forms.
func flameGraphSuite(t testing.TB) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "flamegraph", "perf-*.txt.gz"))
	if err != nil || len(paths) != 13 {
		t.Fatalf("FlameGraph's suite: %d files (%v), want 13", len(paths), err)
	}
	files := map[string][]byte{}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(zr)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimSuffix(filepath.Base(p), ".gz")] = b
	}
	return files
}

// TestFoldFlameGraphSuite folds every file of FlameGraph's suite with each
// of inferno-collapse-perf's naming options and compares with what inferno
// makes of the same text in the same test, line for line.
func TestFoldFlameGraphSuite(t *testing.T) {
	inferno := testutil.RequireTool(t, "inferno-collapse-perf", "inferno (cargo install inferno; .ci/run does)")
	opts := []struct {
		flag string
		o    FoldOptions
	}{
		{"--all", FoldOptions{Kernel: true, JIT: true}},
		{"", FoldOptions{}},
		{"--pid", FoldOptions{PID: true}},
		{"--tid", FoldOptions{TID: true}},
		{"--kernel", FoldOptions{Kernel: true}},
		{"--jit", FoldOptions{JIT: true}},
		{"--addrs", FoldOptions{Addrs: true}},
	}
	for name, text := range flameGraphSuite(t) {
		t.Run(strings.TrimSuffix(name, ".txt"), func(t *testing.T) {
			for _, o := range opts {
				var args []string
				if o.flag != "" {
					args = append(args, o.flag)
				}
				cmd := exec.Command(inferno, args...)
				cmd.Stdin = bytes.NewReader(text)
				want, err := cmd.Output()
				if err != nil {
					t.Fatalf("inferno-collapse-perf %s: %v", o.flag, err)
				}
				got := fold(t, string(text), o.o)
				g, w := strings.Split(strings.TrimSpace(got), "\n"), strings.Split(strings.TrimSpace(string(want)), "\n")
				testutil.SameLines(t, name+" "+o.flag, "inferno", g, w)
			}
		})
	}
}
