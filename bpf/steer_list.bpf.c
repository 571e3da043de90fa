// SPDX-License-Identifier: GPL-2.0
/*
 * steer_list.bpf.c - close-on-demote where the kernel has no
 * bpf_sock_destroy() kfunc (before 6.5): the same match as steer_iter.bpf.c,
 * but the iterator only writes each matching socket's 4-tuple to its output
 * (struct ms_close_rec); mysteerd then destroys them with sock_diag
 * SOCK_DESTROY requests (userspace/maps/sockdiag.c). iter/tcp needs 5.9.
 */
#include "maps.bpf.h"

char LICENSE[] SEC("license") = "GPL";

__u32 close_mask[MS_MAX_BACKENDS];

SEC("iter/tcp")
int ms_list_iter(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct ms_close_rec rec = {};
	__u32 be, route, path;

	if (!skc || !ms_close_match(skc, close_mask, &be, &route, &path))
		return 0;
	rec.backend_id = be;
	rec.route_id = (__u16)route;
	rec.path = (__u16)path;
	rec.family = skc->skc_family;
	rec.lport = bpf_htons(skc->skc_num);
	rec.rport = skc->skc_dport;
	if (rec.family == 2) {
		__u32 l = skc->skc_rcv_saddr, r = skc->skc_daddr;
		__builtin_memcpy(rec.laddr, &l, 4);
		__builtin_memcpy(rec.raddr, &r, 4);
	} else {
		__u32 l[4], r[4];
		for (int i = 0; i < 4; i++) {
			l[i] = skc->skc_v6_rcv_saddr.in6_u.u6_addr32[i];
			r[i] = skc->skc_v6_daddr.in6_u.u6_addr32[i];
		}
		__builtin_memcpy(rec.laddr, l, 16);
		__builtin_memcpy(rec.raddr, r, 16);
	}
	bpf_seq_write(ctx->meta->seq, &rec, sizeof(rec));
	return 0;
}
