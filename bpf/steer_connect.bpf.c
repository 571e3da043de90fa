// SPDX-License-Identifier: GPL-2.0
/*
 * steer_connect.bpf.c - client-side steering: cgroup connect4/6 rewrite a
 * TCP connect() to a service address (VIP:port of a route) into a connect()
 * to the backend chosen for that route now, and getpeername4/6 give the
 * application back the VIP it asked for.
 *
 * The choice is made from one generation of services and route_sel (published
 * by userspace/maps), so no connect ever sees a half-written topology. The
 * socket is marked in sk_mark: sockops counts only marked sockets, the
 * close-on-demote iterator closes only them, getpeername reads the VIP there.
 */
#include "maps.bpf.h"

#define SOCK_STREAM 1

char LICENSE[] SEC("license") = "GPL";

static __always_inline int ms_is_v4mapped(const __u32 *ip6)
{
	return ip6[0] == 0 && ip6[1] == 0 && ip6[2] == bpf_htonl(0x0000ffff);
}

/* An IPv4 socket cannot reach an IPv6 backend: the first IPv4 target of the
 * route instead (only mixed-family routes pay this). */
static __always_inline struct ms_backend *ms_first_v4(const struct ms_route *rt, __u32 *be_id)
{
	__u32 i;

	for (i = 0; i < MS_MAX_TARGETS; i++) {
		struct ms_backend *be;
		__u32 id;

		if (i >= rt->ntargets)
			break;
		id = rt->target[i];
		be = bpf_map_lookup_elem(&backends, &id);
		if (be && (be->flags & MS_BE_PRESENT) && be->ep.family == MS_AF_INET) {
			*be_id = id;
			return be;
		}
	}
	return NULL;
}

/*
 * Decide where a connect to key goes. Fills *dst with the backend (or the
 * route's error listener) and marks the socket; returns 0 when the connect
 * must be left alone.
 */
static __always_inline int ms_steer(struct bpf_sock_addr *ctx, struct ms_service_key *key,
                                    int want_v6, struct ms_endpoint *dst)
{
	struct ms_sk_mark *mark;
	struct ms_path_counters *c;
	struct ms_route *rt;
	struct ms_cfg *cfg;
	__u32 gen, route_id = 0, be_id, flags = MS_SK_STEERED;

	cfg = ms_cfg_get();
	if (!cfg || !(cfg->flags & MS_CFG_ENABLED))
		return 0;
	if (bpf_get_netns_cookie(ctx) != cfg->netns_cookie)
		return 0;
	if (ms_active_gen(&gen))
		return 0;
	rt = ms_service_route(gen, key, &route_id);
	if (!rt)
		return 0;

	be_id = ms_pick_backend(rt, cfg);
	if (be_id == MS_NO_BACKEND) {
		struct ms_endpoint *e = want_v6 && rt->errl6.family ? &rt->errl6 : &rt->errl;

		if (!e->family)
			return 0;
		__builtin_memcpy(dst, e, sizeof(*dst));
		flags = MS_SK_ERRLISTEN;
	} else {
		struct ms_backend *be = bpf_map_lookup_elem(&backends, &be_id);

		if (!be || !(be->flags & MS_BE_PRESENT))
			return 0;
		if (!want_v6 && be->ep.family != MS_AF_INET)
			be = ms_first_v4(rt, &be_id);
		if (!be)
			return 0;
		__builtin_memcpy(dst, &be->ep, sizeof(*dst));
	}
	/* Still v6 (an IPv6 error listener): a v4 socket cannot go there. */
	if (!want_v6 && dst->family != MS_AF_INET)
		return 0;

	mark = bpf_sk_storage_get(&sk_mark, ctx->sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (mark) {
		mark->backend_id = flags == MS_SK_STEERED ? be_id : MS_NO_BACKEND;
		mark->route_id = route_id;
		mark->flags = flags;
		mark->vip.family = key->family;
		mark->vip.port = key->port;
		__builtin_memcpy(mark->vip.addr, key->addr, sizeof(mark->vip.addr));
	}
	if (flags == MS_SK_STEERED) {
		c = ms_path_counters_get(be_id, route_id, MS_PATH_CONNECT);
		if (c)
			__sync_fetch_and_add(&c->steered, 1);
	}
	return 1;
}

SEC("cgroup/connect4")
int ms_connect4(struct bpf_sock_addr *ctx)
{
	struct ms_service_key key = {};
	struct ms_endpoint dst = {};
	__u32 ip4 = ctx->user_ip4;

	if (ctx->type != SOCK_STREAM)
		return 1;
	key.family = MS_AF_INET;
	key.port = (__u16)ctx->user_port;
	__builtin_memcpy(key.addr, &ip4, 4);
	if (!ms_steer(ctx, &key, 0, &dst))
		return 1;
	__builtin_memcpy(&ip4, dst.addr, 4);
	ctx->user_ip4 = ip4;
	ctx->user_port = dst.port;
	return 1;
}

SEC("cgroup/connect6")
int ms_connect6(struct bpf_sock_addr *ctx)
{
	struct ms_service_key key = {};
	struct ms_endpoint dst = {};
	__u32 ip6[4];

	if (ctx->type != SOCK_STREAM)
		return 1;
	ip6[0] = ctx->user_ip6[0];
	ip6[1] = ctx->user_ip6[1];
	ip6[2] = ctx->user_ip6[2];
	ip6[3] = ctx->user_ip6[3];
	key.port = (__u16)ctx->user_port;
	if (ms_is_v4mapped(ip6)) {
		/* ::ffff:a.b.c.d is the IPv4 service a.b.c.d */
		key.family = MS_AF_INET;
		__builtin_memcpy(key.addr, &ip6[3], 4);
	} else {
		key.family = MS_AF_INET6;
		__builtin_memcpy(key.addr, ip6, 16);
	}
	if (!ms_steer(ctx, &key, 1, &dst))
		return 1;
	if (dst.family == MS_AF_INET) {
		/* An IPv4 backend from an IPv6 socket: its v4-mapped form. */
		ip6[0] = 0;
		ip6[1] = 0;
		ip6[2] = bpf_htonl(0x0000ffff);
		__builtin_memcpy(&ip6[3], dst.addr, 4);
	} else {
		__builtin_memcpy(ip6, dst.addr, 16);
	}
	ctx->user_ip6[0] = ip6[0];
	ctx->user_ip6[1] = ip6[1];
	ctx->user_ip6[2] = ip6[2];
	ctx->user_ip6[3] = ip6[3];
	ctx->user_port = dst.port;
	return 1;
}

static __always_inline struct ms_sk_mark *ms_peer_mark(struct bpf_sock_addr *ctx)
{
	struct ms_sk_mark *mark;

	if (!ctx->sk)
		return NULL;
	mark = bpf_sk_storage_get(&sk_mark, ctx->sk, 0, 0);
	if (!mark || !(mark->flags & (MS_SK_STEERED | MS_SK_ERRLISTEN)))
		return NULL;
	return mark;
}

SEC("cgroup/getpeername4")
int ms_getpeername4(struct bpf_sock_addr *ctx)
{
	struct ms_sk_mark *mark = ms_peer_mark(ctx);
	__u32 ip4;

	if (!mark || mark->vip.family != MS_AF_INET)
		return 1;
	__builtin_memcpy(&ip4, mark->vip.addr, 4);
	ctx->user_ip4 = ip4;
	ctx->user_port = mark->vip.port;
	return 1;
}

SEC("cgroup/getpeername6")
int ms_getpeername6(struct bpf_sock_addr *ctx)
{
	struct ms_sk_mark *mark = ms_peer_mark(ctx);
	__u32 ip6[4];

	if (!mark)
		return 1;
	if (mark->vip.family == MS_AF_INET) {
		ip6[0] = 0;
		ip6[1] = 0;
		ip6[2] = bpf_htonl(0x0000ffff);
		__builtin_memcpy(&ip6[3], mark->vip.addr, 4);
	} else if (mark->vip.family == MS_AF_INET6) {
		__builtin_memcpy(ip6, mark->vip.addr, 16);
	} else {
		return 1;
	}
	ctx->user_ip6[0] = ip6[0];
	ctx->user_ip6[1] = ip6[1];
	ctx->user_ip6[2] = ip6[2];
	ctx->user_ip6[3] = ip6[3];
	ctx->user_port = mark->vip.port;
	return 1;
}
