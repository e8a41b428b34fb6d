package unwind

// The walker reads registers at offsets set before load (Consts), so one
// little-endian object serves amd64 and arm64.
//
// bpfgen (internal/collect/bpfskel/bpfgen) writes only the -type types, the
// object's names, <stem>Maps and load<Stem>; see docs/internals.md §9.
//go:generate go tool bpfgen -type unwind_notice_kind -type unwind_notice -type unwind_row -type unwind_rule -type unwind_proc -type unwind_stack -type unwind_file -type unwind_file_key -type py_proc walker walker.bpf.c
