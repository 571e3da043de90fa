/*
 * maps.bpf.h - the map definitions every mysteer eBPF program includes, and
 * the small helpers they share (generation lookup, target choice, counters).
 *
 * Every map is pinned by name: each skeleton is opened with
 * pin_root_path = bpffs_dir, so all programs share one set of maps and a
 * restarted daemon adopts the maps (and so the state) of its predecessor.
 */
#ifndef MYSTEER_MAPS_BPF_H
#define MYSTEER_MAPS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "mysteer_abi.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MS_GENERATIONS *MS_MAX_SERVICES);
	__type(key, struct ms_service_key);
	__type(value, struct ms_service);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} services SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MS_MAX_BACKENDS);
	__type(key, __u32);
	__type(value, struct ms_backend);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} backends SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MS_GENERATIONS *MS_ROUTE_SLOTS);
	__type(key, __u32);
	__type(value, struct ms_route);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} route_sel SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} active_gen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MS_MAX_BACKENDS);
	__type(key, __u32);
	__type(value, struct ms_counters);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SOCKMAP);
	__uint(max_entries, MS_SOCKMAP_SIZE);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} steer_sockmap SEC(".maps");

/*
 * IPv6 sockets for IPv6 clients of sk_lookup, same slots as steer_sockmap: a
 * server often has an IPv4 listener and a separate IPV6_V6ONLY one (mariadbd
 * --bind-address=*), and an IPv6 connection cannot be given to an IPv4
 * socket. Empty slots fall back to steer_sockmap (a dual-stack socket serves
 * both). Here with the shared maps because steer_service fills its error
 * listener slots with every publish, whether or not sk_lookup runs.
 */
struct {
	__uint(type, BPF_MAP_TYPE_SOCKMAP);
	__uint(max_entries, MS_SOCKMAP_SIZE);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} steer_sockmap6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, MS_RINGBUF_SIZE);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} steer_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ms_sk_mark);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sk_mark SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, MS_HANDOFF_ENTRIES);
	__type(key, struct ms_conn_key);
	__type(value, struct ms_handoff_mark);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} handoff_mark SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ms_cfg);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} steer_cfg SEC(".maps");

static __always_inline struct ms_cfg *ms_cfg_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&steer_cfg, &zero);
}

/*
 * The generation programs read now. A program reads it once and uses it for
 * every lookup of its run: the publisher (userspace/maps/steer.c) writes
 * only a generation that is not active, and only once every program that
 * could still be reading it has finished, so no run ever sees a route or
 * service half written.
 */
static __always_inline int ms_active_gen(__u32 *gen)
{
	__u32 zero = 0;
	__u32 *g = bpf_map_lookup_elem(&active_gen, &zero);

	if (!g || *g >= MS_GENERATIONS)
		return -1;
	*gen = *g;
	return 0;
}

/*
 * The route a destination (key: family, port, address; key->gen is set here)
 * belongs to in generation gen, or NULL when it is not a service or its route
 * is not steered in BPF (the split route). *route_id is its route id.
 */
static __always_inline struct ms_route *ms_service_route(__u32 gen, struct ms_service_key *key,
                                                         __u32 *route_id)
{
	struct ms_service *svc;
	struct ms_route *rt;
	__u32 id, idx;

	key->gen = gen;
	svc = bpf_map_lookup_elem(&services, key);
	if (!svc)
		return NULL;
	id = svc->route_id;
	if (id >= MS_ROUTE_SLOTS)
		return NULL;
	if (gen >= MS_GENERATIONS)
		return NULL;
	idx = gen * MS_ROUTE_SLOTS + id;
	rt = bpf_map_lookup_elem(&route_sel, &idx);
	if (!rt || !(rt->flags & MS_RT_PRESENT) || (rt->flags & MS_RT_SPLIT))
		return NULL;
	*route_id = id;
	return rt;
}

static __always_inline struct ms_counters *ms_counters_get(__u32 backend_id)
{
	if (backend_id >= MS_MAX_BACKENDS)
		return NULL;
	return bpf_map_lookup_elem(&counters, &backend_id);
}

/* The figures of one (backend, route, path), NULL when out of range. */
static __always_inline struct ms_path_counters *ms_path_counters_get(__u32 backend_id,
                                                                     __u32 route_id, __u32 path)
{
	struct ms_counters *c = ms_counters_get(backend_id);

	if (!c || route_id >= MS_ROUTE_SLOTS || path >= MS_PATHS)
		return NULL;
	return &c->by[route_id][path];
}

/* Weighted random over cum_weight[]. */
static __always_inline __u32 ms_pick_random(const struct ms_route *rt, __u32 n)
{
	__u32 r, i;

	if (!rt->total_weight)
		return rt->target[0];
	r = bpf_get_prandom_u32() % rt->total_weight;
	for (i = 0; i < MS_MAX_TARGETS; i++) {
		if (i >= n)
			break;
		if (r < rt->cum_weight[i])
			return rt->target[i];
	}
	return rt->target[0];
}

/* Fewest active connections; ties go to a random one of the tied targets, so
 * a burst of connects before sockops counts them does not pile on one. */
static __always_inline __u32 ms_pick_least_conn(const struct ms_route *rt, __u32 n)
{
	__u64 best = ~0ULL;
	__u32 chosen = rt->target[0], ties = 0, i;

	for (i = 0; i < MS_MAX_TARGETS; i++) {
		struct ms_counters *c;
		__u64 a;

		if (i >= n)
			break;
		c = ms_counters_get(rt->target[i]);
		a = c ? c->active : 0;
		if (a < best) {
			best = a;
			chosen = rt->target[i];
			ties = 1;
		} else if (a == best) {
			ties++;
			if (bpf_get_prandom_u32() % ties == 0)
				chosen = rt->target[i];
		}
	}
	return chosen;
}

/* The backend a new connection of this route goes to, or MS_NO_BACKEND when
 * the route has no target (the caller steers to the error listener). */
static __always_inline __u32 ms_pick_backend(const struct ms_route *rt, const struct ms_cfg *cfg)
{
	__u32 n = rt->ntargets;

	if (!(rt->flags & MS_RT_PRESENT) || n == 0)
		return MS_NO_BACKEND;
	if (n > MS_MAX_TARGETS)
		n = MS_MAX_TARGETS;
	if (n == 1)
		return rt->target[0];
	if ((cfg->flags & MS_CFG_LEAST_CONN) && (rt->flags & MS_RT_READER))
		return ms_pick_least_conn(rt, n);
	return ms_pick_random(rt, n);
}

/* ---- close-on-demote (the iterators steer_iter and steer_list) ---- */

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

/*
 * Whether close-on-demote closes this socket: a client socket connect4/6
 * steered (sk_mark), or the server's side of a connection sk_lookup handed
 * over (handoff_mark), whose (backend, route) is in mask (per backend, a bit
 * a route id). *backend, *route, *path: its backend id, route id and path.
 */
static __always_inline bool ms_close_match(struct sock_common *skc, const __u32 *mask,
                                           __u32 *backend, __u32 *route, __u32 *path)
{
	struct ms_handoff_mark *h;
	struct ms_sk_mark *mark;
	struct tcp_sock *tp;
	__u32 be, rt;

	/* Reading a field also makes clang emit the full struct sock_common
	 * in BTF (not a forward), which libbpf 1.1 needs to match the kfunc. */
	if (skc->skc_family != 2 && skc->skc_family != 10)
		return false;
	tp = bpf_skc_to_tcp_sock(skc);
	if (!tp)
		return false;
	mark = bpf_sk_storage_get(&sk_mark, tp, 0, 0);
	if (mark && (mark->flags & MS_SK_STEERED)) {
		be = mark->backend_id;
		rt = mark->route_id;
		*path = MS_PATH_CONNECT;
	} else {
		h = handoff_of(skc);
		if (!h)
			return false;
		be = h->backend_id;
		rt = h->route_id;
		*path = MS_PATH_LOOKUP;
	}
	if (be >= MS_MAX_BACKENDS || rt >= 32)
		return false;
	if (!(mask[be] & (1u << rt)))
		return false;
	*backend = be;
	*route = rt;
	return true;
}

#endif
