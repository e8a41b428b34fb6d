/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* tcplife's records, shared by the BPF program and Go (bpfgen -type). */
#ifndef TCPLIFE_H
#define TCPLIFE_H

/* One TCP session, sent when its socket closes. */
struct tcplife_event {
	__u64 time_ns;     /* when it closed, CLOCK_MONOTONIC ns */
	__u64 duration_ns; /* established to closed */
	__u64 tx_bytes;    /* bytes sent and acknowledged by the peer (tcp_sock.bytes_acked) */
	__u64 rx_bytes;    /* bytes received (tcp_sock.bytes_received) */
	__u32 pid;         /* the process that opened or closed it (0: not seen) */
	char comm[16];     /* that process's name */
	struct sonde_conn conn; /* its ends (sonde_sock.h) */
};

enum tcplife_counter {
	TCPLIFE_LOST_RING,   /* sessions not reported: the ring buffer was full */
	TCPLIFE_LOST_MAP,    /* sessions not timed: the socket map was full */
	TCPLIFE_UNBORN,      /* sessions not reported: open before tracing began */
	TCPLIFE_COUNTERS,
};

#endif
