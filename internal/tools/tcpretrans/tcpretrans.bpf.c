//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* tcpretrans: each TCP retransmit with its connection and state, from the
 * tcp:tcp_retransmit_skb tracepoint (tp_btf, else raw_tp; no kprobes). */
#include "sonde.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "sonde_maps.h"
#include "sonde_tp.h"
#include "sonde_sock.h"
#include "tcpretrans.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* key: enum tcpretrans_counter; value: retransmits (u64), per CPU. */
ENUM_COUNTERS(lost, enum tcpretrans_counter, TCPRETRANS_COUNTERS);

KEEP_TYPE(struct tcpretrans_event, event);

/* Records to user space: one struct tcpretrans_event per retransmit. */
RINGBUF(events, 1 << 20);

TP_BTF_OR_RAW(tcp_retransmit_skb, retransmit)
{
	struct sock *sk = (struct sock *)ctx[0];
	if (!sk)
		return 0;
	struct tcpretrans_event *e = ring_reserve(&events, sizeof(*e), &lost, TCPRETRANS_LOST_RING);
	if (!e)
		return 0;
	e->time_ns = bpf_ktime_get_ns();
	e->pid = bpf_get_current_pid_tgid() >> 32;
	e->state = BPF_CORE_READ(sk, __sk_common.skc_state);
	sock_conn(sk, &e->conn);
	ring_submit(&events, e);
	return 0;
}
