package funclat

// No program reads registers: one little-endian object for every architecture.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror" -target bpfel -type funclat_sums funclat funclat.bpf.c -- -I../../bpf/include
