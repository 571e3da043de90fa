/*
 * controller.c - see controller.h. Probes run start-to-start every
 * interval_ms; a probe still running (a black-holed server, bounded by
 * timeout_ms) makes its backend skip a tick, never the others.
 *
 * A backend whose host is a name is looked up off the loop (resolver.h), all
 * of its lookups, the first one too: getaddrinfo() may wait for a DNS server
 * for seconds, and the loop probes every backend and answers the admin
 * socket. Until the first lookup answers the backend has no address and no
 * probe: it is skipped (not failed: a slow DNS server is not a flapping
 * backend), health stays unknown and last_error says "resolving NAME". The
 * first address is taken in place (same id: nothing was steered to the
 * backend yet) and the probe starts at once. A first lookup that fails makes
 * the probes fail with "cannot resolve NAME", so the backend goes down after
 * `fall` as before. Names are then looked up again every RESOLVE_PERIOD_MS and
 * whenever a probe fails to connect (at most every RESOLVE_RETRY_MS), one
 * lookup in flight per backend. A new address replaces the backend as a
 * reload with a changed host does: a new id, probe and health, the old one
 * dropped. Numeric hosts are parsed on the loop (AI_NUMERICHOST, no lookup).
 */
#include "topo/controller.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/evloop.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/testenv.h"
#include "probe/probe.h"
#include "topo/resolver.h"
#include "topo/rules.h"

#define MAX_PENDING 1024
/* Names are looked up again this often (not a config key; tests
 * shorten it with MYSTEER_TEST_RESOLVE_MS). */
#define RESOLVE_PERIOD_MS 30000
/* ... and after a failed connect, but not more often than this. */
#define RESOLVE_RETRY_MS 1000
/* A backend id given back (remove, a changed host or address) is given to a
 * new backend only after this long, and only once nothing holds it any more
 * (the consumers' open connections, a lookup in flight): long enough for
 * every consumer to have seen a topology without it. Tests shorten it with
 * MYSTEER_TEST_ID_REUSE_MS. */
#define ID_REUSE_MS 10000

/* The controller's figures (common/metrics.h), registered at controller_new. */
static struct {
	struct metric_family *probe_seconds, *probe_failures, *state_changes, *writer_changes;
} M;

static void register_metrics(void)
{
	static const char *const backend[] = {"backend", NULL};
	static const char *const reason[] = {"reason", NULL};

	M.probe_seconds = metrics_histogram("mysteer_backend_probe_duration_seconds",
	                                    "Duration of the successful health probes", backend,
	                                    metrics_latency_buckets, metrics_latency_nbuckets, 0);
	M.probe_failures = metrics_counter("mysteer_backend_probe_failures_total",
	                                   "Health probes that failed", backend, 0);
	M.state_changes =
	    metrics_counter("mysteer_backend_state_changes_total",
	                    "Changes of a backend's health (unknown, up, down)", backend, 0);
	M.writer_changes = metrics_counter(
	    "mysteer_writer_changes_total",
	    "Changes of the writer (to another or to none), by why: elected (there was none), "
	    "what the old writer became (down, disabled, drained, read_only), removed (from the "
	    "config), policy (writer_policy)",
	    reason, 0);
}

struct cbe {
	struct controller *c;
	struct topo_backend tb; /* the decided and probed state */
	struct probe *probe;
	struct hysteresis hy;
	uint64_t timer;
	bool warned_writable;
	bool warned_demoted;       /* said that it is writable but demoted */
	bool warned_misconfigured; /* the probe is refused: said once */
	bool is_name;              /* host is a name, looked up again over time */
	bool tls;                  /* the probe uses TLS (ctl_backend_spec) */
	bool resolving;            /* a lookup is in flight (keyed by tb.id) */
	bool resolve_failing;      /* the last lookup failed: warned once */
	uint64_t resolve_timer;
	uint64_t resolve_at_ms; /* mono_ms() of the last lookup started */
};

struct controller {
	struct evloop *l;
	const struct config *cfg;
	struct cbe **be;
	size_t nbe;
	/* Backend ids: an id never given (id_given false) is fresh; a given one
	 * is in use or was given back at freed_ms[id] (an id an earlier daemon
	 * left in the maps counts as given back at start). Ids index the eBPF
	 * maps and the 6450 pool's counters (TOPO_MAX_IDS), so they are reused
	 * (alloc_id); past TOPO_MAX_IDS, over_id counts up. */
	uint32_t over_id;
	bool id_given[TOPO_MAX_IDS];
	bool id_used[TOPO_MAX_IDS];
	struct topo_prior_ids *prior; /* until the next apply (start) */
	uint64_t id_freed_ms[TOPO_MAX_IDS];
	uint32_t id_lookups[TOPO_MAX_IDS]; /* resolver requests not answered yet */
	uint64_t id_reuse_ms;
	struct controller_id_hooks hooks;
	uint32_t writer_id; /* UINT32_MAX: none */
	bool have_writer;
	char writer_name[TOPO_NAME_MAX]; /* for the log when it went away */
	/* The writer chosen last, kept while there is none (it missed probes,
	 * or a restart before it is probed): the rules' prev_writer. */
	char sticky[TOPO_NAME_MAX];
	struct state_runtime *restored; /* until the next apply (start) */
	struct state_runtime saved;     /* what persist was called with last */
	void (*persist_fn)(const struct state_runtime *rt, void *arg);
	void *persist_arg;
	struct topology *last; /* last published, for change detection */

	struct resolver *res;
	uint64_t resolve_period_ms;

	controller_filter_fn filter;
	void *filter_arg;
	controller_vote_fn vote; /* may hold a backend seen down as up */
	void *vote_arg;
	int interval_ms; /* the probe interval set by a part; 0: the config's */

	pthread_mutex_t pend_lock;
	uint32_t pending[MAX_PENDING];
	size_t npending;
};

static void recompute(struct controller *c, bool force_publish);

static int64_t real_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A change of a backend's health, admin state or role, kept as its last
 * change (`mysteerctl status`). */
static void backend_vnote(struct topo_backend *tb, const char *fmt, va_list ap)
{
	vsnprintf(tb->last_change, sizeof(tb->last_change), fmt, ap);
	tb->last_change_ms = real_ms();
}

__attribute__((format(printf, 2, 3))) static void backend_note(struct topo_backend *tb,
                                                               const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	backend_vnote(tb, fmt, ap);
	va_end(ap);
}

/* The same, also logged as a line that starts with the backend's name. */
__attribute__((format(printf, 3, 4))) static void
backend_event(struct topo_backend *tb, enum log_level lvl, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	backend_vnote(tb, fmt, ap);
	va_end(ap);
	log_msg(lvl, "%s %s", tb->name, tb->last_change);
}

static struct cbe *find_id(struct controller *c, uint32_t id)
{
	for (size_t i = 0; i < c->nbe; i++)
		if (c->be[i]->tb.id == id)
			return c->be[i];
	return NULL;
}

static void on_probe(void *arg, const struct probe_result *r);

static void start_probe(struct cbe *b)
{
	/* A name with no address yet has no probe: libmysqlclient would look it
	 * up inside its connect, on this loop, blocking every other probe for as
	 * long as DNS takes. While the first lookup runs it is skipped (health
	 * stays unknown, `fall` is not counted); once a lookup failed, the probe
	 * fails here; the lookups go on off the loop. */
	if (b->is_name && b->tb.addrlen == 0) {
		struct probe_result r = {.connect_failed = true};

		if (!b->resolve_failing)
			return;

		snprintf(r.error, sizeof(r.error),
		         "cannot resolve %.100s (not probed until it does)", b->tb.host);
		on_probe(b, &r);
		return;
	}
	if (!b->probe || probe_busy(b->probe))
		return;
	if (probe_start(b->probe, (unsigned)b->c->cfg->timeout_ms) < 0)
		log_warn("%s: cannot start a probe", b->tb.name);
}

static void request_resolve(struct cbe *b)
{
	if (!b->is_name || b->resolving)
		return;
	if (resolver_submit(b->c->res, b->tb.id, b->tb.host, b->tb.port) < 0) {
		log_warn("%s: cannot start a lookup of %s", b->tb.name, b->tb.host);
		return;
	}
	if (b->tb.id < TOPO_MAX_IDS)
		b->c->id_lookups[b->tb.id]++;
	b->resolving = true;
	b->resolve_at_ms = mono_ms();
}

static void on_resolve_tick(struct evloop *l, uint64_t id, void *arg)
{
	struct cbe *b = arg;
	b->resolve_timer = evloop_add_timer(l, b->c->resolve_period_ms, on_resolve_tick, b);
	if (!b->resolve_timer)
		log_warn("%s: no timer for looking up %s again", b->tb.name, b->tb.host);
	request_resolve(b);
}

static void on_tick(struct evloop *l, uint64_t id, void *arg)
{
	struct cbe *b = arg;
	/* Re-arm first: the probe may finish synchronously and recompute. */
	b->timer = evloop_add_timer(
	    l, (uint64_t)(b->c->interval_ms ? b->c->interval_ms : b->c->cfg->interval_ms), on_tick,
	    b);
	start_probe(b);
}

static void log_health(struct cbe *b, enum be_health from, const struct probe_result *r)
{
	if (b->tb.health == HEALTH_DOWN)
		backend_event(&b->tb, LOG_LVL_WARN, "%s -> down: %s", topo_health_name(from),
		              r->error);
	else
		backend_event(&b->tb, LOG_LVL_INFO, "%s -> %s", topo_health_name(from),
		              topo_health_name(b->tb.health));
}

static void on_probe(void *arg, const struct probe_result *r)
{
	struct cbe *b = arg;
	struct controller *c = b->c;
	enum be_health before = b->tb.health;

	b->tb.last_probe_ms = real_ms();
	/* Refused by the server (access denied, a privilege missing): the
	 * monitoring user is misconfigured, the server is not down. Marking it
	 * down would empty 6446 over a grant; its last state stays, and the
	 * reason is shown. */
	if (!r->ok && r->misconfigured) {
		snprintf(b->tb.last_error, sizeof(b->tb.last_error),
		         "misconfigured, last state kept: %.120s", r->error);
		if (!b->warned_misconfigured)
			log_warn("%s: the probe is refused (%s): check [probe] user, password and "
			         "its grants (SLAVE MONITOR or REPLICATION CLIENT); %s stays %s",
			         b->tb.name, r->error, b->tb.name, topo_health_name(b->tb.health));
		b->warned_misconfigured = true;
		return;
	}
	if (b->warned_misconfigured)
		log_info("%s: the probe is accepted again", b->tb.name);
	b->warned_misconfigured = false;
	hysteresis_step(&b->hy, r->ok, c->cfg->rise, c->cfg->fall);
	b->tb.health = b->hy.health;
	if (r->ok) {
		b->tb.read_only = r->read_only;
		b->tb.replicating = r->replicating;
		b->tb.has_lag = r->has_lag;
		b->tb.lag_s = r->lag_s;
		b->tb.probe_ms = r->latency_ms;
		b->tb.last_error[0] = '\0';
		metric_observe(metric_at(M.probe_seconds, b->tb.name), r->latency_ms / 1000.0);
	} else {
		metric_inc(metric_at(M.probe_failures, b->tb.name));
		snprintf(b->tb.last_error, sizeof(b->tb.last_error), "%s", r->error);
		log_debug("%s: probe failed: %s", b->tb.name, r->error);
		/* The name may point elsewhere now (a cloud endpoint's failover). */
		if (r->connect_failed && mono_ms() - b->resolve_at_ms >= RESOLVE_RETRY_MS)
			request_resolve(b);
	}
	if (b->tb.health != before) {
		log_health(b, before, r);
		metric_inc(metric_at(M.state_changes, b->tb.name));
	}
	recompute(c, false);
}

/* A numeric host's address, parsed with no lookup (AI_NUMERICHOST); -1 for a
 * name. */
static int parse_numeric(struct topo_backend *tb)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
	                         .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV};
	struct addrinfo *ai = NULL;
	char port[8];
	snprintf(port, sizeof(port), "%u", tb->port);
	tb->addrlen = 0;
	if (getaddrinfo(tb->host, port, &hints, &ai) != 0 || !ai ||
	    ai->ai_addrlen > sizeof(tb->addr)) {
		if (ai)
			freeaddrinfo(ai);
		return -1;
	}
	memcpy(&tb->addr, ai->ai_addr, ai->ai_addrlen);
	tb->addrlen = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

static bool same_addr(const struct sockaddr_storage *a, socklen_t alen,
                      const struct sockaddr_storage *b, socklen_t blen)
{
	if (alen == 0 || blen == 0 || a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
		return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	if (a->ss_family == AF_INET6) {
		const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
		return x->sin6_port == y->sin6_port && x->sin6_scope_id == y->sin6_scope_id &&
		       memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr)) == 0;
	}
	return alen == blen && memcmp(a, b, alen) == 0;
}

/* Whether nothing holds the id any more: given back long enough ago, no
 * lookup of the old backend in flight, no connection of a consumer open. */
static bool id_reusable(struct controller *c, uint32_t id, uint64_t now)
{
	if (c->id_used[id] || c->id_lookups[id] > 0 || now - c->id_freed_ms[id] < c->id_reuse_ms)
		return false;
	return !c->hooks.busy || !c->hooks.busy(id, c->hooks.arg);
}

/*
 * The id of a new backend: a fresh one while there are, then the one given
 * back longest ago that nothing holds any more (its consumers' counters start
 * again from zero). When none is free, an id past TOPO_MAX_IDS, which the
 * maps and the pool cannot hold: said in the log.
 */
/*
 * The id an earlier daemon gave this backend: the one whose entry in the
 * pinned maps meant its address (what sockets and SOCKMAP slots hold), else
 * the one the state file kept for its name, host and port, unless the maps
 * say that id meant another address. UINT32_MAX: none.
 */
static uint32_t prior_id(struct controller *c, const struct ctl_backend_spec *s,
                         const struct sockaddr_storage *addr, socklen_t addrlen)
{
	const struct topo_prior_ids *p = c->prior;

	if (!p)
		return UINT32_MAX;
	for (uint32_t id = 0; addrlen && id < TOPO_MAX_IDS; id++)
		if (p->held[id] && !c->id_used[id] &&
		    same_addr(&p->addr[id], p->addrlen[id], addr, addrlen))
			return id;
	for (uint32_t id = 0; id < TOPO_MAX_IDS; id++) {
		if (c->id_used[id] || strcmp(p->kept[id].name, s->name) != 0 ||
		    strcmp(p->kept[id].host, s->host) != 0 || p->kept[id].port != s->port)
			continue;
		if (p->addrlen[id] &&
		    (!addrlen || !same_addr(&p->addr[id], p->addrlen[id], addr, addrlen)))
			continue;
		return id;
	}
	return UINT32_MAX;
}

static uint32_t alloc_id(struct controller *c, const struct ctl_backend_spec *s,
                         const struct sockaddr_storage *addr, socklen_t addrlen)
{
	const char *name = s->name;
	uint64_t now = mono_ms();
	uint32_t best = prior_id(c, s, addr, addrlen);

	if (best != UINT32_MAX) {
		c->id_given[best] = c->id_used[best] = true;
		log_info("%s: backend id %u, as before the restart", name, best);
		return best;
	}
	for (uint32_t id = 0; id < TOPO_MAX_IDS; id++)
		if (!c->id_given[id]) {
			c->id_given[id] = c->id_used[id] = true;
			return id;
		}
	for (uint32_t id = 0; id < TOPO_MAX_IDS; id++)
		if ((best == UINT32_MAX || c->id_freed_ms[id] < c->id_freed_ms[best]) &&
		    id_reusable(c, id, now))
			best = id;
	if (best != UINT32_MAX) {
		c->id_used[best] = true;
		if (c->hooks.reused)
			c->hooks.reused(best, c->hooks.arg);
		log_info("%s: backend id %u (given back %llu ms ago)", name, best,
		         (unsigned long long)(now - c->id_freed_ms[best]));
		return best;
	}
	log_warn("%s: no backend id is free (the eBPF maps and the 6450 pool hold %u; an id "
	         "given back is reused after %llu ms, once no connection to its old backend "
	         "is open): 6446/6447 steer nothing to it and the pool does not cap it; "
	         "remove it and add it again later",
	         name, TOPO_MAX_IDS, (unsigned long long)c->id_reuse_ms);
	return TOPO_MAX_IDS + c->over_id++;
}

static void free_id(struct controller *c, uint32_t id)
{
	if (id >= TOPO_MAX_IDS)
		return;
	c->id_used[id] = false;
	c->id_freed_ms[id] = mono_ms();
}

static void free_cbe(struct controller *c, struct cbe *b)
{
	free_id(c, b->tb.id);
	if (b->timer)
		evloop_del_timer(c->l, b->timer);
	if (b->resolve_timer)
		evloop_del_timer(c->l, b->resolve_timer);
	probe_free(b->probe);
	free(b);
}

/* The probe connects to the numeric address, the very one the maps and the
 * proxy steer to (never to a name: libmysqlclient would resolve it inside its
 * non-blocking connect, on this loop). Made once the backend has an address. */
static int make_probe(struct cbe *b)
{
	char numeric[INET6_ADDRSTRLEN];
	const char *a = topo_addr_str(&b->tb.addr, b->tb.addrlen, numeric, sizeof(numeric));
	if (!a)
		return -1;
	b->probe = probe_new(b->c->l, a, b->tb.port, b->c->cfg->probe_user,
	                     b->c->cfg->probe_password, on_probe, b);
	if (!b->probe)
		return -1;
	probe_set_tls(b->probe, b->tls);
	return 0;
}

/* addr: the address already looked up (a name that moved), else NULL. */
static struct cbe *new_cbe(struct controller *c, const struct ctl_backend_spec *s,
                           const struct sockaddr_storage *addr, socklen_t addrlen)
{
	struct cbe *b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->c = c;
	b->tls = s->tls;
	snprintf(b->tb.name, sizeof(b->tb.name), "%s", s->name);
	snprintf(b->tb.host, sizeof(b->tb.host), "%s", s->host);
	b->tb.port = s->port;
	if (addr) {
		b->is_name = true; /* only names move */
		memcpy(&b->tb.addr, addr, addrlen);
		b->tb.addrlen = addrlen;
	} else {
		b->is_name = parse_numeric(&b->tb) < 0;
	}
	b->tb.id = alloc_id(c, s, &b->tb.addr, b->tb.addrlen);
	/* A name not looked up yet: no probe until on_resolved() gives it an
	 * address; the lookup starts now, off the loop. */
	if (b->tb.addrlen && make_probe(b) < 0) {
		free_id(c, b->tb.id);
		free(b);
		return NULL;
	}
	/* The first probe at once, so that `rise` is reached quickly at start. */
	b->timer = evloop_add_timer(c->l, 0, on_tick, b);
	if (b->is_name) {
		b->resolve_timer = evloop_add_timer(c->l, c->resolve_period_ms, on_resolve_tick, b);
		if (!b->resolve_timer)
			log_warn("%s: no timer for looking up %s again", s->name, s->host);
		if (!b->tb.addrlen) {
			snprintf(b->tb.last_error, sizeof(b->tb.last_error),
			         "resolving %.100s (not probed until it resolves)", s->host);
			request_resolve(b);
			if (!b->resolving) /* no lookup thread: fail as a failed lookup */
				b->resolve_failing = true;
		} else {
			b->resolve_at_ms = mono_ms();
		}
	}
	return b;
}

static struct cbe *take_existing(struct controller *c, const struct ctl_backend_spec *s)
{
	for (size_t i = 0; i < c->nbe; i++) {
		struct cbe *b = c->be[i];
		if (!b || strcmp(b->tb.name, s->name) != 0)
			continue;
		if (strcmp(b->tb.host, s->host) != 0 || b->tb.port != s->port)
			return NULL; /* moved: a new id, probe and health */
		c->be[i] = NULL;
		return b;
	}
	return NULL;
}

/*
 * At start, what the last run left: which backends were demoted (same name,
 * host and port), and the writer it chose (the state file's, else the
 * writer of the pinned maps' active generation, by the id its address took
 * back). Both are for the first apply only.
 */
static void take_restored(struct controller *c)
{
	const struct state_runtime *rt = c->restored;

	for (size_t i = 0; rt && i < c->nbe; i++)
		for (size_t k = 0; k < rt->n; k++) {
			struct topo_backend *tb = &c->be[i]->tb;
			if (rt->b[k].demoted && strcmp(rt->b[k].name, tb->name) == 0 &&
			    strcmp(rt->b[k].host, tb->host) == 0 && rt->b[k].port == tb->port)
				tb->demoted = true;
		}
	if (!c->sticky[0] && c->prior && c->prior->writer_id >= 0)
		for (size_t i = 0; i < c->nbe; i++)
			if (c->be[i]->tb.id == (uint64_t)c->prior->writer_id &&
			    c->prior->held[c->be[i]->tb.id])
				snprintf(c->sticky, sizeof(c->sticky), "%s", c->be[i]->tb.name);
	if (c->sticky[0] && (rt || c->prior))
		log_info("the writer of the last run was %s: it stays the writer while it is live "
		         "and writable",
		         c->sticky);
	if (rt)
		free(rt->b);
	free(c->restored);
	c->restored = NULL;
	free(c->prior);
	c->prior = NULL;
}

int controller_apply(struct controller *c, const struct config *cfg,
                     const struct ctl_backend_spec *specs, size_t n)
{
	struct cbe **nb = calloc(n ? n : 1, sizeof(*nb));
	if (!nb)
		return -1;
	bool new_creds = c->cfg && (strcmp(c->cfg->probe_user, cfg->probe_user) != 0 ||
	                            strcmp(c->cfg->probe_password, cfg->probe_password) != 0);
	c->cfg = cfg;
	for (size_t i = 0; i < n; i++) {
		struct cbe *b = take_existing(c, &specs[i]);
		if (b && new_creds && b->probe &&
		    probe_set_credentials(b->probe, cfg->probe_user, cfg->probe_password) < 0)
			log_error("%s: out of memory for the new probe credentials", b->tb.name);
		if (b) {
			b->tls = specs[i].tls;
			if (b->probe)
				probe_set_tls(b->probe, b->tls);
		}
		if (!b) {
			b = new_cbe(c, &specs[i], NULL, 0);
			if (!b)
				goto fail;
			log_info("%s: probing %s:%u", b->tb.name, b->tb.host, b->tb.port);
		}
		b->tb.priority = specs[i].priority;
		b->tb.weight = specs[i].weight;
		if (b->tb.admin != specs[i].admin)
			backend_event(&b->tb, LOG_LVL_INFO, "%s -> %s (an operator)",
			              topo_admin_name(b->tb.admin),
			              topo_admin_name(specs[i].admin));
		b->tb.admin = specs[i].admin;
		nb[i] = b;
	}
	for (size_t i = 0; i < c->nbe; i++) {
		if (!c->be[i])
			continue;
		log_info("%s: removed", c->be[i]->tb.name);
		free_cbe(c, c->be[i]);
	}
	free(c->be);
	c->be = nb;
	c->nbe = n;
	take_restored(c);
	recompute(c, true);
	return 0;
fail:
	/* Put back what was taken so the old list stays whole. */
	for (size_t i = 0; i < n; i++) {
		if (!nb[i])
			continue;
		bool placed = false;
		for (size_t j = 0; j < c->nbe && !placed; j++) {
			if (!c->be[j] && strcmp(specs[i].name, nb[i]->tb.name) == 0) {
				c->be[j] = nb[i];
				placed = true;
			}
		}
		if (!placed)
			free_cbe(c, nb[i]);
	}
	free(nb);
	return -1;
}

/*
 * The backend's name points elsewhere: replace it by a new one at the new
 * address, as controller_apply() does for a backend whose host or port
 * changed (a new id, probe and health; consumers see the old id go).
 */
static void move_backend(struct controller *c, size_t i, const struct resolver_result *r)
{
	struct cbe *old = c->be[i];
	struct ctl_backend_spec s = {.port = old->tb.port,
	                             .priority = old->tb.priority,
	                             .weight = old->tb.weight,
	                             .admin = old->tb.admin,
	                             .tls = old->tls};
	snprintf(s.name, sizeof(s.name), "%s", old->tb.name);
	snprintf(s.host, sizeof(s.host), "%s", old->tb.host);
	struct cbe *b = new_cbe(c, &s, &r->addr[0], r->addrlen[0]);
	if (!b) {
		/* Kept as it is; the next lookup tries again. */
		log_error("%s: out of memory moving to the new address", s.name);
		return;
	}
	b->tb.priority = s.priority;
	b->tb.weight = s.weight;
	b->tb.admin = s.admin;
	c->be[i] = b;
	free_cbe(c, old);
	recompute(c, true);
}

/*
 * A backend's first address (its name had not resolved yet): taken in place,
 * keeping the id, since nothing could steer to the backend without one. The
 * probe is made now and starts at once; health starts over from unknown (a
 * backend down because its name did not resolve needs `rise` good probes).
 */
static void first_address(struct controller *c, struct cbe *b, const struct resolver_result *r)
{
	char buf[INET6_ADDRSTRLEN];
	const char *now;

	memcpy(&b->tb.addr, &r->addr[0], r->addrlen[0]);
	b->tb.addrlen = r->addrlen[0];
	if (make_probe(b) < 0) {
		/* Looked up again on the period or after the next failed probe. */
		log_error("%s: out of memory for the probe of %s", b->tb.name, b->tb.host);
		b->tb.addrlen = 0;
		b->resolve_failing = true;
		return;
	}
	now = topo_addr_str(&b->tb.addr, b->tb.addrlen, buf, sizeof(buf));
	log_info("%s address none -> %s (host %s)", b->tb.name, now ? now : "?", b->tb.host);
	b->hy = (struct hysteresis){0};
	b->tb.health = HEALTH_UNKNOWN;
	b->tb.last_error[0] = '\0';
	recompute(c, true);
	start_probe(b);
}

static void on_resolved(void *arg, const struct resolver_result *r)
{
	struct controller *c = arg;
	char wbuf[INET6_ADDRSTRLEN], nbuf[INET6_ADDRSTRLEN];
	const char *was, *now;
	struct cbe *b = NULL;
	size_t i;

	if (r->key < TOPO_MAX_IDS && c->id_lookups[r->key] > 0)
		c->id_lookups[r->key]--;
	for (i = 0; i < c->nbe && !b; i++)
		if (c->be[i]->tb.id == r->key && c->be[i]->resolving)
			b = c->be[i];
	if (!b)
		return; /* removed, or moved, while the lookup ran */
	i--;
	b->resolving = false;
	was = topo_addr_str(&b->tb.addr, b->tb.addrlen, wbuf, sizeof(wbuf));
	if (r->err) {
		if (b->resolve_failing)
			return;
		if (was)
			log_warn("%s: cannot resolve %s: %s; keeping %s", b->tb.name, b->tb.host,
			         r->error, was);
		else
			log_warn("%s: cannot resolve %s: %s; not probed until it does", b->tb.name,
			         b->tb.host, r->error);
		b->resolve_failing = true;
		return;
	}
	if (b->resolve_failing)
		log_info("%s: %s resolves again", b->tb.name, b->tb.host);
	b->resolve_failing = false;
	if (!was) {
		first_address(c, b, r);
		return;
	}
	/* Still one of the name's addresses (several records, maybe rotated by
	 * the server): no move. Else the first, as the first lookup took. */
	for (size_t k = 0; k < r->naddrs; k++)
		if (same_addr(&b->tb.addr, b->tb.addrlen, &r->addr[k], r->addrlen[k]))
			return;
	now = topo_addr_str(&r->addr[0], r->addrlen[0], nbuf, sizeof(nbuf));
	log_info("%s address %s -> %s (host %s)", b->tb.name, was ? was : "none", now ? now : "?",
	         b->tb.host);
	move_backend(c, i, r);
}

struct topology *controller_snapshot(struct controller *c)
{
	size_t nr = c->cfg ? c->cfg->nroutes : 0;
	struct topology *t = topo_alloc(c->nbe, nr);
	if (!t)
		return NULL;
	for (size_t i = 0; i < c->nbe; i++) {
		t->backends[i] = c->be[i]->tb;
		if (c->have_writer && c->be[i]->tb.id == c->writer_id)
			t->writer = (int)i;
	}
	for (size_t i = 0; i < nr; i++) {
		snprintf(t->routes[i].name, sizeof(t->routes[i].name), "%s",
		         c->cfg->routes[i].name);
		t->routes[i].port = c->cfg->routes[i].port;
		t->routes[i].role = c->cfg->routes[i].role;
	}
	if (c->filter)
		c->filter(t, c->filter_arg);
	return t;
}

void controller_set_filter(struct controller *c, controller_filter_fn fn, void *arg)
{
	c->filter = fn;
	c->filter_arg = arg;
}

void controller_set_vote(struct controller *c, controller_vote_fn fn, void *arg)
{
	c->vote = fn;
	c->vote_arg = arg;
}

void controller_set_interval(struct controller *c, int ms)
{
	c->interval_ms = ms;
}

void controller_refresh(struct controller *c)
{
	if (c->cfg)
		recompute(c, false);
}

void controller_hint_writer(struct controller *c, const char *name)
{
	for (size_t i = 0; i < c->nbe; i++)
		if (!strcmp(c->be[i]->tb.name, name)) {
			snprintf(c->sticky, sizeof(c->sticky), "%s", name);
			return;
		}
}

/* What consumers act on: roles, health, admin, weights, addresses, routes. */
static bool differs(const struct topology *a, const struct topology *b)
{
	if (!a || !b || a->nbackends != b->nbackends || a->nroutes != b->nroutes ||
	    a->writer != b->writer || strcmp(a->fence, b->fence) != 0)
		return true;
	for (size_t i = 0; i < a->nbackends; i++) {
		const struct topo_backend *x = &a->backends[i], *y = &b->backends[i];
		if (x->id != y->id || x->role != y->role || x->health != y->health ||
		    x->admin != y->admin || x->priority != y->priority || x->weight != y->weight ||
		    x->read_only != y->read_only || x->replicating != y->replicating ||
		    x->port != y->port || strcmp(x->host, y->host) != 0 ||
		    ((x->addrlen || y->addrlen) &&
		     !same_addr(&x->addr, x->addrlen, &y->addr, y->addrlen)))
			return true;
	}
	return memcmp(a->routes, b->routes, a->nroutes * sizeof(a->routes[0])) != 0;
}

static void log_roles(struct controller *c, const enum be_role *roles,
                      char (*reasons)[RULES_REASON_MAX], const bool *extra)
{
	for (size_t i = 0; i < c->nbe; i++) {
		struct cbe *b = c->be[i];
		if (roles[i] != b->tb.role && roles[i] != ROLE_WRITER &&
		    b->tb.role != ROLE_WRITER) {
			if (reasons[i][0])
				backend_event(&b->tb, LOG_LVL_INFO, "%s -> %s: %s",
				              topo_role_name(b->tb.role), topo_role_name(roles[i]),
				              reasons[i]);
			else
				backend_event(&b->tb, LOG_LVL_INFO, "%s -> %s",
				              topo_role_name(b->tb.role), topo_role_name(roles[i]));
		}
		if (extra[i] && !b->warned_writable)
			log_warn(
			    "TWO WRITABLE SERVERS: %s is writable but is not the writer (%s is): "
			    "it gets no writes; the writer does not move by itself",
			    b->tb.name, c->sticky[0] ? c->sticky : "none");
		b->warned_writable = extra[i];
		b->tb.extra_writable = extra[i];
		b->tb.role = roles[i];
	}
}

/* Why the writer changed, from a fixed list (a bounded metric label): what
 * made the old writer lose it, or elected / removed. */
static const char *writer_change_reason(const struct controller *c, int prev)
{
	if (prev < 0)
		return c->have_writer ? "removed" : "elected";
	const struct topo_backend *o = &c->be[prev]->tb;
	if (o->admin == ADMIN_DISABLED)
		return "disabled";
	if (o->admin == ADMIN_DRAINED)
		return "drained";
	if (o->health != HEALTH_UP)
		return "down";
	if (o->read_only)
		return "read_only";
	return "policy";
}

/*
 * A new writer demotes the one chosen before it (sticky), which with
 * failback off is not chosen again by itself; the writer is remembered
 * while there is none. A demoted server that is writable while there is
 * no writer is said once.
 */
static void note_writer(struct controller *c, int sticky, int writer)
{
	if (writer >= 0) {
		struct topo_backend *w = &c->be[writer]->tb;
		if (sticky >= 0 && sticky != writer && !c->be[sticky]->tb.demoted) {
			c->be[sticky]->tb.demoted = true;
			if (c->cfg->failback)
				log_warn("%s demoted: %s is the writer now", c->be[sticky]->tb.name,
				         w->name);
			else
				log_warn(
				    "%s demoted: %s is the writer now; with failback = off %s "
				    "does not become the writer again until `mysteerctl enable "
				    "%s`",
				    c->be[sticky]->tb.name, w->name, c->be[sticky]->tb.name,
				    c->be[sticky]->tb.name);
		}
		w->demoted = false;
		snprintf(c->sticky, sizeof(c->sticky), "%s", w->name);
		for (size_t i = 0; i < c->nbe; i++)
			c->be[i]->warned_demoted = false;
		return;
	}
	for (size_t i = 0; i < c->nbe && !c->cfg->failback; i++) {
		struct cbe *b = c->be[i];
		bool writable =
		    topo_backend_usable(&b->tb) &&
		    (c->cfg->writer_policy == WRITER_POLICY_PRIORITY || !b->tb.read_only);
		if (b->tb.demoted && writable && !b->warned_demoted)
			log_warn("no writer: %s is writable but was demoted (failback = off): "
			         "`mysteerctl enable %s` lets it become the writer",
			         b->tb.name, b->tb.name);
		b->warned_demoted = b->tb.demoted && writable;
	}
}

static bool same_runtime(const struct state_runtime *a, const struct state_runtime *b)
{
	return strcmp(a->writer, b->writer) == 0 && a->n == b->n &&
	       (!a->n || memcmp(a->b, b->b, a->n * sizeof(a->b[0])) == 0);
}

/* The runtime state to the daemon (state file) when it changed. */
static void persist(struct controller *c)
{
	struct state_runtime rt;

	if (!c->persist_fn)
		return;
	memset(&rt, 0, sizeof(rt));
	snprintf(rt.writer, sizeof(rt.writer), "%s", c->sticky);
	rt.b = calloc(c->nbe ? c->nbe : 1, sizeof(*rt.b));
	if (!rt.b) {
		log_error("out of memory saving the writer and the backend ids");
		return;
	}
	for (size_t i = 0; i < c->nbe; i++) {
		const struct topo_backend *tb = &c->be[i]->tb;
		struct state_runtime_backend *e = &rt.b[rt.n];
		if (tb->id >= TOPO_MAX_IDS)
			continue;
		snprintf(e->name, sizeof(e->name), "%s", tb->name);
		snprintf(e->host, sizeof(e->host), "%s", tb->host);
		e->port = tb->port;
		e->id = tb->id;
		e->demoted = tb->demoted;
		rt.n++;
	}
	if (same_runtime(&rt, &c->saved)) {
		free(rt.b);
		return;
	}
	c->persist_fn(&rt, c->persist_arg);
	free(c->saved.b);
	c->saved = rt;
}

static void recompute(struct controller *c, bool force_publish)
{
	size_t n = c->nbe;
	struct rules_backend *in = calloc(n ? n : 1, sizeof(*in));
	enum be_role *roles = calloc(n ? n : 1, sizeof(*roles));
	char(*reasons)[RULES_REASON_MAX] = calloc(n ? n : 1, sizeof(*reasons));
	bool *extra = calloc(n ? n : 1, sizeof(*extra));
	if (!in || !roles || !reasons || !extra) {
		log_error("out of memory deciding the topology");
		goto out;
	}
	int prev = -1, sticky = -1;
	for (size_t i = 0; i < n; i++) {
		struct topo_backend *tb = &c->be[i]->tb;
		/* Rejoined as a replica (by an operator or a failover tool): it
		 * follows the writer now, and may become it again. */
		if (tb->demoted && tb->health == HEALTH_UP && tb->read_only && tb->replicating) {
			tb->demoted = false;
			log_info(
			    "%s is a replica again (read_only, replicating): no longer demoted",
			    tb->name);
		}
		in[i] = (struct rules_backend){.priority = tb->priority,
		                               .weight = tb->weight,
		                               .admin = tb->admin,
		                               .health = tb->health,
		                               .read_only = tb->read_only,
		                               .replicating = tb->replicating,
		                               .has_lag = tb->has_lag,
		                               .lag_s = tb->lag_s,
		                               .demoted = tb->demoted};
		if (tb->health == HEALTH_DOWN && c->vote && c->vote(tb, c->vote_arg))
			in[i].health = HEALTH_UP;
		if (c->have_writer && tb->id == c->writer_id)
			prev = (int)i;
		if (c->sticky[0] && strcmp(tb->name, c->sticky) == 0)
			sticky = (int)i;
	}
	if (sticky < 0)
		c->sticky[0] = '\0'; /* removed: the choice starts over */
	struct rules_input ri = {.n = n,
	                         .b = in,
	                         .prev_writer = sticky,
	                         .policy = c->cfg->writer_policy,
	                         .max_lag_s = c->cfg->max_replication_lag_s,
	                         .failback = c->cfg->failback};
	struct rules_output ro = {.roles = roles, .reasons = reasons, .extra_writable = extra};
	rules_decide(&ri, &ro);
	note_writer(c, sticky, ro.writer);

	/* A writer removed or moved (a new id) is no longer in the list. */
	const char *from =
	    prev >= 0 ? c->be[prev]->tb.name : (c->have_writer ? c->writer_name : "none");
	const char *to = ro.writer >= 0 ? c->be[ro.writer]->tb.name : "none";
	if (ro.writer != prev || (prev < 0 && c->have_writer)) {
		if (ro.writer < 0)
			log_warn("writer %s -> none", from);
		else
			log_info("writer %s -> %s", from, to);
		metric_inc(metric_at(M.writer_changes, writer_change_reason(c, prev)));
		if (prev >= 0)
			backend_note(&c->be[prev]->tb, "writer -> %s (writer %s -> %s)",
			             topo_role_name(roles[prev]), from, to);
		if (ro.writer >= 0)
			backend_note(&c->be[ro.writer]->tb, "%s -> writer (writer %s -> %s)",
			             topo_role_name(c->be[ro.writer]->tb.role), from, to);
	}
	log_roles(c, roles, reasons, extra);
	c->have_writer = ro.writer >= 0;
	c->writer_id = ro.writer >= 0 ? c->be[ro.writer]->tb.id : UINT32_MAX;
	snprintf(c->writer_name, sizeof(c->writer_name), "%s", ro.writer >= 0 ? to : "");

	struct topology *t = controller_snapshot(c);
	if (!t) {
		log_error("out of memory building the topology");
		goto out;
	}
	if (!force_publish && !differs(c->last, t)) {
		topo_put(t);
		goto out;
	}
	topo_put(c->last);
	c->last = (struct topology *)topo_get(t);
	topo_publish(t);
	persist(c);
out:
	free(in);
	free(roles);
	free(reasons);
	free(extra);
}

void controller_restore_runtime(struct controller *c, const struct state_runtime *rt)
{
	struct state_runtime *r = calloc(1, sizeof(*r));

	if (!r || (rt->n && !(r->b = calloc(rt->n, sizeof(*r->b))))) {
		free(r);
		log_error("out of memory restoring the writer of the last run");
		return;
	}
	snprintf(r->writer, sizeof(r->writer), "%s", rt->writer);
	if (rt->n)
		memcpy(r->b, rt->b, rt->n * sizeof(*r->b));
	r->n = rt->n;
	if (c->restored)
		free(c->restored->b);
	free(c->restored);
	c->restored = r;
	snprintf(c->sticky, sizeof(c->sticky), "%s", rt->writer);
}

void controller_set_persist(struct controller *c,
                            void (*fn)(const struct state_runtime *rt, void *arg), void *arg)
{
	c->persist_fn = fn;
	c->persist_arg = arg;
}

size_t controller_clear_demoted(struct controller *c, const char *name)
{
	size_t n = 0;

	for (size_t i = 0; i < c->nbe; i++) {
		struct topo_backend *tb = &c->be[i]->tb;
		if (!tb->demoted || (name && strcmp(name, tb->name) != 0))
			continue;
		tb->demoted = false;
		log_info("%s: no longer demoted (an operator): it may become the writer again",
		         tb->name);
		n++;
	}
	return n;
}

void controller_restore_ids(struct controller *c, const struct topo_prior_ids *p)
{
	uint64_t now = mono_ms();
	size_t held = 0;

	free(c->prior);
	c->prior = malloc(sizeof(*c->prior));
	if (!c->prior) {
		log_error("out of memory keeping the backend ids of the last run");
		return;
	}
	*c->prior = *p;
	/* Not fresh: what no backend takes back is given back now, and reused
	 * only as any id given back is. */
	for (uint32_t id = 0; id < TOPO_MAX_IDS; id++) {
		if (!p->held[id] && !p->kept[id].name[0])
			continue;
		held += p->held[id];
		if (c->id_given[id])
			continue;
		c->id_given[id] = true;
		c->id_freed_ms[id] = now;
	}
	if (held)
		log_info("%zu backend id(s) in use by the pinned maps: kept for their addresses",
		         held);
}

void controller_set_id_hooks(struct controller *c, const struct controller_id_hooks *h)
{
	c->hooks = *h;
}

struct controller *controller_new(struct evloop *l)
{
	struct controller *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->l = l;
	register_metrics();
	c->writer_id = UINT32_MAX;
	c->resolve_period_ms =
	    test_env_uint("MYSTEER_TEST_RESOLVE_MS", RESOLVE_PERIOD_MS, 86400000);
	c->id_reuse_ms = test_env_uint("MYSTEER_TEST_ID_REUSE_MS", ID_REUSE_MS, 86400000);
	c->res = resolver_new(l, on_resolved, c);
	if (!c->res) {
		free(c);
		return NULL;
	}
	pthread_mutex_init(&c->pend_lock, NULL);
	return c;
}

void controller_free(struct controller *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nbe; i++)
		free_cbe(c, c->be[i]);
	free(c->be);
	free(c->prior);
	if (c->restored)
		free(c->restored->b);
	free(c->restored);
	free(c->saved.b);
	resolver_free(c->res);
	topo_put(c->last);
	pthread_mutex_destroy(&c->pend_lock);
	free(c);
}

void controller_request_probe(struct controller *c, uint32_t backend_id)
{
	struct cbe *b = find_id(c, backend_id);
	if (!b || !b->probe || probe_busy(b->probe))
		return;
	if (probe_start_fresh(b->probe, (unsigned)c->cfg->timeout_ms) < 0)
		log_warn("%s: cannot start a probe", b->tb.name);
}

/* Runs the requests queued by other threads; called on the loop thread from
 * the daemon's wake callback. */
void controller_run_pending(struct controller *c)
{
	uint32_t ids[MAX_PENDING];
	pthread_mutex_lock(&c->pend_lock);
	size_t n = c->npending;
	memcpy(ids, c->pending, n * sizeof(ids[0]));
	c->npending = 0;
	pthread_mutex_unlock(&c->pend_lock);
	for (size_t i = 0; i < n; i++)
		controller_request_probe(c, ids[i]);
}

void controller_request_probe_async(struct controller *c, uint32_t backend_id)
{
	bool queued = false;
	pthread_mutex_lock(&c->pend_lock);
	for (size_t i = 0; i < c->npending; i++)
		if (c->pending[i] == backend_id)
			queued = true;
	if (!queued && c->npending < MAX_PENDING) {
		c->pending[c->npending++] = backend_id;
		queued = true;
	}
	pthread_mutex_unlock(&c->pend_lock);
	evloop_wake(c->l);
}
