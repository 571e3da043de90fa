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

SEC("iter/tcp")
int ms_close_iter(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct ms_path_counters *c;
	__u32 be, route, path;

	if (!skc || !ms_close_match(skc, close_mask, &be, &route, &path))
		return 0;
	if (bpf_sock_destroy(skc))
		return 0;
	closed++;
	c = ms_path_counters_get(be, route, path);
	if (c)
		__sync_fetch_and_add(&c->closed_on_demote, 1);
	return 0;
}
