/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* tcpretrans's records, shared by the BPF program and Go (bpfgen -type).
 * Include after sonde_sock.h. */
#ifndef TCPRETRANS_H
#define TCPRETRANS_H

/* One retransmitted segment. */
struct tcpretrans_event {
	__u64 time_ns; /* CLOCK_MONOTONIC ns */
	__u32 pid;     /* the task that was running (often none: a timer in softirq) */
	__u32 state;   /* the socket's TCP state (TCP_ESTABLISHED…) */
	struct sonde_conn conn;
};

enum tcpretrans_counter {
	TCPRETRANS_LOST_RING, /* retransmits not reported: the ring buffer was full */
	TCPRETRANS_COUNTERS,
};

#endif
