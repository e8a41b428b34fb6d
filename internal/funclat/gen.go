package funclat

//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror" -target amd64,arm64 -type funclat_event funclat funclat.bpf.c -- -I../../bpf/include
