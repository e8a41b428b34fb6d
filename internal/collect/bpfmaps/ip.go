package bpfmaps

import "net/netip"

// afInet6 is AF_INET6 on Linux (every architecture).
const afInet6 = 10

// IP turns an address as the kernel keeps it in a socket (bpf/include/
// sonde_sock.h's struct sonde_conn: 4 bytes for AF_INET, 16 for AF_INET6)
// into an address, with its IP version, 4 or 6.
func IP(family uint16, b [16]uint8) (netip.Addr, int) {
	if family == afInet6 {
		return netip.AddrFrom16(b), 6
	}
	return netip.AddrFrom4([4]byte(b[:4])), 4
}
