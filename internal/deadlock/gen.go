package deadlock

// Registers are read through CO-RE and the unwinder's offsets (set before
// load): one little-endian object serves every architecture.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror" -target bpfel -type dl_edge_key -type dl_edge -type dl_counter -type dl_mode deadlock deadlock.bpf.c -- -I../../bpf/include
