package runqlat

// No program reads registers: one little-endian object for every architecture.
//go:generate go tool bpfgen -type runqlat_key -type runqlat_split -type runqlat_counter runqlat runqlat.bpf.c
