package outfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

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
	if e := testutil.DirEntries(t, dir); len(e) != 1 {
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
	if e := testutil.DirEntries(t, dir); len(e) != 1 {
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

func TestLinksAndDevices(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target.txt")
	link := filepath.Join(dir, "link.txt")
	os.WriteFile(target, []byte("old"), 0o644)
	os.Symlink("target.txt", link)
	if err := Write(link, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "new" {
		t.Errorf("the link's target holds %q", b)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
		t.Error("the link was replaced by a file")
	}
	// /dev/null is written in place: never renamed over, never removed.
	if err := Write(os.DevNull, func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err }); err != nil {
		t.Fatal(err)
	}
	Write(os.DevNull, func(io.Writer) error { return errors.New("fails") })
	if fi, err := os.Stat(os.DevNull); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("/dev/null is now %v, %v", fi, err)
	}
}
