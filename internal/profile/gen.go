package profile

// No program reads registers (stacks come from sonde_stack.h): one
// little-endian object for every architecture.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror" -target bpfel -type profile_key -type profile_error profile profile.bpf.c -- -I../../bpf/include
