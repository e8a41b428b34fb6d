package ftrace

// Registers are read through CO-RE: one little-endian object for every architecture.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror" -target bpfel -type ftrace_event -type ftrace_fncfg -type ftrace_shadow -type ftrace_frame ftrace ftrace.bpf.c -- -I../../bpf/include
