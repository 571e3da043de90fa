/*
 * mysteer_abi.h - the eBPF map ABI, shared by every program under bpf/ and by
 * userspace (userspace/maps, the sk_lookup service, mysteerctl maps).
 *
 * Plain structs of fixed-size types only, so that the layout is the same for
 * clang -target bpf and for gcc, and so that a restarted daemon can adopt the
 * maps pinned by its predecessor. Changing a struct here changes the pinned
 * ABI: bump MS_ABI_VERSION so a new daemon refuses (and replaces) stale pins
 * instead of misreading them.
 *
 * Byte order: addresses and ports in the maps are in network order, as in
 * struct bpf_sock_addr and struct bpf_sk_lookup, so programs compare them
 * without conversion. Map keys that userspace builds (ms_service_key) use the
 * same order.
 */
#ifndef MYSTEER_ABI_H
#define MYSTEER_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define MS_ABI_VERSION 3 /* 3: counters by route and path */

#define MS_MAX_BACKENDS 256
#define MS_MAX_ROUTES   8 /* routes a config may have */
/* Route ids. A route keeps its id while a route of that name exists, so a
 * reload that reorders, adds or removes routes leaves the ids the sockets'
 * marks carry meaning the same route; a new route takes an id that no
 * generation a program may still read uses (at most two besides the one
 * written: so three times MS_MAX_ROUTES ids always leave one). */
#define MS_ROUTE_SLOTS  (3 * MS_MAX_ROUTES)
#define MS_MAX_TARGETS  16
#define MS_MAX_SERVICES 256 /* vip x route entries of one generation */
/* Three, so that a publish seldom waits: the generation it writes retired
 * two flips ago (userspace/maps/steer.c, write_generation). */
#define MS_GENERATIONS  3
#define MS_RINGBUF_SIZE (64 * 1024)
#define MS_NAME_MAX     64 /* route names, as TOPO_NAME_MAX */

/* SOCKMAP slots: one per backend (its local or relay listener), then one per
 * route id for the "no target" error listener. */
#define MS_SOCKMAP_SIZE       (MS_MAX_BACKENDS + MS_ROUTE_SLOTS)
#define MS_SOCKMAP_ERR(route) (MS_MAX_BACKENDS + (route))

#define MS_NO_BACKEND 0xffffffffu

/* Pinned map names (the file names under bpffs_dir). */
#define MS_MAP_SERVICES   "services"
#define MS_MAP_BACKENDS   "backends"
#define MS_MAP_ROUTE_SEL  "route_sel"
#define MS_MAP_ACTIVE_GEN "active_gen"
#define MS_MAP_COUNTERS   "counters"
#define MS_MAP_SOCKMAP    "steer_sockmap"
#define MS_MAP_SOCKMAP6   "steer_sockmap6" /* IPv6 sockets, same slots (sk_lookup only) */
/* Pinned link names. */
#define MS_LINK_CONNECT4 "link_connect4"
#define MS_LINK_CONNECT6 "link_connect6"
#define MS_LINK_GETPEER4 "link_getpeername4"
#define MS_LINK_GETPEER6 "link_getpeername6"
#define MS_LINK_SOCKOPS  "link_sockops"
#define MS_LINK_LOOKUP   "link_sk_lookup"
#define MS_MAP_EVENTS    "steer_events"
#define MS_MAP_SK_MARK   "sk_mark"
#define MS_MAP_CFG       "steer_cfg"
#define MS_MAP_HANDOFF   "handoff_mark"

/* Families as in the kernel (AF_INET 2, AF_INET6 10). */
#define MS_AF_INET  2
#define MS_AF_INET6 10

/* An address+port. addr holds 4 bytes (IPv4) or 16 (IPv6), network order. */
struct ms_endpoint {
	__u16 family;
	__u16 port; /* network order */
	__u8 addr[16];
};

/*
 * services: which route a destination (a VIP and a route's port) belongs to,
 * in one generation. Both connect4/6 (the address connected to) and sk_lookup
 * (the local address of the arriving connection) look up the exact VIP: an
 * address that is not a VIP is never steered. Keyed by generation like
 * route_sel, so a publish writes the services of the inactive generation
 * and one flip of active_gen switches services and routes together.
 */
struct ms_service_key {
	__u32 gen; /* generation (0..MS_GENERATIONS-1) */
	__u16 family;
	__u16 port; /* network order */
	__u8 addr[16];
};

struct ms_service {
	__u32 route_id; /* route id: index into a generation of route_sel */
	__u32 flags;    /* reserved, 0 */
};

/* backends flags */
#define MS_BE_PRESENT  (1u << 0) /* slot in use */
#define MS_BE_USABLE   (1u << 1) /* up and enabled (informative; routes decide) */
#define MS_BE_LOCAL    (1u << 2) /* listens on this host (local handoff possible) */
#define MS_BE_DOWN     (1u << 3)
#define MS_BE_DRAINED  (1u << 4)
#define MS_BE_DISABLED (1u << 5)

/* backends: array indexed by backend id (topo_backend.id). */
struct ms_backend {
	struct ms_endpoint ep;
	__u32 flags;
	__u32 weight;
};

/* route_sel flags */
#define MS_RT_PRESENT  (1u << 0)
#define MS_RT_READER   (1u << 1) /* role reader (else writer) */
#define MS_RT_FALLBACK (1u << 2) /* the writer stands in for missing readers */
#define MS_RT_SPLIT    (1u << 3) /* the 6450 proxy route: never steered in BPF */

/* route_sel reason codes (why ntargets is 0), for the error listener and dump */
#define MS_REASON_NONE      0
#define MS_REASON_NO_WRITER 1
#define MS_REASON_NO_READER 2

/*
 * route_sel: array of MS_GENERATIONS * MS_ROUTE_SLOTS, index
 * gen * MS_ROUTE_SLOTS + route_id. Targets are backend ids; cum_weight[i] is
 * the sum of weights of targets 0..i, so a weighted random pick is the first i
 * with r < cum_weight[i] for r uniform in [0, total_weight). The route's
 * error listeners are in the entry, so they change with the flip too; its
 * name is there so that a restarted daemon keeps the route ids.
 */
struct ms_route {
	__u32 flags;
	__u32 ntargets; /* 0: no target, steer to the route's error listener */
	__u32 total_weight;
	__u32 reason; /* MS_REASON_* when ntargets == 0 */
	__u16 port;   /* service port, host order (informative) */
	__u16 pad;
	__u32 pad2;
	__u32 target[MS_MAX_TARGETS];
	__u32 cum_weight[MS_MAX_TARGETS];
	/* "no target" listeners (mysteerd, relay_address; family 0: none) */
	struct ms_endpoint errl;
	struct ms_endpoint errl6; /* IPv6 one (family 0: use the v4-mapped errl) */
	char name[MS_NAME_MAX];   /* NUL-terminated */
};

/* active_gen: array[1] of __u32, the generation (0..MS_GENERATIONS-1)
 * programs read, once per run, for every lookup. The publisher fills the
 * next one, then sets this. */

/* The kernel paths a connection is steered by (counters, close records). */
#define MS_PATH_CONNECT 0 /* cgroup connect4/6 rewrote the client's connect */
#define MS_PATH_LOOKUP  1 /* sk_lookup handed it to the backend's own listener */
#define MS_PATH_RELAY   2 /* sk_lookup gave it to mysteerd's relay listener */
#define MS_PATHS        3

/* One (backend, route, path)'s figures. active and connect_failures are
 * counted for MS_PATH_CONNECT only (sockops follows the client's socket);
 * closed_on_demote for MS_PATH_CONNECT and MS_PATH_LOOKUP (the relay closes
 * its own pairs). */
struct ms_path_counters {
	__u64 steered;
	__u64 active;
	__u64 connect_failures;
	__u64 closed_on_demote;
};

/* counters: array indexed by backend id; programs add with
 * __sync_fetch_and_add, userspace reads them. Not reset on republish.
 * by[route id][path]; active is the backend's total over them, which
 * least_conn reads in one lookup. */
struct ms_counters {
	__u64 active;
	__u64 pad;
	struct ms_path_counters by[MS_ROUTE_SLOTS][MS_PATHS];
};

/* steer_events: ring buffer of these. */
#define MS_EV_CONNECT_FAIL 1
struct ms_event {
	__u32 type;
	__u32 backend_id;
	__u32 route_id;
	__s32 err; /* sockops state/err hint: the TCP state the socket left */
	__u64 ts_ns;
};

/* sk_mark flags */
#define MS_SK_STEERED     (1u << 0) /* chosen by connect4/6 or sk_lookup */
#define MS_SK_ESTABLISHED (1u << 1) /* counted in active */
#define MS_SK_ERRLISTEN   (1u << 2) /* sent to an error listener: not counted */
#define MS_SK_FAILED      (1u << 3) /* connect failure already reported */

/* sk_mark: sk_storage of a steered client socket. */
struct ms_sk_mark {
	__u32 backend_id;
	__u32 route_id;
	__u32 flags;
	__u32 pad;
	struct ms_endpoint vip; /* what the application connected to */
};

/*
 * handoff_mark: connections sk_lookup handed to a local server's own
 * listener, by their 4-tuple as the server's socket sees it (local: the VIP
 * and service port; remote: the client), so that close-on-demote finds the
 * server's side of them (the client may be on another host). An LRU hash:
 * an entry outlives its connection until evicted or overwritten by the next
 * connection with that tuple; a connection whose entry was evicted (more than
 * MS_HANDOFF_ENTRIES handed over since) is not closed on demote.
 * An IPv4 client of a dual-stack listener is keyed as IPv4.
 */
#define MS_HANDOFF_ENTRIES 65536
struct ms_conn_key {
	__u16 family;
	__u16 lport; /* network order */
	__u16 rport; /* network order */
	__u16 pad;
	__u8 laddr[16];
	__u8 raddr[16];
};

struct ms_handoff_mark {
	__u32 backend_id;
	__u32 route_id;
};

/* What steer_list.bpf.c writes for each socket close-on-demote must close
 * (kernels without bpf_sock_destroy): the socket's own family and 4-tuple,
 * for a sock_diag SOCK_DESTROY request. */
struct ms_close_rec {
	__u16 family; /* the socket's (AF_INET6 for a v4-mapped one) */
	__u16 lport;  /* network order */
	__u16 rport;  /* network order */
	__u16 pad;
	__u32 backend_id;
	__u16 route_id;
	__u16 path; /* MS_PATH_CONNECT or MS_PATH_LOOKUP */
	__u8 laddr[16];
	__u8 raddr[16];
};

/* steer_cfg flags */
#define MS_CFG_ENABLED    (1u << 0) /* a topology was published */
#define MS_CFG_LEAST_CONN (1u << 1) /* reader_policy = least_conn */

/* steer_cfg: array[1]. */
struct ms_cfg {
	__u64 netns_cookie; /* programs act only on sockets of this netns */
	__u32 flags;
	__u32 abi_version;
};

#endif
