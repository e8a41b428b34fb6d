package procfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// LibcOf is the C library process pid maps, as a path through its root
// (so a container's own libc is the one named); "" when it maps none (a
// static program).
func LibcOf(pid int) (string, error) {
	ms, err := ReadMaps(pid)
	if err != nil {
		return "", fmt.Errorf("reading the mappings of process %d: %w", pid, err)
	}
	for _, m := range ms {
		if b := filepath.Base(m.Path); strings.HasPrefix(b, "libc.so") || strings.HasPrefix(b, "libc-") {
			return fmt.Sprintf("/proc/%d/root%s", pid, m.Path), nil
		}
	}
	return "", nil
}

// Libc is the C library of process pid (0: the system's), from LibcOf or
// SystemLibc; "" without an error when there is none (a static program, a
// system without libc.so.6), for the caller to say what to give instead.
func Libc(pid int) (string, error) {
	if pid > 0 {
		return LibcOf(pid)
	}
	return SystemLibc(), nil
}

// SystemLibc is the machine's libc.so.6 ("" when none is found in the usual
// library directories).
func SystemLibc() string {
	for _, dir := range []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
		"/usr/lib/aarch64-linux-gnu", "/lib/arm-linux-gnueabihf", "/lib64", "/usr/lib64", "/lib", "/usr/lib"} {
		p := filepath.Join(dir, "libc.so.6")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}
