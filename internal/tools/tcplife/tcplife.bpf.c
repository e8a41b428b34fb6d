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
#include "sonde_sock.h"
#include "tcplife.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* A session between its start and its close. */
struct session {
	__u64 start_ns; /* when it was established (bcc's start), CLOCK_MONOTONIC ns */
	__u32 pid;      /* the process last seen acting on it in its own context (0: none) */
	__u8 connected; /* it was opened by connect() and established: its SYN was acknowledged */
	__u8 fin_sent;  /* it queued a FIN (FIN_WAIT1 or LAST_ACK) */
	__u8 pad[2];
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
	struct tcplife_event *e = ring_reserve(&events, sizeof(*e), &counts, TCPLIFE_LOST_RING);
	if (!e)
		return;
	e->time_ns = now;
	e->duration_ns = now - s->start_ns;
	/* The counters count sequence numbers: data bytes are what is left
	 * without the SYN and FIN among them. */
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	__u64 acked = BPF_CORE_READ(tp, bytes_acked), received = BPF_CORE_READ(tp, bytes_received);
	__u64 ctl = s->connected;
	if (s->fin_sent && BPF_CORE_READ(tp, snd_una) == BPF_CORE_READ(tp, write_seq))
		ctl++; /* the FIN, acknowledged with everything before it */
	e->tx_bytes = acked > ctl ? acked - ctl : 0;
	unsigned long flags = BPF_CORE_READ(sk, __sk_common.skc_flags);
	bool fin_received = flags & (1UL << bpf_core_enum_value(enum sock_flags, SOCK_DONE));
	e->rx_bytes = received > fin_received ? received - fin_received : 0;
	e->pid = s->pid;
	__builtin_memcpy(e->comm, s->comm, sizeof(e->comm));
	sock_conn(sk, &e->conn);
	ring_submit(&events, e);
}

TP_BTF_OR_RAW(inet_sock_set_state, set_state)
{
	struct sock *sk = (struct sock *)ctx[0];
	int oldstate = (int)ctx[1], newstate = (int)ctx[2];
	/* A listener opening or closing is no session. */
	if (oldstate == TCP_LISTEN || !sock_is_tcp(sk))
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
	if (s && oldstate == TCP_SYN_SENT && newstate == TCP_ESTABLISHED)
		s->connected = 1;
	if (s && (newstate == TCP_FIN_WAIT1 || newstate == TCP_LAST_ACK))
		s->fin_sent = 1;
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
