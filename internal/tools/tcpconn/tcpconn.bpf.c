//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* tcpconn: TCP connections as bcc's tcpconnect and tcpaccept show them,
 * with no kprobes. Active (connects): the sock:inet_sock_set_state
 * tracepoint sees SYN_SENT in the connecting task (connect() runs there),
 * then ESTABLISHED, or CLOSE when the connection failed, in softirq: the
 * record goes out then, with the time between. Passive (accepts): the
 * same tracepoint notes when a connection became established, and the
 * exit of accept/accept4 finds the socket behind the new fd in the
 * accepting task's file table: the record names that task and the time
 * the connection waited in the accept queue. */
#include "sonde.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "sonde_maps.h"
#include "sonde_target.h"
#include "sonde_cgroup.h"
#include "sonde_tp.h"
#include "sonde_sock.h"
#include "sonde_syscalls.h"
#include "sonde_fd.h"
#include "tcpconn.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile bool accepts = false; /* passive connections (tcpaccept), else active (tcpconnect) */

/* A connection being made or waiting to be accepted. */
struct pending {
	__u64 start_ns; /* connect: SYN sent; accept: established; CLOCK_MONOTONIC ns */
	__u32 pid, tid, uid;
	char comm[16];
};

/* key: the socket's address (u64); value: struct pending. LRU: a
 * connection never accepted, or whose end was missed, must not keep its
 * entry forever. */
SONDE_MAP(pending, BPF_MAP_TYPE_LRU_HASH, __u64, struct pending, 65536);

/* key: enum tcpconn_counter; value: connections (u64), per CPU. */
ENUM_COUNTERS(counts, enum tcpconn_counter, TCPCONN_COUNTERS);

KEEP_TYPE(struct tcpconn_event, event);

/* Records to user space: one struct tcpconn_event per connection. */
RINGBUF(events, 1 << 20);

static __always_inline void emit(struct sock *sk, struct pending *p, __u64 now, int err)
{
	struct tcpconn_event *e = ring_reserve(&events, sizeof(*e), &counts, TCPCONN_LOST_RING);
	if (!e)
		return;
	e->time_ns = now;
	e->latency_ns = p->start_ns ? now - p->start_ns : 0;
	e->pid = p->pid;
	e->tid = p->tid;
	e->uid = p->uid;
	e->err = err;
	__builtin_memcpy(e->comm, p->comm, sizeof(e->comm));
	sock_conn(sk, &e->conn);
	ring_submit(&events, e);
}

/* The current task, as a pending connection's owner. */
static __always_inline void owner(struct pending *p, __u64 id)
{
	p->pid = id >> 32;
	p->tid = (__u32)id;
	p->uid = (__u32)bpf_get_current_uid_gid();
	bpf_get_current_comm(p->comm, sizeof(p->comm));
}

static __always_inline int connect_state(struct sock *sk, int oldstate, int newstate)
{
	__u64 key = (__u64)sk, now = bpf_ktime_get_ns();
	if (newstate == TCP_SYN_SENT) {
		__u64 id;
		if (!current_traced(&id) || !cgroup_traced())
			return 0;
		struct pending p = {.start_ns = now};
		owner(&p, id);
		if (bpf_map_update_elem(&pending, &key, &p, BPF_ANY))
			counter_inc(&counts, TCPCONN_LOST_MAP);
		return 0;
	}
	if (oldstate != TCP_SYN_SENT)
		return 0;
	struct pending *p = bpf_map_lookup_elem(&pending, &key);
	if (!p)
		return 0;
	if (newstate == TCP_ESTABLISHED) {
		emit(sk, p, now, 0);
	} else if (newstate == TCP_CLOSE) {
		/* Refused (ECONNREFUSED), timed out, or closed by its owner
		 * before it was established (no error recorded). */
		int err = BPF_CORE_READ(sk, sk_err);
		emit(sk, p, now, err ? err : 103 /* ECONNABORTED */);
	} else {
		return 0;
	}
	bpf_map_delete_elem(&pending, &key);
	return 0;
}

TP_BTF_OR_RAW(inet_sock_set_state, set_state)
{
	struct sock *sk = (struct sock *)ctx[0];
	int oldstate = (int)ctx[1], newstate = (int)ctx[2];
	if (!sock_is_tcp(sk))
		return 0;
	if (!accepts)
		return connect_state(sk, oldstate, newstate);
	/* Passive: a connection the kernel completed, waiting for accept. */
	if (oldstate == TCP_SYN_RECV && newstate == TCP_ESTABLISHED) {
		__u64 key = (__u64)sk;
		struct pending p = {.start_ns = bpf_ktime_get_ns()};
		if (bpf_map_update_elem(&pending, &key, &p, BPF_ANY))
			counter_inc(&counts, TCPCONN_LOST_MAP);
	}
	return 0;
}

/* Only the fields read here, relocated by CO-RE. */
struct socket {
	struct sock *sk;
} __attribute__((preserve_access_index));

struct file {
	void *private_data; /* a socket's struct socket */
} __attribute__((preserve_access_index));

/* The socket behind fd in the current task's file table; NULL when none. */
static __always_inline struct sock *fd_sock(long fd)
{
	struct file *f = fd_file(fd);
	if (!f)
		return NULL;
	struct socket *s = BPF_CORE_READ(f, private_data);
	return s ? BPF_CORE_READ(s, sk) : NULL;
}

static __always_inline int accepted(long fd)
{
	__u64 id;
	if (fd < 0 || !current_traced(&id) || !cgroup_traced())
		return 0;
	struct sock *sk = fd_sock(fd);
	if (!sk || !sock_is_tcp(sk))
		return 0;
	__u64 key = (__u64)sk;
	struct pending p = {}, *found = bpf_map_lookup_elem(&pending, &key);
	if (found)
		p.start_ns = found->start_ns;
	else
		counter_inc(&counts, TCPCONN_UNTIMED);
	owner(&p, id);
	emit(sk, &p, bpf_ktime_get_ns(), 0);
	if (found)
		bpf_map_delete_elem(&pending, &key);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_accept4")
int exit_accept4(struct sys_exit_args *ctx) { return accepted(ctx->ret); }

SEC("tracepoint/syscalls/sys_exit_accept")
int exit_accept(struct sys_exit_args *ctx) { return accepted(ctx->ret); }
