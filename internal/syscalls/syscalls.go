// Package syscalls names system calls by number for the architectures sonde
// runs on. The tables are generated from Linux's UAPI headers
// (linux-libc-dev): asm/unistd_64.h for amd64, asm-generic/unistd.h for
// arm64.
package syscalls

import (
	"fmt"
	"runtime"
)

// Name returns the syscall's name on arch (GOARCH), or "syscall_N".
func Name(arch string, nr int) string {
	t := amd64Names
	if arch == "arm64" || arch == "riscv64" {
		t = genericNames
	}
	if n, ok := t[nr]; ok {
		return n
	}
	return fmt.Sprintf("syscall_%d", nr)
}

// Native names a syscall of the running architecture.
func Native(nr int) string { return Name(runtime.GOARCH, nr) }

// Number finds a syscall by name on arch; -1 when unknown.
func Number(arch, name string) int {
	t := amd64Names
	if arch == "arm64" || arch == "riscv64" {
		t = genericNames
	}
	for k, v := range t {
		if v == name {
			return k
		}
	}
	return -1
}
