package funclat

// No program reads registers: one little-endian object for every architecture.
//go:generate go tool bpfgen -type funclat_event funclat funclat.bpf.c
