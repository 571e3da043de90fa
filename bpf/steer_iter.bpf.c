// SPDX-License-Identifier: GPL-2.0
/*
 * steer_iter.bpf.c - close-on-demote: a TCP socket iterator, run by the
 * daemon in its own network namespace when backends leave routes, that
 * destroys the sockets of connections whose (backend, route) left, so pooled
 * clients reconnect to the new target instead of writing to a demoted
 * primary: client sockets connect4/6 steered (their sk_mark), and the
 * server's side of connections sk_lookup handed to a local server's own
 * listener (handoff_mark, by 4-tuple). close_mask is set by userspace before
 * each run; it names, per backend, the routes (bit = route id) whose
 * connections must go.
 */
#include "maps.bpf.h"

char LICENSE[] SEC("license") = "GPL";

extern int bpf_sock_destroy(struct sock_common *sk) __ksym;

__u32 close_mask[MS_MAX_BACKENDS];
__u64 closed;

/* The (backend, route) sk_lookup handed this connection to, from its tuple
 * as this (the server's) side sees it; an IPv4 client of a dual-stack
 * listener (v4-mapped) is keyed as IPv4, as sk_lookup saw it. */
static __always_inline struct ms_handoff_mark *handoff_of(struct sock_common *skc)
{
	struct ms_conn_key k = {};
	__u32 l[4], r[4];

	k.lport = bpf_htons(skc->skc_num);
	k.rport = skc->skc_dport;
	if (skc->skc_family == 2) {
		l[0] = skc->skc_rcv_saddr;
		r[0] = skc->skc_daddr;
		k.family = MS_AF_INET;
		__builtin_memcpy(k.laddr, l, 4);
		__builtin_memcpy(k.raddr, r, 4);
		return bpf_map_lookup_elem(&handoff_mark, &k);
	}
	for (int i = 0; i < 4; i++) {
		l[i] = skc->skc_v6_rcv_saddr.in6_u.u6_addr32[i];
		r[i] = skc->skc_v6_daddr.in6_u.u6_addr32[i];
	}
	if (l[0] == 0 && l[1] == 0 && l[2] == bpf_htonl(0xffff)) {
		k.family = MS_AF_INET;
		__builtin_memcpy(k.laddr, &l[3], 4);
		__builtin_memcpy(k.raddr, &r[3], 4);
	} else {
		k.family = MS_AF_INET6;
		__builtin_memcpy(k.laddr, l, 16);
		__builtin_memcpy(k.raddr, r, 16);
	}
	return bpf_map_lookup_elem(&handoff_mark, &k);
}

SEC("iter/tcp")
int ms_close_iter(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct ms_handoff_mark *h;
	struct ms_sk_mark *mark;
	struct ms_counters *c;
	struct tcp_sock *tp;
	__u32 be, rt;

	/* Reading a field also makes clang emit the full struct sock_common
	 * in BTF (not a forward), which libbpf 1.1 needs to match the kfunc. */
	if (!skc || (skc->skc_family != 2 && skc->skc_family != 10))
		return 0;
	tp = bpf_skc_to_tcp_sock(skc);
	if (!tp)
		return 0;
	mark = bpf_sk_storage_get(&sk_mark, tp, 0, 0);
	if (mark && (mark->flags & MS_SK_STEERED)) {
		be = mark->backend_id;
		rt = mark->route_id;
	} else {
		h = handoff_of(skc);
		if (!h)
			return 0;
		be = h->backend_id;
		rt = h->route_id;
	}
	if (be >= MS_MAX_BACKENDS || rt >= 32)
		return 0;
	if (!(close_mask[be] & (1u << rt)))
		return 0;
	if (bpf_sock_destroy(skc))
		return 0;
	closed++;
	c = ms_counters_get(be);
	if (c)
		__sync_fetch_and_add(&c->closed_on_demote, 1);
	return 0;
}
