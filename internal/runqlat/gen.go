package runqlat

// No program reads registers: one little-endian object for every architecture.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror" -target bpfel -type runqlat_key -type runqlat_split -type runqlat_counter runqlat runqlat.bpf.c -- -I../../bpf/include
