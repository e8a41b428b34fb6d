package cputime

// No program reads registers: one little-endian object for every architecture.
//go:generate go tool bpfgen -type cputime_val -type cputime_curr -type cputime_counter cputime cputime.bpf.c
