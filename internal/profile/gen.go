package profile

// No program reads registers (stacks come from sonde_stack.h): one
// little-endian object for every architecture.
//go:generate go tool bpfgen -type profile_key -type profile_error profile profile.bpf.c
