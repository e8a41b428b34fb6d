package ftrace

// Registers are read through CO-RE: one little-endian object for every architecture.
//
// bpfgen (internal/collect/bpfskel/bpfgen) writes only the -type types, the
// object's names, <stem>Maps and load<Stem>; see docs/internals.md §9.
//go:generate go tool bpfgen -type ftrace_event -type ftrace_fncfg -type ftrace_shadow -type ftrace_frame ftrace ftrace.bpf.c
