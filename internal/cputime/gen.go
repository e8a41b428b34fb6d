package cputime

// No program reads registers: one little-endian object for every architecture.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror" -target bpfel -type cputime_val -type cputime_curr -type cputime_counter cputime cputime.bpf.c -- -I../../bpf/include
