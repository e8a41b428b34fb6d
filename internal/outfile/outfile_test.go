package outfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// entries lists dir, so a test sees a temporary file left behind.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n []string
	for _, e := range es {
		n = append(n, e.Name())
	}
	return n
}

func TestWriteCommits(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.txt")
	if err := Write(p, func(w io.Writer) error { _, err := io.WriteString(w, "hello\n"); return err }); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	st, _ := os.Stat(p)
	if string(b) != "hello\n" || st.Mode().Perm() != Mode {
		t.Errorf("content %q, mode %v", b, st.Mode())
	}
	if e := entries(t, dir); len(e) != 1 {
		t.Errorf("files left: %q", e)
	}
}

func TestFailedWriteKeepsTheOldFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.txt")
	os.WriteFile(p, []byte("old"), 0o644)
	boom := errors.New("render failed")
	err := Write(p, func(w io.Writer) error {
		io.WriteString(w, strings.Repeat("x", 3<<20)) // past the buffer: the temporary file has data
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Errorf("old file now %d bytes", len(b))
	}
	if e := entries(t, dir); len(e) != 1 {
		t.Errorf("files left: %q", e)
	}
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ path, want string }{
		{"", "no output file"},
		{dir, "is a directory"},
		{filepath.Join(dir, "missing", "x"), "no such file"},
		{filepath.Join(dir, "ok"), ""},
	} {
		err := Check(c.path)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("Check(%q) = %v, want %q", c.path, err, c.want)
		}
	}
}
