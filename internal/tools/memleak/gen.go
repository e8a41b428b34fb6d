package memleak

// Registers are read through CO-RE (pt_regs of amd64 or arm64): one
// little-endian object for every architecture.
//
// bpfgen (internal/collect/bpfskel/bpfgen) writes only the -type types, the
// object's names, <stem>Maps and load<Stem>; see docs/internals.md §9.
//go:generate go tool bpfgen -type memleak_stack -type memleak_total -type memleak_alloc memleak memleak.bpf.c
