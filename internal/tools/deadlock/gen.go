package deadlock

// Registers are read through CO-RE and the unwinder's offsets (set before
// load): one little-endian object serves every architecture.
//
// bpfgen (internal/collect/bpfskel/bpfgen) writes only the -type types, the
// object's names, <stem>Maps and load<Stem>; see docs/internals.md §9.
//go:generate go tool bpfgen -type dl_edge_key -type dl_edge -type dl_mode -type dl_kind -type dl_limit deadlock deadlock.bpf.c
