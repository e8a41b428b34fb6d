//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* tcplife: each TCP session when it closes, with its processes, addresses,
 * ports, bytes each way and duration, from the sock:inet_sock_set_state
 * tracepoint (tp_btf, else raw_tp; no kprobes). The byte counts are the
 * socket's own (tcp_sock.bytes_acked, bytes_received), read by CO-RE at
 * the close. */
#include "sonde.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "sonde_maps.h"
#include "sonde_target.h"
#include "sonde_tp.h"
#include "tcplife.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define AF_INET 2
#define AF_INET6 10
#define IPPROTO_TCP 6

enum {
	TCP_ESTABLISHED = 1,
	TCP_SYN_SENT = 2,
	TCP_SYN_RECV = 3,
	TCP_FIN_WAIT1 = 4,
	TCP_CLOSE = 7,
	TCP_LAST_ACK = 9,
	TCP_LISTEN = 10,
};

/* Only the fields read here, relocated by CO-RE (the address and port
 * pairs sit in anonymous unions, which CO-RE looks through). */
struct in6_addr {
	__u8 s6_addr[16];
};

struct sock_common {
	__be32 skc_daddr;
	__be32 skc_rcv_saddr;
	__be16 skc_dport;
	__u16 skc_num;
	unsigned short skc_family;
	struct in6_addr skc_v6_daddr;
	struct in6_addr skc_v6_rcv_saddr;
} __attribute__((preserve_access_index));

struct sock {
	struct sock_common __sk_common;
	__u16 sk_protocol; /* a bit-field before 5.6: read with BPF_CORE_READ_BITFIELD_PROBED */
} __attribute__((preserve_access_index));

struct tcp_sock {
	__u64 bytes_received;
	__u64 bytes_acked;
} __attribute__((preserve_access_index));

/* A session between its start and its close. */
struct session {
	__u64 start_ns; /* when it was established (bcc's start), CLOCK_MONOTONIC ns */
	__u32 pid;      /* the process last seen acting on it in its own context (0: none) */
	char comm[16];
};

/* key: the socket's address (u64); value: its session (struct session).
 * LRU: a socket whose close was missed must not keep its entry forever. */
SONDE_MAP(sessions, BPF_MAP_TYPE_LRU_HASH, __u64, struct session, 65536);

/* key: enum tcplife_counter; value: sessions (u64), per CPU. */
ENUM_COUNTERS(counts, enum tcplife_counter, TCPLIFE_COUNTERS);

KEEP_TYPE(struct tcplife_event, event);

/* Records to user space: one struct tcplife_event per session. */
RINGBUF(events, 1 << 20);

/* The process acting on the socket: connect() (SYN_SENT) and close() or
 * shutdown() (FIN_WAIT1, LAST_ACK) run in its context; the other
 * transitions mostly happen in softirq, where the current task is
 * whoever was interrupted. */
static __always_inline bool in_owner(int newstate)
{
	return newstate == TCP_SYN_SENT || newstate == TCP_FIN_WAIT1 || newstate == TCP_LAST_ACK;
}

static __always_inline void emit(struct sock *sk, struct session *s, __u64 now)
{
	struct tcplife_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		counter_inc(&counts, TCPLIFE_LOST_RING);
		return;
	}
	e->time_ns = now;
	e->duration_ns = now - s->start_ns;
	e->tx_bytes = BPF_CORE_READ((struct tcp_sock *)sk, bytes_acked);
	e->rx_bytes = BPF_CORE_READ((struct tcp_sock *)sk, bytes_received);
	e->pid = s->pid;
	__builtin_memcpy(e->comm, s->comm, sizeof(e->comm));
	e->family = BPF_CORE_READ(sk, __sk_common.skc_family);
	e->lport = BPF_CORE_READ(sk, __sk_common.skc_num);
	e->rport = __builtin_bswap16(BPF_CORE_READ(sk, __sk_common.skc_dport));
	e->pad = 0;
	__builtin_memset(e->laddr, 0, sizeof(e->laddr));
	__builtin_memset(e->raddr, 0, sizeof(e->raddr));
	if (e->family == AF_INET6) {
		BPF_CORE_READ_INTO(&e->laddr, sk, __sk_common.skc_v6_rcv_saddr);
		BPF_CORE_READ_INTO(&e->raddr, sk, __sk_common.skc_v6_daddr);
	} else {
		BPF_CORE_READ_INTO((__be32 *)e->laddr, sk, __sk_common.skc_rcv_saddr);
		BPF_CORE_READ_INTO((__be32 *)e->raddr, sk, __sk_common.skc_daddr);
	}
	ring_submit(&events, e);
}

TP_BTF_OR_RAW(inet_sock_set_state, set_state)
{
	struct sock *sk = (struct sock *)ctx[0];
	int oldstate = (int)ctx[1], newstate = (int)ctx[2];
	/* A listener opening or closing is no session. */
	if (oldstate == TCP_LISTEN || BPF_CORE_READ_BITFIELD_PROBED(sk, sk_protocol) != IPPROTO_TCP)
		return 0;
	__u64 key = (__u64)sk, now = bpf_ktime_get_ns();
	struct session *s = bpf_map_lookup_elem(&sessions, &key);
	if (newstate < TCP_FIN_WAIT1) {
		/* SYN_SENT, SYN_RECV, ESTABLISHED: the session starts at the
		 * last of them, as bcc's tcplife counts it. */
		if (!s) {
			struct session fresh = {};
			if (bpf_map_update_elem(&sessions, &key, &fresh, BPF_NOEXIST) &&
			    bpf_map_update_elem(&sessions, &key, &fresh, BPF_ANY)) {
				counter_inc(&counts, TCPLIFE_LOST_MAP);
				return 0;
			}
			s = bpf_map_lookup_elem(&sessions, &key);
			if (!s)
				return 0;
		}
		s->start_ns = now;
	}
	if (s && in_owner(newstate)) {
		s->pid = bpf_get_current_pid_tgid() >> 32;
		bpf_get_current_comm(s->comm, sizeof(s->comm));
	}
	if (newstate != TCP_CLOSE)
		return 0;
	if (!s) {
		counter_inc(&counts, TCPLIFE_UNBORN);
		return 0;
	}
	if (s->start_ns && (!target_pid || s->pid == target_pid))
		emit(sk, s, now);
	bpf_map_delete_elem(&sessions, &key);
	return 0;
}
