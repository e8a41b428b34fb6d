package profile

//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror" -target amd64,arm64 -type profile_key profile profile.bpf.c -- -I../../bpf/include
