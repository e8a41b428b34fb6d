package files

// No program reads registers: one little-endian object for every architecture.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror" -target bpfel -type files_key -type files_stats -type files_path -type files_slow -type files_counter -type files_rec_type files files.bpf.c -- -I../../bpf/include
