package profile

// No program reads registers (stacks come from sonde_stack.h): one
// little-endian object for every architecture.
//
// bpfgen (internal/collect/bpfskel/bpfgen) writes only the -type types, the
// object's names, <stem>Maps and load<Stem>; see docs/internals.md §9.
//go:generate go tool bpfgen -type profile_key profile profile.bpf.c
