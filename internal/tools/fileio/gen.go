package fileio

// No program reads registers: one little-endian object for every architecture.
//
// bpfgen (internal/collect/bpfskel/bpfgen) writes only the -type types, the
// object's names, <stem>Maps and load<Stem>; see docs/internals.md §9.
//go:generate go tool bpfgen -type files_key -type files_stats -type files_path -type files_slow -type files_rec_type -type files_io files files.bpf.c
