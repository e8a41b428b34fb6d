package testutil

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FlameGraphSuite is FlameGraph's own stackcollapse-perf test input (see
// internal/format/perfdata/testdata/README.md), by file name: perf script
// text of Java, Node, Rust, OCaml and C programs, with frames named by
// blanks only, Java inlining, JIT maps, half-demangled Rust and pid/tid
// forms. The perfdata package folds it and the binary does, both beside
// inferno-collapse-perf.
func FlameGraphSuite(t testing.TB) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(RepoRoot(), "internal", "format", "perfdata", "testdata", "flamegraph", "perf-*.txt.gz"))
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
			t.Fatalf("%s: %v", p, err)
		}
		files[strings.TrimSuffix(filepath.Base(p), ".gz")] = b
	}
	return files
}
