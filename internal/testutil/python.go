package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Python is a CPython of this machine that the tests run.
type Python struct {
	Name    string // debian-3.11, pyenv-3.12: a subtest's name
	Minor   int    // the version is 3.Minor
	Bin     string
	Include string // its headers' folder (pyenv's); "" for Debian's
}

// Pythons are the CPythons 3.10–3.13 of this machine: pyenv's (the first
// build of each version that is not free-threaded) and Debian's
// /usr/bin/python3.11. The test skips without any.
func Pythons(t testing.TB) []Python {
	t.Helper()
	var out []Python
	for minor := 10; minor <= 13; minor++ {
		dirs, _ := filepath.Glob(filepath.Join(PyenvRoot(), "versions", fmt.Sprintf("3.%d.*", minor)))
		for _, d := range dirs {
			if strings.HasSuffix(d, "t") {
				continue // free-threaded
			}
			bin := filepath.Join(d, "bin", fmt.Sprintf("python3.%d", minor))
			if _, err := os.Stat(bin); err == nil {
				inc := filepath.Join(d, "include", fmt.Sprintf("python3.%d", minor))
				out = append(out, Python{fmt.Sprintf("pyenv-3.%d", minor), minor, bin, inc})
				break
			}
		}
	}
	if _, err := os.Stat("/usr/bin/python3.11"); err == nil {
		out = append(out, Python{"debian-3.11", 11, "/usr/bin/python3.11", ""})
	}
	if len(out) == 0 {
		t.Skip("no CPython 3.10–3.13 on this machine (pyenv or /usr/bin/python3.11)")
	}
	return out
}

// PyenvRoot is pyenv's folder: what `pyenv root` says, else $PYENV_ROOT,
// else ~/.pyenv.
func PyenvRoot() string {
	if out, err := TryTool("pyenv", "root"); err == nil {
		return strings.TrimSpace(out)
	}
	if root := os.Getenv("PYENV_ROOT"); root != "" {
		return root
	}
	return filepath.Join(os.Getenv("HOME"), ".pyenv")
}
