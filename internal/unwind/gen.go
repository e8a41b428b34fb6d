package unwind

// The walker reads registers at offsets set before load (Consts), so one
// little-endian object serves amd64 and arm64.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror" -target bpfel -type unwind_counter -type unwind_end -type unwind_flag -type unwind_notice_kind -type unwind_notice walker walker.bpf.c -- -I../../bpf/include
