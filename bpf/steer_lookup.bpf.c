/*
 * steer_lookup.bpf.c - router-side steering: a TCP connection arriving at a
 * service address (a configured VIP and a route's port) of the daemon's
 * network namespace is assigned, before the kernel's own listener lookup, to
 * a socket of the SOCKMAP: the chosen backend's own listener (local handoff:
 * no proxy, the server sees the client's address) or the relay listener
 * mysteerd keeps for that backend, or the route's error listener when it has
 * no target.
 *
 * The choice is the same as connect4/6 make (maps.bpf.h), so both paths
 * spread load alike. The program is attached to one network namespace through
 * a bpf_link, so no netns cookie check is needed (nor is the helper offered to
 * sk_lookup programs); it acts only once a topology was published.
 */
#include "maps.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define IPPROTO_TCP_ 6
#define AF_INET6_    10

/* Assigns the socket in slot of map; *port: its local port (host order). */
static __always_inline int assign_from(struct bpf_sk_lookup *ctx, void *map, __u32 slot,
                                       __u32 *port)
{
	struct bpf_sock *sk;
	long err;

	sk = bpf_map_lookup_elem(map, &slot);
	if (!sk)
		return -1;
	*port = sk->src_port;
	err = bpf_sk_assign(ctx, sk, 0);
	bpf_sk_release(sk);
	return err ? -1 : 0;
}

static __always_inline int assign_slot(struct bpf_sk_lookup *ctx, __u32 slot, __u32 *port)
{
	if (ctx->family == AF_INET6_ && assign_from(ctx, &steer_sockmap6, slot, port) == 0)
		return 0;
	return assign_from(ctx, &steer_sockmap, slot, port);
}

/* Whether the socket given (its local port lport) is the backend's own
 * listener: it listens on the backend's port (a relay listener has an
 * ephemeral port). */
static __always_inline bool is_handoff(__u32 be, __u32 lport)
{
	struct ms_backend *b = NULL;

	if (be < MS_MAX_BACKENDS)
		b = bpf_map_lookup_elem(&backends, &be);
	return b && lport == bpf_ntohs(b->ep.port);
}

/*
 * Remembers which backend and route a connection handed to a server's own
 * listener belongs to (handoff_mark), for close-on-demote (the relay closes
 * its own pairs). Otherwise (handoff false) an entry a former connection of
 * this tuple left goes.
 */
static __always_inline void mark_handoff(struct bpf_sk_lookup *ctx, struct ms_service_key *svc,
                                         __u32 be, __u32 route_id, bool handoff)
{
	struct ms_handoff_mark m = {.backend_id = be, .route_id = route_id};
	struct ms_conn_key k = {};

	k.family = svc->family;
	k.lport = svc->port;
	k.rport = ctx->remote_port;
	__builtin_memcpy(k.laddr, svc->addr, 16);
	if (ctx->family == AF_INET6_) {
		__u32 ip6[4];

		ip6[0] = ctx->remote_ip6[0];
		ip6[1] = ctx->remote_ip6[1];
		ip6[2] = ctx->remote_ip6[2];
		ip6[3] = ctx->remote_ip6[3];
		__builtin_memcpy(k.raddr, ip6, 16);
	} else {
		__u32 ip4 = ctx->remote_ip4;

		__builtin_memcpy(k.raddr, &ip4, 4);
	}
	if (handoff)
		bpf_map_update_elem(&handoff_mark, &k, &m, BPF_ANY);
	else
		bpf_map_delete_elem(&handoff_mark, &k);
}

SEC("sk_lookup")
int ms_sk_lookup(struct bpf_sk_lookup *ctx)
{
	struct ms_service_key key = {};
	struct ms_route *rt;
	struct ms_path_counters *c;
	struct ms_cfg *cfg;
	__u32 gen, be, route_id = 0, lport = 0;
	bool handoff;

	if (ctx->protocol != IPPROTO_TCP_)
		return SK_PASS;
	cfg = ms_cfg_get();
	if (!cfg || !(cfg->flags & MS_CFG_ENABLED))
		return SK_PASS;
	if (ms_active_gen(&gen))
		return SK_PASS;

	/* Only the VIPs: another local address on the port is left to the
	 * kernel (whatever listens there, or a reset). */
	key.port = bpf_htons((__u16)ctx->local_port);
	if (ctx->family == AF_INET6_) {
		__u32 ip6[4];

		key.family = MS_AF_INET6;
		ip6[0] = ctx->local_ip6[0];
		ip6[1] = ctx->local_ip6[1];
		ip6[2] = ctx->local_ip6[2];
		ip6[3] = ctx->local_ip6[3];
		__builtin_memcpy(key.addr, ip6, 16);
	} else {
		__u32 ip4 = ctx->local_ip4;

		key.family = MS_AF_INET;
		__builtin_memcpy(key.addr, &ip4, 4);
	}
	rt = ms_service_route(gen, &key, &route_id);
	if (!rt)
		return SK_PASS;

	be = ms_pick_backend(rt, cfg);
	if (be < MS_MAX_BACKENDS && assign_slot(ctx, be, &lport) == 0) {
		handoff = is_handoff(be, lport);
		c = ms_path_counters_get(be, route_id, handoff ? MS_PATH_LOOKUP : MS_PATH_RELAY);
		if (c)
			__sync_fetch_and_add(&c->steered, 1);
		mark_handoff(ctx, &key, be, route_id, handoff);
		return SK_PASS;
	}
	/* No target, or its socket is missing (a local server restarting):
	 * the error listener answers with a MySQL error naming the reason
	 * rather than leaving the client to a reset. */
	mark_handoff(ctx, &key, MS_NO_BACKEND, route_id, false);
	assign_slot(ctx, MS_SOCKMAP_ERR(route_id), &lport);
	return SK_PASS;
}
