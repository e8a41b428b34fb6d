package record

// The walker reads registers at offsets set before load, so one
// little-endian object serves amd64 and arm64.
//
// bpfgen (internal/collect/bpfskel/bpfgen) writes only the -type types, the
// object's names, <stem>Maps and load<Stem>; see docs/internals.md §9.
//go:generate go tool bpfgen walk record.bpf.c
