package pairbpf

// No program reads registers: one little-endian object for every architecture.
//go:generate go tool bpfgen -type pair_event -type pair_counter pair pair.bpf.c
