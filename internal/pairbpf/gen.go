package pairbpf

//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror" -target amd64,arm64 -type pair_event pair pair.bpf.c -- -I../../bpf/include
