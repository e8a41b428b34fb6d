// Package syscalls names system calls by number for the architectures sonde
// runs on. The tables are generated from Linux's UAPI headers
// (linux-libc-dev): asm/unistd_64.h for amd64, asm-generic/unistd.h for
// arm64, and one table for the numbers from 424 on, which Linux 5.1 made
// the same on every architecture.
package syscalls

import (
	"fmt"
	"runtime"
)

// table is arch's own part: the numbers below 424.
func table(arch string) map[int]string {
	if arch == "arm64" || arch == "riscv64" {
		return genericNames
	}
	return amd64Names
}

// Name returns the syscall's name on arch (GOARCH), or "syscall_N".
func Name(arch string, nr int) string {
	if n, ok := table(arch)[nr]; ok {
		return n
	}
	if n, ok := unifiedNames[nr]; ok {
		return n
	}
	return fmt.Sprintf("syscall_%d", nr)
}

// Native names a syscall of the running architecture.
func Native(nr int) string { return Name(runtime.GOARCH, nr) }

// Number finds a syscall by name on arch; -1 when unknown.
func Number(arch, name string) int {
	for _, t := range []map[int]string{table(arch), unifiedNames} {
		for k, v := range t {
			if v == name {
				return k
			}
		}
	}
	return -1
}
