package memleak

// Registers are read through CO-RE (pt_regs of amd64 or arm64): one
// little-endian object for every architecture.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror" -target bpfel -type memleak_stack -type memleak_total -type memleak_alloc -type memleak_fn -type memleak_counter memleak memleak.bpf.c -- -I../../bpf/include
