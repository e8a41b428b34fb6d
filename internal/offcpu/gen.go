package offcpu

//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror" -target amd64,arm64 -type offcpu_key offcpu offcpu.bpf.c -- -I../../bpf/include
