// SPDX-License-Identifier: GPL-2.0
/*
 * steer_iter.bpf.c - close-on-demote: a TCP socket iterator, run by the
 * daemon in its own network namespace when backends leave routes, that
 * destroys the steered client sockets whose (backend, route) left, so pooled
 * clients reconnect to the new target instead of writing to a demoted
 * primary. close_mask is set by userspace before each run; it names, per
 * backend, the routes (bit = route id) whose connections must go.
 */
#include "maps.bpf.h"

char LICENSE[] SEC("license") = "GPL";

extern int bpf_sock_destroy(struct sock_common *sk) __ksym;

__u32 close_mask[MS_MAX_BACKENDS];
__u64 closed;

SEC("iter/tcp")
int ms_close_iter(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
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
	if (!mark || !(mark->flags & MS_SK_STEERED))
		return 0;
	be = mark->backend_id;
	rt = mark->route_id;
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
