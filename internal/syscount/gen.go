package syscount

// No program reads registers: one little-endian object for every architecture.
//go:generate go tool bpfgen -type syscount_key -type syscount_val syscount syscount.bpf.c
