/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The socket fields sonde's TCP tools read, relocated by CO-RE in the
 * running kernel, and their TCP states. The address and port pairs of
 * struct sock_common sit in anonymous unions there, which CO-RE looks
 * through. Include after <bpf/bpf_core_read.h>. */
#ifndef SONDE_SOCK_H
#define SONDE_SOCK_H

#define AF_INET 2
#define AF_INET6 10
#define IPPROTO_TCP 6

/* include/net/tcp_states.h */
enum {
	TCP_ESTABLISHED = 1,
	TCP_SYN_SENT = 2,
	TCP_SYN_RECV = 3,
	TCP_FIN_WAIT1 = 4,
	TCP_FIN_WAIT2 = 5,
	TCP_TIME_WAIT = 6,
	TCP_CLOSE = 7,
	TCP_CLOSE_WAIT = 8,
	TCP_LAST_ACK = 9,
	TCP_LISTEN = 10,
	TCP_CLOSING = 11,
	TCP_NEW_SYN_RECV = 12,
};

struct in6_addr {
	__u8 s6_addr[16];
};

struct sock_common {
	__be32 skc_daddr;
	__be32 skc_rcv_saddr;
	__be16 skc_dport;
	__u16 skc_num;
	unsigned short skc_family;
	volatile unsigned char skc_state;
	unsigned long skc_flags; /* bits of enum sock_flags (the kernel's sk_flags) */
	struct in6_addr skc_v6_daddr;
	struct in6_addr skc_v6_rcv_saddr;
} __attribute__((preserve_access_index));

struct sock {
	struct sock_common __sk_common;
	__u16 sk_protocol; /* a bit-field before 5.6: read with BPF_CORE_READ_BITFIELD_PROBED */
	int sk_err;        /* the error a failed connection ended with */
} __attribute__((preserve_access_index));

/* The local port as the packets carry it: skc_num is already 0 when a
 * socket reaches CLOSE (its port is released first). */
struct inet_sock {
	__be16 inet_sport;
} __attribute__((preserve_access_index));

/* bytes_received and bytes_acked count sequence numbers, not only data: a
 * received FIN adds 1, an acknowledged SYN (the connecting side's) and
 * FIN 1 each (tcplife takes them off). */
struct tcp_sock {
	__u64 bytes_received; /* sequence numbers received in order */
	__u64 bytes_acked;    /* sequence numbers sent and acknowledged by the peer */
	__u32 snd_una;        /* first sequence number not yet acknowledged */
	__u32 write_seq;      /* one past the last queued to send (a FIN included) */
} __attribute__((preserve_access_index));

/* sk_flags bits (enum sock_flags, relocated by CO-RE). */
enum sock_flags {
	SOCK_DONE = 1, /* the peer's FIN was received */
};

/* The ends of a connection as the tools send them: addresses 4 bytes for
 * AF_INET, 16 for AF_INET6 (the rest zero), ports in host order. */
struct sonde_conn {
	__u16 family; /* AF_INET or AF_INET6 */
	__u16 lport;  /* local port */
	__u16 rport;  /* remote port */
	__u16 pad;
	__u8 laddr[16];
	__u8 raddr[16];
};

/* Whether sk is a TCP socket. */
static __always_inline bool sock_is_tcp(struct sock *sk)
{
	return BPF_CORE_READ_BITFIELD_PROBED(sk, sk_protocol) == IPPROTO_TCP;
}

/* c gets the ends of sk. */
static __always_inline void sock_conn(struct sock *sk, struct sonde_conn *c)
{
	c->family = BPF_CORE_READ(sk, __sk_common.skc_family);
	c->lport = __builtin_bswap16(BPF_CORE_READ((struct inet_sock *)sk, inet_sport));
	c->rport = __builtin_bswap16(BPF_CORE_READ(sk, __sk_common.skc_dport));
	c->pad = 0;
	__builtin_memset(c->laddr, 0, sizeof(c->laddr));
	__builtin_memset(c->raddr, 0, sizeof(c->raddr));
	if (c->family == AF_INET6) {
		BPF_CORE_READ_INTO(&c->laddr, sk, __sk_common.skc_v6_rcv_saddr);
		BPF_CORE_READ_INTO(&c->raddr, sk, __sk_common.skc_v6_daddr);
	} else {
		BPF_CORE_READ_INTO((__be32 *)c->laddr, sk, __sk_common.skc_rcv_saddr);
		BPF_CORE_READ_INTO((__be32 *)c->raddr, sk, __sk_common.skc_daddr);
	}
}

#endif
