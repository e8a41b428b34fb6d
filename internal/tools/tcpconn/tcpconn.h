/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* tcpconnect's and tcpaccept's records, shared by the BPF program and Go
 * (bpfgen -type). Include after sonde_sock.h. */
#ifndef TCPCONN_H
#define TCPCONN_H

/* One connection: made (tcpconnect, when it is established or fails) or
 * accepted (tcpaccept, when accept returns it). */
struct tcpconn_event {
	__u64 time_ns;    /* when it was reported, CLOCK_MONOTONIC ns */
	__u64 latency_ns; /* connect: SYN sent to established (or failed); accept: established to accepted */
	__u32 pid;        /* the process that connected or accepted */
	__u32 tid;
	__u32 uid;
	__s32 err;        /* connect: 0, or the errno it failed with */
	char comm[16];
	struct sonde_conn conn; /* its ends */
};

enum tcpconn_counter {
	TCPCONN_LOST_RING,    /* connections not reported: the ring buffer was full */
	TCPCONN_LOST_MAP,     /* connections not reported: the pending map was full */
	TCPCONN_UNTIMED,      /* accepts reported with no latency: established before tracing began */
	TCPCONN_COUNTERS,
};

#endif
