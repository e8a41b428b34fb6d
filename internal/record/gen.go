package record

// The walker reads registers at offsets set before load, so one
// little-endian object serves amd64 and arm64.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror" -target bpfel -type walk_error walk record.bpf.c -- -I../../bpf/include
