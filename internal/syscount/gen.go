package syscount

//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror" -target amd64,arm64 -type syscount_key -type syscount_val syscount syscount.bpf.c -- -I../../bpf/include
