package irqs

// No program reads registers: one little-endian object for every architecture.
//
// bpfgen (internal/collect/bpfskel/bpfgen) writes only the -type types, the
// object's names, <stem>Maps and load<Stem>; see docs/internals.md §9.
//go:generate go tool bpfgen -type irqs_total -type irqs_soft irqs irqs.bpf.c
