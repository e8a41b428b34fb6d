package pairbpf

// No program reads registers: one little-endian object for every architecture.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror" -target bpfel -type pair_event -type pair_counter pair pair.bpf.c -- -I../../bpf/include
