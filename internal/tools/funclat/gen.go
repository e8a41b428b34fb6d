package funclat

// No program reads registers: one little-endian object for every architecture.
//
// bpfgen (internal/collect/bpfskel/bpfgen) writes only the -type types, the
// object's names, <stem>Maps and load<Stem>; see docs/internals.md §9.
//go:generate go tool bpfgen funclat funclat.bpf.c
