package bpfmaps

import (
	"net/netip"
	"structs"
)

// afInet6 is AF_INET6 on Linux (every architecture).
const afInet6 = 10

// Conn is bpf/include/sonde_sock.h's struct sonde_conn: the ends of a
// connection as the TCP tools' programs send them. bpfgen writes a field of
// that C type as this type (after checking its layout against the object),
// so the tools share it and its reading instead of each declaring the same
// struct.
type Conn struct {
	_      structs.HostLayout
	Family uint16 // AF_INET or AF_INET6
	Lport  uint16 // local port, host order
	Rport  uint16 // remote port, host order
	Pad    uint16
	Laddr  [16]uint8 // 4 bytes for AF_INET (the rest zero), 16 for AF_INET6
	Raddr  [16]uint8
}

// Ends are the connection's local and remote addresses, and its IP
// version, 4 or 6.
func (c *Conn) Ends() (local, remote netip.Addr, version int) {
	local, version = ip(c.Family, c.Laddr)
	remote, _ = ip(c.Family, c.Raddr)
	return local, remote, version
}

// ip turns an address as the kernel keeps it in a socket (4 bytes for
// AF_INET, 16 for AF_INET6) into an address, with its IP version, 4 or 6.
func ip(family uint16, b [16]uint8) (netip.Addr, int) {
	if family == afInet6 {
		return netip.AddrFrom16(b), 6
	}
	return netip.AddrFrom4([4]byte(b[:4])), 4
}
