package why

// No program reads registers directly (the unwinder reads pt_regs at
// offsets set before load), so one little-endian object serves every
// architecture.
//
// bpfgen (internal/collect/bpfskel/bpfgen) writes only the -type types, the
// object's names, <stem>Maps and load<Stem>; see docs/internals.md §9.
//go:generate go tool bpfgen -type why_key -type why_wait -type why_thread why why.bpf.c
