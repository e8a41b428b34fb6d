package testutil

import (
	"debug/elf"
	"os"
	"testing"
)

// Open opens path for reading; the file is closed when the test ends.
func Open(t testing.TB, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// OpenELF opens the ELF file at path, closed when the test ends. A path
// this machine lacks (a system library of another distribution or
// version) skips the test.
func OpenELF(t testing.TB, path string) *elf.File {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s: %v", path, err)
	}
	f, err := elf.NewFile(Open(t, path))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return f
}
