package runqlat

//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror" -target amd64,arm64 -type runqlat_key runqlat runqlat.bpf.c -- -I../../bpf/include
