package cputime

//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror" -target amd64,arm64 -type cputime_val -type cputime_curr cputime cputime.bpf.c -- -I../../bpf/include
