package syscount

// No program reads registers: one little-endian object for every architecture.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror" -target bpfel -type syscount_key -type syscount_val syscount syscount.bpf.c -- -I../../bpf/include
