/*
 * lookup.c - lookup_service (see lookup.h).
 *
 * The maps are the ones steer_service pins (opened with the same
 * pin_root_path), and steer_service publishes the routes and keeps the
 * routes' error listeners in their SOCKMAP slots; this part owns the
 * sk_lookup program and link and the backends' SOCKMAP slots. Everything
 * runs on the controller thread (topology subscriber and a timer on its loop) except the
 * relay's data path, which has a thread of its own.
 *
 * The link is pinned, so after a SIGKILL local handoff goes on (the SOCKMAP
 * holds the servers' own sockets) and the next daemon swaps its program into
 * the pinned link in place: the hook is never empty. Relay connections in
 * flight belong to the process that accepted them and drop with it.
 */
#define _GNU_SOURCE
#include "relay/lookup.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "common/evloop.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/retry.h"
#include "common/testenv.h"
#include "maps/maps.h"
#include "relay/handoff.h"
#include "relay/relay.h"
#include "steer_lookup.skel.h"

#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC 0xcafe4a11
#endif

enum slot_kind { SLOT_NONE = 0, SLOT_HANDOFF, SLOT_RELAY };

struct slot {
	enum slot_kind kind;
	uint64_t cookie; /* of the socket we put there */
	bool v4;         /* handoff: the server's socket is IPv4-only */
	/* handoff: the user the server's listener belongs to, once taken: a
	 * listener of another user on the port is never taken (a local user's
	 * [::]:PORT next to an IPv4-only server, or on a port the server left
	 * while it restarts) */
	bool uid_known, warned;
	uid_t uid;
	/* handoff: a failed search for the server's listener is not repeated
	 * before its retry is due (mono_ms), backing off to HANDOFF_RETRY_MAX_MS */
	struct retry search;
};

/* A search for a server's listener reads /proc/net/tcp and, when it finds
 * one, the fds of every process: milliseconds. One that keeps failing (a
 * port whose socket the search cannot take) must not run for every backend
 * on that port at every probe interval. */
#define HANDOFF_RETRY_MAX_MS 1000u

static struct {
	struct daemon_ctx *d;
	bool running, subscribed;
	char pin_dir[4096];
	struct steer_lookup *skel;
	struct bpf_link *link;
	int sockmap_fd;
	struct relay *relay;
	uint64_t timer;
	struct slot slots[MS_MAX_BACKENDS];
	/* IPv6 side (steer_sockmap6): the server's separate IPv6 listener, a
	 * relay listener on ::1. */
	int sockmap6_fd;
	struct slot slots6[MS_MAX_BACKENDS];

	uint64_t handoffs; /* sockets taken from servers */
	char off_why[256]; /* sk_lookup is off for want of kernel support: why */
	/* relay connects that failed, by backend id, and when the last one was
	 * logged (mono_ms): written by the relay threads (__atomic) */
	uint64_t relay_fail[MS_MAX_BACKENDS];
	uint64_t relay_fail_log[MS_MAX_BACKENDS];
	/* ports whose listener search failed in this sync_slots pass (| V6KEY
	 * for the IPv6 one): the other backends on them do not search again in
	 * the same pass */
	uint32_t failed_ports[64];
	size_t nfailed;
} S = {.sockmap_fd = -1, .sockmap6_fd = -1};

static void register_relay_metrics(void);

#define V6KEY 0x10000u

/* Whether a search for the listener of slot s on port (| V6KEY) may run now. */
static bool handoff_due(const struct slot *s, uint32_t port)
{
	if (!retry_due(&s->search, mono_ms()))
		return false;
	for (size_t i = 0; i < S.nfailed; i++)
		if (S.failed_ports[i] == port)
			return false;
	return true;
}

/* The search of slot s on port failed (ok false) or succeeded. */
static void handoff_tried(struct slot *s, uint32_t port, bool ok)
{
	uint32_t first = S.d->cfg->interval_ms ? S.d->cfg->interval_ms : 200;

	if (ok) {
		retry_ok(&s->search);
		return;
	}
	retry_failed(&s->search, mono_ms(), first, HANDOFF_RETRY_MAX_MS);
	if (S.nfailed < sizeof(S.failed_ports) / sizeof(S.failed_ports[0]))
		S.failed_ports[S.nfailed++] = port;
}

/* Relay listener key of a backend's IPv6 listener. */
#define RELAY6 0x80000000u

static uint64_t map_cookie(int map, uint32_t slot)
{
	uint64_t c = 0;

	if (map < 0 || bpf_map_lookup_elem(map, &slot, &c))
		return 0;
	return c;
}

/* Puts fd into slot unless it is there already. */
static int map_set(int map, uint32_t slot, int fd)
{
	uint64_t want = handoff_sock_cookie(fd), v = (uint64_t)fd;

	if (want && map_cookie(map, slot) == want)
		return 0;
	return bpf_map_update_elem(map, &slot, &v, BPF_ANY);
}

static void map_clear(int map, uint32_t slot)
{
	if (map >= 0 && bpf_map_delete_elem(map, &slot) && errno != ENOENT)
		log_debug("lookup: clear slot %u: %s", slot, strerror(errno));
}

static int sock_family(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		return -1;
	return ss.ss_family;
}

static uint64_t slot_cookie(uint32_t slot)
{
	return map_cookie(S.sockmap_fd, slot);
}

static int slot_set(uint32_t slot, int fd)
{
	return map_set(S.sockmap_fd, slot, fd);
}

static void slot_clear(uint32_t slot)
{
	map_clear(S.sockmap_fd, slot);
}

/*
 * IPv6 clients of an IPv4 backend whose server keeps a separate IPv6 listener
 * on the same port ([::], IPV6_V6ONLY, as mariadbd --bind-address=*; or [::1]
 * beside 127.0.0.1, as --bind-address=127.0.0.1,::1): that one goes into
 * steer_sockmap6. A dual-stack main socket needs nothing.
 */
/* IPv6 clients of an IPv4-only server (no IPv6 listener of its own): through
 * a relay listener on ::1. */
/* [backend:NAME] proxy_protocol of b (a backend added at run time has no
 * section: off). */
static bool wants_pp(const struct topo_backend *b)
{
	const struct config_backend *cb = config_find_backend(S.d->cfg, b->name);

	return cb && cb->proxy_protocol;
}

static void relay6(const struct topo_backend *b)
{
	struct slot *s = &S.slots6[b->id];
	int fd = relay_set_backend(S.relay, b->id | RELAY6, "::1",
	                           (const struct sockaddr *)&b->addr, b->addrlen);

	if (fd < 0)
		return; /* no ::1 here: IPv6 clients get the error listener */
	relay_set_proxy_protocol(S.relay, b->id | RELAY6, wants_pp(b));
	if (s->kind != SLOT_RELAY)
		log_info("lookup: %s: IPv6 clients relayed (the server has no IPv6 listener of "
		         "its own)",
		         b->name);
	s->kind = SLOT_RELAY;
	s->cookie = handoff_sock_cookie(fd);
	if (map_set(S.sockmap6_fd, b->id, fd))
		log_warn("lookup: %s: IPv6 relay listener into the SOCKMAP: %s", b->name,
		         strerror(errno));
}

/* No listener was taken; `other` >= 0 is the uid of one that was there but
 * is not the server's. Said once, until a listener is taken again. */
static void note_foreign_listener(struct slot *s, const char *backend, const char *where,
                                  long other, uid_t uid)
{
	if (other >= 0 && !s->warned)
		log_warn("lookup: %s: %s belongs to uid %ld, not to the server's uid %u: not taken",
		         backend, where, other, (unsigned)uid);
	s->warned = other >= 0;
}

static void sync_handoff6(const struct topo_backend *b, bool main_is_v4)
{
	struct slot *s = &S.slots6[b->id];
	const struct slot *m = &S.slots[b->id];
	struct sockaddr_in6 any = {.sin6_family = AF_INET6, .sin6_port = htons(b->port)};
	long other = -1;

	if (!main_is_v4) {
		if (s->kind == SLOT_RELAY)
			relay_remove_backend(S.relay, b->id | RELAY6);
		if (s->kind != SLOT_NONE)
			map_clear(S.sockmap6_fd, b->id);
		s->kind = SLOT_NONE;
		return;
	}
	if (s->kind == SLOT_HANDOFF && s->cookie && map_cookie(S.sockmap6_fd, b->id) == s->cookie)
		return;
	if (!m->uid_known || !handoff_due(s, b->port | V6KEY))
		return;
	/* Only the server's own: a listener of the same user. */
	int fd =
	    handoff_take_listener_uid((const struct sockaddr *)&any, (long)m->uid, NULL, &other);
	if (fd < 0) {
		/* a server listening on loopback alone (127.0.0.1 and ::1):
		 * sk_lookup hands over whatever address a socket is bound to */
		struct sockaddr_in6 lo = any;
		long other_any = other;

		lo.sin6_addr = in6addr_loopback;
		fd = handoff_take_listener_uid((const struct sockaddr *)&lo, (long)m->uid, NULL,
		                               &other);
		if (other < 0)
			other = other_any;
	}
	if (fd < 0) {
		char where[32];

		snprintf(where, sizeof(where), "[::]:%u", b->port);
		note_foreign_listener(s, b->name, where, other, m->uid);
		handoff_tried(s, b->port | V6KEY, false);
		relay6(b);
		return;
	}
	uint64_t cookie = handoff_sock_cookie(fd);
	bool had = map_cookie(S.sockmap6_fd, b->id) == cookie;
	if (sock_family(fd) == AF_INET6 && (had || !map_set(S.sockmap6_fd, b->id, fd))) {
		if (s->kind == SLOT_RELAY)
			relay_remove_backend(S.relay, b->id | RELAY6);
		s->kind = SLOT_HANDOFF;
		s->cookie = cookie;
		s->warned = false;
		if (!had)
			log_info("lookup: %s: IPv6 clients handed to the server's IPv6 listener",
			         b->name);
	}
	handoff_tried(s, b->port | V6KEY, s->kind == SLOT_HANDOFF);
	close(fd);
	if (s->kind != SLOT_HANDOFF)
		relay6(b);
}

/* Local handoff of backend b: a live entry we made stays; otherwise find the
 * server's listener and put it in (it may have restarted). */
static void sync_handoff(const struct topo_backend *b)
{
	struct slot *s = &S.slots[b->id];

	if (s->kind == SLOT_RELAY)
		relay_remove_backend(S.relay, b->id); /* closing drops the entry */
	if (s->kind == SLOT_HANDOFF && s->cookie && slot_cookie(b->id) == s->cookie) {
		sync_handoff6(b, s->v4);
		return;
	}
	s->kind = SLOT_HANDOFF;
	s->cookie = 0;
	if (!handoff_due(s, b->port))
		return;
	/* Once taken, only a listener of the same user again. */
	uid_t uid;
	long other = -1;
	int fd = handoff_take_listener_uid((const struct sockaddr *)&b->addr,
	                                   s->uid_known ? (long)s->uid : -1, &uid, &other);
	if (fd < 0) {
		char where[40];

		snprintf(where, sizeof(where), "the listener on port %u", b->port);
		note_foreign_listener(s, b->name, where, other, s->uid);
		log_debug("lookup: %s: no local listener on port %u yet", b->name, b->port);
		handoff_tried(s, b->port, false);
		return;
	}
	s->uid = uid;
	s->uid_known = true;
	s->warned = false;
	s->v4 = sock_family(fd) == AF_INET;
	uint64_t cookie = handoff_sock_cookie(fd);
	bool had = slot_cookie(b->id) == cookie;
	if (!had && slot_set(b->id, fd)) {
		log_warn("lookup: %s: listener into the SOCKMAP: %s", b->name, strerror(errno));
	} else {
		s->cookie = cookie;
		if (!had) {
			S.handoffs++;
			log_info("lookup: %s: local handoff to the server's own listener (port %u)",
			         b->name, b->port);
		}
	}
	handoff_tried(s, b->port, s->cookie != 0);
	close(fd); /* at once: a copy kept open outlives the server */
	sync_handoff6(b, s->v4);
}

static void sync_relay(const struct topo_backend *b)
{
	struct slot *s = &S.slots[b->id];
	const struct config *cfg = S.d->cfg;

	int fd = relay_set_backend(S.relay, b->id, cfg->relay_address,
	                           (const struct sockaddr *)&b->addr, b->addrlen);
	if (fd < 0) {
		log_warn("lookup: %s: relay listener on %s: %s", b->name, cfg->relay_address,
		         strerror(errno));
		return;
	}
	relay_set_proxy_protocol(S.relay, b->id, wants_pp(b));
	if (s->kind != SLOT_RELAY)
		log_info("lookup: %s: relayed through %s listener", b->name,
		         relay_mode_name(relay_default_mode()));
	s->kind = SLOT_RELAY;
	s->cookie = handoff_sock_cookie(fd);
	if (slot_set(b->id, fd))
		log_warn("lookup: %s: relay listener into the SOCKMAP: %s", b->name,
		         strerror(errno));
	/* An IPv4 relay listener cannot take IPv6 clients: a second one on
	 * ::1 does (sk_lookup ignores the address a socket is bound to). */
	struct slot *s6 = &S.slots6[b->id];
	if (sock_family(fd) != AF_INET) {
		if (s6->kind != SLOT_NONE)
			map_clear(S.sockmap6_fd, b->id);
		s6->kind = SLOT_NONE;
		return;
	}
	int fd6 = relay_set_backend(S.relay, b->id | RELAY6, "::1",
	                            (const struct sockaddr *)&b->addr, b->addrlen);
	if (fd6 >= 0)
		relay_set_proxy_protocol(S.relay, b->id | RELAY6, wants_pp(b));
	if (fd6 < 0) {
		if (s6->kind == SLOT_NONE)
			log_debug("lookup: %s: no IPv6 relay listener: %s", b->name,
			          strerror(errno));
		return;
	}
	s6->kind = SLOT_RELAY;
	s6->cookie = handoff_sock_cookie(fd6);
	if (map_set(S.sockmap6_fd, b->id, fd6))
		log_warn("lookup: %s: IPv6 relay listener into the SOCKMAP: %s", b->name,
		         strerror(errno));
}

static void drop_backend(uint32_t id)
{
	if (S.slots[id].kind == SLOT_RELAY)
		relay_remove_backend(S.relay, id);
	if (S.slots6[id].kind == SLOT_RELAY)
		relay_remove_backend(S.relay, id | RELAY6);
	slot_clear(id);
	map_clear(S.sockmap6_fd, id);
	memset(&S.slots[id], 0, sizeof(S.slots[id]));
	memset(&S.slots6[id], 0, sizeof(S.slots6[id]));
}

static void sync_slots(const struct topology *t)
{
	bool seen[MS_MAX_BACKENDS] = {false};

	S.nfailed = 0;
	for (size_t i = 0; i < t->nbackends; i++) {
		const struct topo_backend *b = &t->backends[i];
		if (b->id >= MS_MAX_BACKENDS || !b->addrlen)
			continue;
		seen[b->id] = true;
		if (S.d->cfg->local_handoff &&
		    handoff_addr_is_local((const struct sockaddr *)&b->addr))
			sync_handoff(b);
		else
			sync_relay(b);
	}
	for (uint32_t id = 0; id < MS_MAX_BACKENDS; id++)
		if (!seen[id] && S.slots[id].kind != SLOT_NONE)
			drop_backend(id);
}

/* A relay connect to a backend failed or timed out (on a relay thread): as
 * for a steered connect that failed (sockops), the backend is probed at
 * once and its connect_failures grows; one log line a second a backend. */
static void on_relay_fail(uint32_t listener, int err, void *arg)
{
	uint32_t id = listener & ~RELAY6;
	uint64_t now = mono_ms(), last;

	if (id >= MS_MAX_BACKENDS)
		return;
	__atomic_add_fetch(&S.relay_fail[id], 1, __ATOMIC_RELAXED);
	last = __atomic_load_n(&S.relay_fail_log[id], __ATOMIC_RELAXED);
	if (now - last >= 1000 &&
	    __atomic_compare_exchange_n(&S.relay_fail_log[id], &last, now, false, __ATOMIC_RELAXED,
	                                __ATOMIC_RELAXED)) {
		const struct topology *t = topo_current();
		const char *name = "?";
		for (size_t i = 0; t && i < t->nbackends; i++)
			if (t->backends[i].id == id)
				name = t->backends[i].name;
		log_warn("relay: a connect to backend %s failed (%s); probing it now", name,
		         strerror(err));
		topo_put(t);
	}
	if (S.d && S.d->request_probe)
		S.d->request_probe(S.d, id);
}

/* Close-on-demote of relay pairs: the relay closes its own (maps_on_demote). */
static void on_demote(const uint32_t mask[MS_MAX_BACKENDS], const uint16_t port[MS_ROUTE_SLOTS],
                      void *arg)
{
	for (uint32_t id = 0; id < MS_MAX_BACKENDS && S.relay; id++) {
		if (!mask[id])
			continue;
		for (uint32_t r = 0; r < MS_ROUTE_SLOTS && r < 32; r++) {
			if (!(mask[id] & (1u << r)) || !port[r])
				continue;
			if (S.slots[id].kind == SLOT_RELAY)
				relay_close_pairs(S.relay, id, port[r]);
			if (S.slots6[id].kind == SLOT_RELAY)
				relay_close_pairs(S.relay, id | RELAY6, port[r]);
		}
	}
}

static void on_topology(const struct topology *t, void *arg)
{
	if (!S.running)
		return;
	sync_slots(t);
}

/* A server that restarts leaves an empty slot; its new listener is picked up
 * here within one probe interval (up to HANDOFF_RETRY_MAX_MS after searches
 * that failed). */
static void on_timer(struct evloop *l, uint64_t id, void *arg)
{
	const struct topology *t;

	S.timer = 0;
	if (!S.running)
		return;
	t = topo_current();
	if (t) {
		sync_slots(t);
		topo_put(t);
	}
	S.timer = evloop_add_timer(S.d->loop, S.d->cfg->interval_ms, on_timer, NULL);
}

static bool link_is_our_netns(struct bpf_link *l)
{
	struct bpf_link_info info;
	__u32 len = sizeof(info);
	struct stat st;

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(bpf_link__fd(l), &info, &len) ||
	    info.type != BPF_LINK_TYPE_NETNS || stat("/proc/self/ns/net", &st))
		return false;
	return info.netns.netns_ino == st.st_ino;
}

/* Attach to our netns under the pinned name, adopting a predecessor's link by
 * swapping the program in place. */
static int attach(char *err, size_t errlen)
{
	char path[4200];
	struct bpf_link *old;
	int nsfd;

	snprintf(path, sizeof(path), "%s/%s", S.pin_dir, LOOKUP_LINK_NAME);
	old = access(path, F_OK) == 0 ? bpf_link__open(path) : NULL;
	if (old && link_is_our_netns(old) &&
	    !bpf_link__update_program(old, S.skel->progs.ms_sk_lookup)) {
		log_info("lookup: adopted pinned %s", LOOKUP_LINK_NAME);
		S.link = old;
		return 0;
	}
	nsfd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (nsfd < 0) {
		snprintf(err, errlen, "open /proc/self/ns/net: %s", strerror(errno));
		bpf_link__destroy(old);
		return -1;
	}
	S.link = bpf_program__attach_netns(S.skel->progs.ms_sk_lookup, nsfd);
	close(nsfd);
	if (!S.link) {
		snprintf(err, errlen, "attach sk_lookup to this netns: %s", strerror(errno));
		bpf_link__destroy(old);
		return -1;
	}
	if (old) {
		log_warn("lookup: replacing stale pinned %s", LOOKUP_LINK_NAME);
		bpf_link__unpin(old);
		bpf_link__destroy(old);
	} else if (access(path, F_OK) == 0) {
		unlink(path);
	}
	if (bpf_link__pin(S.link, path)) {
		snprintf(err, errlen, "pin %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

static int load(char *err, size_t errlen)
{
	LIBBPF_OPTS(bpf_object_open_opts, o, .pin_root_path = S.pin_dir);

	S.skel = steer_lookup__open_opts(&o);
	if (!S.skel || steer_lookup__load(S.skel)) {
		snprintf(err, errlen, "load steer_lookup: %s (stale pins under %s?)",
		         strerror(errno), S.pin_dir);
		return -1;
	}
	S.sockmap_fd = bpf_map__fd(S.skel->maps.steer_sockmap);
	S.sockmap6_fd = bpf_map__fd(S.skel->maps.steer_sockmap6);
	return 0;
}

static void lookup_stop(struct daemon_ctx *d, bool keep)
{
	bool was = S.running;

	S.running = false;
	maps_on_demote(NULL, NULL);
	if (S.timer && S.d && S.d->loop)
		evloop_del_timer(S.d->loop, S.timer);
	S.timer = 0;
	if (S.link) {
		if (!keep)
			bpf_link__unpin(S.link);
		bpf_link__destroy(S.link); /* a pinned link stays attached */
		S.link = NULL;
	}
	if (!keep && S.sockmap_fd >= 0)
		for (uint32_t id = 0; id < MS_MAX_BACKENDS; id++) {
			if (S.slots[id].kind == SLOT_HANDOFF)
				slot_clear(id);
			if (S.slots6[id].kind == SLOT_HANDOFF)
				map_clear(S.sockmap6_fd, id);
		}
	/* Closing the relay listeners drops their SOCKMAP entries;
	 * steer_service unpins the maps. */
	relay_free(S.relay);
	S.relay = NULL;
	steer_lookup__destroy(S.skel);
	S.skel = NULL;
	S.sockmap_fd = -1;
	S.sockmap6_fd = -1;
	memset(S.slots, 0, sizeof(S.slots));
	memset(S.slots6, 0, sizeof(S.slots6));
	if (was)
		log_info("lookup: stopped (%s)", keep ? "link left pinned" : "detached");
}

/*
 * The relay's share of the open-files limit: what is left after a reserve
 * for everything else (probes, the 6450 proxy's pools and listeners, admin
 * connections, eBPF objects): 128 plus 8 a backend, at least a quarter of
 * the limit. Past it the relay stops accepting for a moment instead of
 * taking the descriptors a probe needs (a failing probe takes the backend
 * down).
 */
static void set_fd_budget(const struct config *cfg)
{
	struct rlimit rl;
	uint64_t lim, reserve;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return;
	lim = rl.rlim_cur;
	reserve = 128 + 8 * (uint64_t)cfg->nbackends;
	if (reserve < lim / 4)
		reserve = lim / 4;
	relay_set_fd_budget(S.relay, lim > reserve + 16 ? lim - reserve : 16);
	log_info("lookup: the relay holds at most %llu descriptors (open files limit %llu)",
	         (unsigned long long)(lim > reserve + 16 ? lim - reserve : 16),
	         (unsigned long long)lim);
}

static int lookup_start(struct daemon_ctx *d, char *err, size_t errlen)
{
	const struct config *cfg = d->cfg;
	const struct topology *t;

	S.d = d;
	if (!cfg->lookup) {
		log_info("lookup: off");
		return 0;
	}
	snprintf(S.pin_dir, sizeof(S.pin_dir), "%s", cfg->bpffs_dir);
	/* relay_default_threads() (0); the override is for A/B benches. */
	unsigned threads = (unsigned)test_env_uint("MYSTEER_TEST_RELAY_THREADS", 0, 64);
	S.relay = relay_new(relay_default_mode(), threads, err, errlen);
	if (!S.relay)
		return -1;
	relay_set_connect_timeout(S.relay, (unsigned)cfg->connect_timeout_ms);
	set_fd_budget(cfg);
	relay_on_connect_fail(S.relay, on_relay_fail, NULL);
	if (maps_prepare_bpffs(S.pin_dir, err, errlen)) {
		lookup_stop(d, true);
		return -1;
	}
	/* A kernel without sk_lookup (5.9): the rest runs without it. */
	if (test_feature_off("sk_lookup"))
		snprintf(err, errlen, "off by MYSTEER_TEST_NO_FEATURE");
	if (test_feature_off("sk_lookup") || load(err, errlen)) {
		snprintf(S.off_why, sizeof(S.off_why), "%s", err);
		log_warn("kernel features: sk_lookup off (%s): connections to the service ports of "
		         "this host are not steered",
		         S.off_why);
		lookup_stop(d, true);
		err[0] = 0;
		return 0;
	}
	S.running = true;
	register_relay_metrics();
	/* Fill the slots before the program (maybe a new one) goes live. */
	t = topo_current();
	if (t) {
		on_topology(t, NULL);
		topo_put(t);
	}
	if (attach(err, errlen)) {
		/* Leave a predecessor's pinned link alone: it still steers. */
		lookup_stop(d, true);
		return -1;
	}
	if (!S.subscribed) {
		if (topo_subscribe(on_topology, NULL)) {
			snprintf(err, errlen, "topo_subscribe failed");
			lookup_stop(d, false);
			return -1;
		}
		S.subscribed = true;
	}
	S.timer = evloop_add_timer(d->loop, cfg->interval_ms, on_timer, NULL);
	maps_on_demote(on_demote, NULL);
	log_info("lookup: sk_lookup on this netns, relay %s on %s, local_handoff %s",
	         relay_mode_name(relay_default_mode()), cfg->relay_address,
	         cfg->local_handoff ? "on" : "off");
	return 0;
}

/* The relay's and the handoffs' figures, at each render (loop thread). */
static struct {
	struct metric_family *accepted, *active, *failed, *bytes, *handoffs;
} RM;

static void collect_relay(struct metrics *m, void *arg)
{
	struct relay_stats st;

	if (!S.running || !S.relay)
		return;
	relay_get_stats(S.relay, &st);
	metric_set(metric_series(RM.accepted, NULL), (double)st.accepted);
	metric_set(metric_series(RM.active, NULL), (double)st.active);
	metric_set(metric_series(RM.failed, NULL), (double)st.connect_failed);
	metric_set(metric_at(RM.bytes, "to_backend"), (double)st.bytes_up);
	metric_set(metric_at(RM.bytes, "to_client"), (double)st.bytes_down);
	metric_set(metric_series(RM.handoffs, NULL), (double)S.handoffs);
}

static void register_relay_metrics(void)
{
	static bool done;
	static const char *const dir[] = {"direction", NULL};
	const struct metric_def defs[] = {
	    {&RM.accepted, METRIC_COUNTER, "mysteer_relay_connections_total",
	     "Connections sk_lookup gave to the L4 relay", NULL},
	    {&RM.active, METRIC_GAUGE, "mysteer_relay_active_connections",
	     "Relayed connections open now", NULL},
	    {&RM.failed, METRIC_COUNTER, "mysteer_relay_connect_failures_total",
	     "Relay connections to a backend that failed", NULL},
	    {&RM.bytes, METRIC_COUNTER, "mysteer_relay_bytes_total",
	     "Bytes the relay moved, by direction (to_backend, to_client)", dir},
	    {&RM.handoffs, METRIC_COUNTER, "mysteer_lookup_handoffs_total",
	     "Listening sockets taken from local servers for sk_lookup handoff", NULL},
	};

	if (!done)
		done = metrics_register(defs, sizeof(defs) / sizeof(defs[0]), collect_relay, NULL);
}

static bool lookup_ready(char *why, size_t len)
{
	if (S.d && S.d->cfg->lookup && (!S.running || !S.link)) {
		snprintf(why, len, "lookup: sk_lookup is not attached");
		return false;
	}
	return true;
}

static void lookup_status(struct json_object *root)
{
	struct relay_stats st;
	struct json_object *o;

	if (S.off_why[0])
		json_object_object_add(root, "sk_lookup_off", json_object_new_string(S.off_why));
	if (!S.running)
		return;
	relay_get_stats(S.relay, &st);
	o = json_object_new_object();
	json_object_object_add(o, "relay_mode",
	                       json_object_new_string(relay_mode_name(relay_default_mode())));
	json_object_object_add(o, "handoffs", json_object_new_uint64(S.handoffs));
	json_object_object_add(o, "relay_accepted", json_object_new_uint64(st.accepted));
	json_object_object_add(o, "relay_active", json_object_new_uint64(st.active));
	json_object_object_add(o, "relay_connect_failed",
	                       json_object_new_uint64(st.connect_failed));
	json_object_object_add(o, "relay_bytes_up", json_object_new_uint64(st.bytes_up));
	json_object_object_add(o, "relay_bytes_down", json_object_new_uint64(st.bytes_down));
	json_object_object_add(root, "lookup", o);
}

static void lookup_reload(struct daemon_ctx *d, const struct config *cfg)
{
	if (S.relay)
		relay_set_connect_timeout(S.relay, (unsigned)cfg->connect_timeout_ms);
}

/* steered is counted by the program into the shared counters map, which
 * steer_service reports: only the relay's connect failures here, or it
 * would count twice. */
static void lookup_counters(uint32_t backend_id, struct backend_counters *c)
{
	if (backend_id < MS_MAX_BACKENDS)
		c->connect_failures += __atomic_load_n(&S.relay_fail[backend_id], __ATOMIC_RELAXED);
}

static void lookup_counters_reset(uint32_t backend_id)
{
	if (backend_id < MS_MAX_BACKENDS)
		__atomic_store_n(&S.relay_fail[backend_id], 0, __ATOMIC_RELAXED);
}

const struct service_ops lookup_service = {
    .name = "lookup",
    .start = lookup_start,
    .reload = lookup_reload,
    .stop = lookup_stop,
    .backend_counters = lookup_counters,
    .backend_reset = lookup_counters_reset,
    .status_json = lookup_status,
    .ready = lookup_ready,
};
