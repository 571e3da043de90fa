/*
 * admin.c - see admin.h. One request line in, one reply line out, then the
 * connection is closed. Connections are non-blocking and served by the loop,
 * so a stuck client cannot stall probing; at most ADMIN_MAX_CONNS are open
 * (the oldest goes for a new one) and each goes after ADMIN_IDLE_MS without
 * progress, so silent ones cannot hold the socket or the daemon's files.
 */
#define _GNU_SOURCE
#include "admin/admin.h"

#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <grp.h>
#include <json-c/json.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "admin/traffic.h"
#include "common/evloop.h"
#include "common/io.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/testenv.h"
#include "common/admin_proto.h"
#include "topo/controller.h"

struct admin {
	struct admin_env env;
	int lfd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	/* Configs replaced by reload: other threads may still read them. */
	struct config **retired;
	size_t nretired;
	struct conn *conns; /* open client connections, newest first, freed by admin_free */
	size_t nconns;
	uint64_t idle_ms;        /* ADMIN_IDLE_MS (MYSTEER_TEST_ADMIN_IDLE_MS) */
	struct traffic *traffic; /* each backend's rates (traffic.h) */
	uint64_t traffic_timer;
};

/* The figures of the topology and of reloads (common/metrics.h): the
 * backends' are collected from a snapshot at each render, on the loop
 * thread (the renderers run there). */
static struct {
	struct metric_family *state, *role, *admin, *up, *read_only, *lag, *generation, *writers;
	struct metric_family *reloads, *reload_ok, *not_applied;
} M;

static void register_metrics(void)
{
	static const char *const b[] = {"backend", NULL};
	static const char *const bs[] = {"backend", "state", NULL};
	static const char *const br[] = {"backend", "role", NULL};
	static const char *const result[] = {"result", NULL};
	static const char *const sk[] = {"section", "key", NULL};
	static const char *const none[] = {NULL};
	const unsigned C = METRIC_COLLECTED;

	M.state = metrics_gauge("mysteer_backend_state",
	                        "1 for the backend's state now (unknown, up, down, drained, "
	                        "disabled), 0 for the others",
	                        bs, C);
	M.role = metrics_gauge(
	    "mysteer_backend_role",
	    "1 for the backend's role now (writer, reader, none), 0 for the others", br, C);
	M.admin = metrics_gauge(
	    "mysteer_backend_admin_state",
	    "1 for the backend's admin state now (enabled, drained, disabled), 0 for the others",
	    bs, C);
	M.up = metrics_gauge("mysteer_backend_up", "1 when the backend's health is up", b, C);
	M.read_only = metrics_gauge("mysteer_backend_read_only",
	                            "1 when the last probe saw @@read_only set", b, C);
	M.lag = metrics_gauge("mysteer_backend_replication_lag_seconds",
	                      "Replication lag of a replica whose replication runs", b, C);
	M.generation =
	    metrics_gauge("mysteer_topology_generation",
	                  "Generation of the published topology (grows with each change)", none, C);
	M.writers = metrics_gauge("mysteer_writer_known", "1 when a writer is known", none, C);
	M.reloads = metrics_counter(
	    "mysteer_config_reloads_total",
	    "Config reloads (SIGHUP, mysteerctl reload) by result (ok, failed)", result, 0);
	M.reload_ok =
	    metrics_gauge("mysteer_config_last_reload_successful",
	                  "1 when the last reload was applied (or none was asked)", none, 0);
	M.not_applied = metrics_counter(
	    "mysteer_config_reload_keys_not_applied_total",
	    "Keys a reload found changed but could not apply live (they need a restart)", sk, 0);
	metric_set(metric_series(M.reload_ok, NULL), 1);
	metric_add(metric_at(M.reloads, "ok"), 0);
	metric_add(metric_at(M.reloads, "failed"), 0);
}

static void one_of(struct metric_family *f, const char *backend, const char *const *values,
                   const char *now)
{
	for (size_t i = 0; values[i]; i++)
		metric_set(metric_at(f, backend, values[i]), strcmp(values[i], now) == 0);
}

static void collect(struct metrics *m, void *arg)
{
	struct admin *a = arg;
	static const char *const states[] = {"unknown", "up", "down", "drained", "disabled", NULL};
	static const char *const roles[] = {"writer", "reader", "none", NULL};
	static const char *const admins[] = {"enabled", "drained", "disabled", NULL};
	struct topology *t = controller_snapshot(a->env.ctl);
	const struct topology *pub = topo_current();

	metric_set(metric_series(M.generation, NULL), pub ? (double)pub->generation : 0);
	topo_put(pub);
	if (!t)
		return;
	metric_set(metric_series(M.writers, NULL), t->writer >= 0);
	for (size_t i = 0; i < t->nbackends; i++) {
		const struct topo_backend *b = &t->backends[i];
		one_of(M.state, b->name, states, topo_state_name(b));
		one_of(M.role, b->name, roles, topo_role_name(b->role));
		one_of(M.admin, b->name, admins, topo_admin_name(b->admin));
		metric_set(metric_at(M.up, b->name), b->health == HEALTH_UP);
		metric_set(metric_at(M.read_only, b->name), b->read_only);
		if (b->has_lag)
			metric_set(metric_at(M.lag, b->name), b->lag_s);
	}
	topo_put(t);
}

static void count_reload(bool ok)
{
	metric_inc(metric_at(M.reloads, ok ? "ok" : "failed"));
	metric_set(metric_series(M.reload_ok, NULL), ok);
}

/* Open admin connections at most: mysteerctl uses one a command. */
#define ADMIN_MAX_CONNS 64
/* A connection that neither sends its request nor takes its reply this long
 * goes. */
#define ADMIN_IDLE_MS 5000

struct conn {
	struct admin *a;
	struct conn *prev, *next;
	int fd;
	char in[ADMIN_MAX_REQUEST];
	size_t inlen;
	char *out;
	size_t outlen, outoff;
	uint64_t timer;  /* its idle check on the loop, 0 for none */
	uint64_t active; /* mono_ms() of its last progress */
};

static const struct config *cfg_of(struct admin *a)
{
	return a->env.d->cfg;
}

static void set_err(char *err, size_t len, const char *fmt, const char *arg)
{
	snprintf(err, len, fmt, arg, strerror(errno));
}

/* ---- applying config + overlay ---- */

int admin_apply(struct admin *a, char *err, size_t errlen)
{
	struct state_backend *sb = NULL;
	size_t n = 0;
	if (state_apply(cfg_of(a), a->env.ov, &sb, &n) < 0) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	struct ctl_backend_spec *specs = calloc(n ? n : 1, sizeof(*specs));
	if (!specs) {
		free(sb);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		snprintf(specs[i].name, sizeof(specs[i].name), "%s", sb[i].cfg.name);
		snprintf(specs[i].host, sizeof(specs[i].host), "%s", sb[i].cfg.host);
		specs[i].port = sb[i].cfg.port;
		specs[i].priority = sb[i].cfg.priority;
		specs[i].weight = sb[i].cfg.weight;
		specs[i].admin = sb[i].admin;
		specs[i].tls = sb[i].cfg.tls != BACKEND_TLS_OFF;
	}
	int rc = controller_apply(a->env.ctl, cfg_of(a), specs, n);
	free(specs);
	free(sb);
	if (rc < 0)
		snprintf(err, errlen, "cannot apply the backends (out of memory)");
	return rc;
}

static int retire(struct admin *a, struct config *old)
{
	struct config **r = realloc(a->retired, (a->nretired + 1) * sizeof(*r));
	if (!r)
		return -1;
	a->retired = r;
	a->retired[a->nretired++] = old;
	return 0;
}

int admin_reload(struct admin *a, char *err, size_t errlen)
{
	struct config *nc = config_load(cfg_of(a)->path, err, errlen);
	if (!nc) {
		log_error("reload refused: %s", err);
		count_reload(false);
		return -1;
	}
	struct config *old = (struct config *)cfg_of(a);
	/* Against the config the daemon started with (the first retired, kept
	 * as long as the admin): those values stay in effect until a restart,
	 * so every reload names what still differs. */
	const struct config *boot = a->nretired ? a->retired[0] : old;
	struct config_restart_key rk[CONFIG_RESTART_KEYS_MAX];
	size_t nrk = config_restart_keys(boot, nc, rk);
	if (retire(a, old) < 0) {
		config_free(nc);
		snprintf(err, errlen, "out of memory");
		count_reload(false);
		return -1;
	}
	a->env.d->cfg = nc;
	log_set_level((enum log_level)nc->log_level);
	log_set_format((enum log_format)nc->log_format);
	/* After the new log format is set, so these lines are in it. The
	 * running daemon keeps the old values of these keys. */
	for (size_t i = 0; i < nrk; i++) {
		if (rk[i].key[0] == '(')
			log_warn("reload: [%s] added or removed, needs a restart (%s)",
			         rk[i].section, rk[i].why);
		else
			log_warn("reload: [%s] %s changed, needs a restart (%s)", rk[i].section,
			         rk[i].key, rk[i].why);
		metric_inc(metric_at(M.not_applied, rk[i].section, rk[i].key));
	}
	for (size_t i = 0; i < a->env.nservices; i++)
		if (a->env.services[i] && a->env.services[i]->reload)
			a->env.services[i]->reload(a->env.d, nc);
	if (admin_apply(a, err, errlen) < 0) {
		count_reload(false);
		return -1;
	}
	count_reload(true);
	log_info("reloaded %s", nc->path);
	return 0;
}

/* ---- status ---- */

static json_object *jstr(const char *s)
{
	return json_object_new_string(s);
}

static void backend_counters(struct admin *a, uint32_t id, struct backend_counters *bc)
{
	memset(bc, 0, sizeof(*bc));
	for (size_t i = 0; i < a->env.nservices; i++)
		if (a->env.services[i] && a->env.services[i]->backend_counters)
			a->env.services[i]->backend_counters(id, bc);
}

/* The numeric address the host resolved to (null when it did not): what the
 * probe, maps and proxy use; host stays as configured (maybe a name). */
static json_object *addr_json(const struct topo_backend *b)
{
	char buf[INET6_ADDRSTRLEN];
	const char *a = topo_addr_str(&b->addr, b->addrlen, buf, sizeof(buf));
	return a ? jstr(a) : NULL;
}

static int64_t realtime_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* {"what": "up -> down: <reason>", "at_ms": T, "age_s": S}, null before any. */
static json_object *last_change_json(const struct topo_backend *b)
{
	if (!b->last_change_ms)
		return NULL;
	json_object *o = json_object_new_object();
	json_object_object_add(o, "what", jstr(b->last_change));
	json_object_object_add(o, "at_ms", json_object_new_int64(b->last_change_ms));
	json_object_object_add(
	    o, "age_s",
	    json_object_new_double((double)(realtime_ms() - b->last_change_ms) / 1000.0));
	return o;
}

static json_object *traffic_json(struct admin *a, const struct topo_backend *b)
{
	struct traffic_rates r;

	if (!a->traffic || !traffic_rates(a->traffic, b->name, &r))
		return NULL;
	json_object *o = json_object_new_object();
	json_object_object_add(o, "window_s", json_object_new_double(r.window_s));
	json_object_object_add(o, "connections_per_s", json_object_new_double(r.connections_per_s));
	json_object_object_add(o, "statements_per_s", json_object_new_double(r.statements_per_s));
	json_object_object_add(o, "errors_per_s", json_object_new_double(r.errors_per_s));
	json_object_object_add(o, "p99_ms", r.has_p99 ? json_object_new_double(r.p99_ms) : NULL);
	return o;
}

/* Connections the kernel paths and the relay steered to a backend. The
 * proxy's own count is of its statements, which the rates read from the
 * registry instead. */
static uint64_t connections_steered(struct admin *a, uint32_t id)
{
	struct backend_counters bc = {0};

	for (size_t i = 0; i < a->env.nservices; i++) {
		const struct service_ops *s = a->env.services[i];

		if (s && s->backend_counters && strcmp(s->name, "proxy") != 0)
			s->backend_counters(id, &bc);
	}
	return bc.steered;
}

/* Once a second: a reading of every backend's counters for the rates. */
static void on_traffic_tick(struct evloop *l, uint64_t id, void *arg)
{
	struct admin *a = arg;
	struct topology *t = controller_snapshot(a->env.ctl);
	int64_t now = realtime_ms();

	a->traffic_timer = evloop_add_timer(l, 1000, on_traffic_tick, a);
	if (!t)
		return;
	traffic_begin(a->traffic);
	for (size_t i = 0; i < t->nbackends; i++)
		traffic_sample(a->traffic, t->backends[i].name,
		               connections_steered(a, t->backends[i].id), now);
	traffic_end(a->traffic);
	topo_put(t);
}

static json_object *backend_json(struct admin *a, const struct topo_backend *b)
{
	json_object *o = json_object_new_object();
	struct backend_counters bc;
	backend_counters(a, b->id, &bc);
	json_object_object_add(o, "name", jstr(b->name));
	json_object_object_add(o, "id", json_object_new_int64(b->id));
	json_object_object_add(o, "host", jstr(b->host));
	json_object_object_add(o, "port", json_object_new_int(b->port));
	json_object_object_add(o, "address", addr_json(b));
	json_object_object_add(o, "role", jstr(topo_role_name(b->role)));
	json_object_object_add(o, "state", jstr(topo_state_name(b)));
	json_object_object_add(o, "health", jstr(topo_health_name(b->health)));
	json_object_object_add(o, "admin", jstr(topo_admin_name(b->admin)));
	json_object_object_add(o, "priority", json_object_new_int(b->priority));
	json_object_object_add(o, "weight", json_object_new_int(b->weight));
	json_object_object_add(o, "read_only", json_object_new_boolean(b->read_only));
	json_object_object_add(o, "replicating", json_object_new_boolean(b->replicating));
	json_object_object_add(o, "lag_s", b->has_lag ? json_object_new_double(b->lag_s) : NULL);
	json_object_object_add(o, "probe_ms", json_object_new_double(b->probe_ms));
	json_object_object_add(o, "last_probe_ms", json_object_new_int64(b->last_probe_ms));
	json_object_object_add(o, "last_error", jstr(b->last_error));
	json_object_object_add(o, "active", json_object_new_int64((int64_t)bc.active));
	json_object_object_add(o, "steered", json_object_new_int64((int64_t)bc.steered));
	json_object_object_add(o, "connect_failures",
	                       json_object_new_int64((int64_t)bc.connect_failures));
	json_object_object_add(o, "demoted", json_object_new_boolean(b->demoted));
	json_object_object_add(o, "last_change", last_change_json(b));
	json_object_object_add(o, "traffic", traffic_json(a, b));
	json_object_object_add(o, "extra_writable", json_object_new_boolean(b->extra_writable));
	return o;
}

/* What an operator must know about the writer choice: a second writable
 * server, a demoted one that is writable while there is no writer. */
static json_object *warnings_json(const struct topology *t, const struct config *c)
{
	json_object *w = json_object_new_array();
	const char *writer = t->writer >= 0 ? t->backends[t->writer].name : NULL;
	char line[400];

	for (size_t i = 0; i < t->nbackends; i++) {
		const struct topo_backend *b = &t->backends[i];
		if (b->extra_writable) {
			snprintf(line, sizeof(line),
			         "two writable servers: %s is writable but is not the writer (%s "
			         "is): it gets no writes",
			         b->name, writer ? writer : "none");
			json_object_array_add(w, jstr(line));
		}
		if (!writer && !c->failback && b->demoted && topo_backend_usable(b) &&
		    (c->writer_policy == WRITER_POLICY_PRIORITY || !b->read_only)) {
			snprintf(line, sizeof(line),
			         "no writer: %s is writable but was demoted (failback = off); "
			         "`mysteerctl enable %s` lets it become the writer",
			         b->name, b->name);
			json_object_array_add(w, jstr(line));
		}
	}
	return w;
}

static json_object *route_json(const struct topology *t, const struct topo_route *r)
{
	json_object *o = json_object_new_object();
	json_object *targets = json_object_new_array();
	int idx[256];
	size_t n = topo_route_targets(t, r, idx, 256);
	for (size_t i = 0; i < n; i++)
		json_object_array_add(targets, jstr(t->backends[idx[i]].name));
	json_object_object_add(o, "name", jstr(r->name));
	json_object_object_add(o, "port", json_object_new_int(r->port));
	json_object_object_add(o, "role", jstr(topo_route_role_name(r->role)));
	json_object_object_add(o, "targets", targets);
	return o;
}

/* The cgroup steering will use: "auto" is the child `mysteer` under the
 * cgroup2 mount. The steer service may replace it with what it made. */
static void effective_cgroup(const char *cfg, char *out, size_t len)
{
	snprintf(out, len, "%s", cfg);
	if (strcmp(cfg, "auto") != 0)
		return;
	FILE *f = fopen("/proc/self/mounts", "r");
	char dev[256], dir[PATH_MAX], type[64];
	if (!f)
		return;
	while (fscanf(f, "%255s %4095s %63s %*[^\n]", dev, dir, type) == 3) {
		if (strcmp(type, "cgroup2") == 0) {
			snprintf(out, len, "%.*s/mysteer", (int)(len - 10), dir);
			break;
		}
	}
	fclose(f);
}

json_object *admin_status_json(struct admin *a)
{
	json_object *root = json_object_new_object();
	struct topology *t = controller_snapshot(a->env.ctl);
	const struct config *c = cfg_of(a);
	char cg[PATH_MAX];
	if (!t) {
		json_object_object_add(root, "ok", json_object_new_boolean(0));
		json_object_object_add(root, "error", jstr("out of memory"));
		return root;
	}
	json_object_object_add(root, "ok", json_object_new_boolean(1));
	json_object_object_add(root, "version", jstr(a->env.version ? a->env.version : "unknown"));
	json_object_object_add(root, "started_ms", json_object_new_int64(a->env.started_ms));
	json_object_object_add(
	    root, "uptime_s",
	    json_object_new_double((double)(realtime_ms() - a->env.started_ms) / 1000.0));
	json_object_object_add(root, "writer",
	                       t->writer >= 0 ? jstr(t->backends[t->writer].name) : NULL);
	const struct topology *pub = topo_current();
	json_object_object_add(root, "generation",
	                       json_object_new_int64(pub ? (int64_t)pub->generation : 0));
	topo_put(pub);
	json_object *bs = json_object_new_array();
	for (size_t i = 0; i < t->nbackends; i++)
		json_object_array_add(bs, backend_json(a, &t->backends[i]));
	json_object_object_add(root, "backends", bs);
	json_object *rs = json_object_new_array();
	for (size_t i = 0; i < t->nroutes; i++)
		json_object_array_add(rs, route_json(t, &t->routes[i]));
	json_object_object_add(root, "routes", rs);
	json_object_object_add(root, "warnings", warnings_json(t, c));
	json_object_object_add(root, "failback", json_object_new_boolean(c->failback));
	effective_cgroup(c->cgroup, cg, sizeof(cg));
	json_object_object_add(root, ADMIN_KEY_CGROUP, jstr(cg));
	json_object_object_add(root, "bpffs_dir", jstr(c->bpffs_dir));
	json_object_object_add(
	    root, "writer_policy",
	    jstr(c->writer_policy == WRITER_POLICY_PRIORITY ? "priority" : "read_only"));
	for (size_t i = 0; i < a->env.nservices; i++)
		if (a->env.services[i] && a->env.services[i]->status_json)
			a->env.services[i]->status_json(root);
	/* Every figure of /metrics, from the same registry. */
	json_object_object_add(root, "metrics", metrics_render_json(metrics_global()));
	topo_put(t);
	return root;
}

/* ---- commands ---- */

static json_object *reply_err(const char *msg)
{
	json_object *o = json_object_new_object();
	char line[512];
	snprintf(line, sizeof(line), "%s", msg);
	for (char *p = line; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	json_object_object_add(o, ADMIN_KEY_OK, json_object_new_boolean(0));
	json_object_object_add(o, ADMIN_KEY_ERROR, jstr(line));
	return o;
}

static json_object *reply_ok(void)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, ADMIN_KEY_OK, json_object_new_boolean(1));
	return o;
}

static const char *get_str(json_object *req, const char *key)
{
	json_object *v;
	if (!json_object_object_get_ex(req, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* 1: present and an integer in range, 0: absent, -1: bad. */
static int get_int(json_object *req, const char *key, long long min, long long max, int *out)
{
	json_object *v;
	if (!json_object_object_get_ex(req, key, &v) || json_object_is_type(v, json_type_null))
		return 0;
	if (!json_object_is_type(v, json_type_int))
		return -1;
	int64_t x = json_object_get_int64(v);
	if (x < min || x > max)
		return -1;
	*out = (int)x;
	return 1;
}

/* Saves and applies after an overlay edit; the edit stays in effect even if
 * the save fails, and the reply says so. */
static json_object *commit_change(struct admin *a)
{
	char err[512];
	if (admin_apply(a, err, sizeof(err)) < 0)
		return reply_err(err);
	if (state_save(cfg_of(a)->state_file, a->env.ov, err, sizeof(err)) < 0) {
		log_error("state not saved: %s", err);
		char msg[600];
		snprintf(msg, sizeof(msg), "applied but not saved: %s", err);
		return reply_err(msg);
	}
	return reply_ok();
}

static json_object *cmd_add(struct admin *a, json_object *req, const char *name, char *err,
                            size_t len)
{
	const char *host = get_str(req, ADMIN_KEY_HOST);
	int port = 0, prio = -1, weight = -1;
	if (!host)
		return reply_err("add: host missing");
	if (get_int(req, ADMIN_KEY_PORT, 1, 65535, &port) != 1)
		return reply_err("add: port missing or not in 1-65535");
	if (get_int(req, ADMIN_KEY_PRIORITY, 0, CONFIG_PRIORITY_MAX, &prio) < 0)
		return reply_err("add: bad priority");
	if (get_int(req, ADMIN_KEY_WEIGHT, 0, CONFIG_WEIGHT_MAX, &weight) < 0)
		return reply_err("add: bad weight");
	if (state_add(a->env.ov, cfg_of(a), name, host, (uint16_t)port, prio, weight, err, len) < 0)
		return reply_err(err);
	log_info("%s: added at %s:%d by mysteerctl", name, host, port);
	return commit_change(a);
}

static json_object *cmd_set(struct admin *a, json_object *req, const char *name, char *err,
                            size_t len)
{
	int prio = -1, weight = -1;
	int hp = get_int(req, ADMIN_KEY_PRIORITY, 0, CONFIG_PRIORITY_MAX, &prio);
	int hw = get_int(req, ADMIN_KEY_WEIGHT, 0, CONFIG_WEIGHT_MAX, &weight);
	if (hp < 0)
		return reply_err("set: bad priority");
	if (hw < 0)
		return reply_err("set: bad weight");
	if (!hp && !hw)
		return reply_err("set: priority or weight needed");
	if (state_set(a->env.ov, cfg_of(a), name, prio, weight, err, len) < 0)
		return reply_err(err);
	return commit_change(a);
}

/* With [cluster], a change an operator made here goes to the whole fleet
 * (not one that came from it: "fleet": true). */
static json_object *to_fleet(struct admin *a, const char *cmd, const char *name, json_object *req,
                             json_object *rep)
{
	json_object *ok, *fleet;

	if (a->env.d->fleet_admin && json_object_object_get_ex(rep, ADMIN_KEY_OK, &ok) &&
	    json_object_get_boolean(ok) &&
	    !(json_object_object_get_ex(req, "fleet", &fleet) && json_object_get_boolean(fleet)))
		a->env.d->fleet_admin(a->env.d, cmd, name,
		                      json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN));
	return rep;
}

static json_object *cmd_named(struct admin *a, const char *cmd, json_object *req)
{
	char err[512];
	const char *name = get_str(req, ADMIN_KEY_NAME);
	if (!name)
		return reply_err("backend name missing");
	if (strcmp(cmd, ADMIN_CMD_ADD) == 0)
		return cmd_add(a, req, name, err, sizeof(err));
	if (strcmp(cmd, ADMIN_CMD_SET) == 0)
		return to_fleet(a, cmd, name, req, cmd_set(a, req, name, err, sizeof(err)));
	if (strcmp(cmd, ADMIN_CMD_REMOVE) == 0) {
		if (state_remove(a->env.ov, cfg_of(a), name, err, sizeof(err)) < 0)
			return reply_err(err);
		return commit_change(a);
	}
	enum be_admin adm;
	if (strcmp(cmd, ADMIN_CMD_DRAIN) == 0)
		adm = ADMIN_DRAINED;
	else if (strcmp(cmd, ADMIN_CMD_DISABLE) == 0)
		adm = ADMIN_DISABLED;
	else if (strcmp(cmd, ADMIN_CMD_ENABLE) == 0)
		adm = ADMIN_ENABLED;
	else
		return reply_err("unknown command");
	if (state_set_admin(a->env.ov, cfg_of(a), name, adm, err, sizeof(err)) < 0)
		return reply_err(err);
	/* An operator's enable lets a demoted server become the writer again. */
	if (adm == ADMIN_ENABLED)
		controller_clear_demoted(a->env.ctl, name);
	return to_fleet(a, cmd, name, req, commit_change(a));
}

static json_object *cmd_reset(struct admin *a, json_object *req)
{
	const char *name = get_str(req, ADMIN_KEY_NAME);
	size_t n = state_reset(a->env.ov, name);
	size_t d = controller_clear_demoted(a->env.ctl, name);
	log_info("reset %s: %zu change(s) dropped, %zu demotion(s) cleared", name ? name : "all", n,
	         d);
	return commit_change(a);
}

static json_object *dispatch(struct admin *a, const char *cmd, json_object *req)
{
	char err[512];
	if (strcmp(cmd, ADMIN_CMD_STATUS) == 0)
		return admin_status_json(a);
	if (strcmp(cmd, ADMIN_CMD_RELOAD) == 0) {
		if (admin_reload(a, err, sizeof(err)) < 0)
			return reply_err(err);
		return reply_ok();
	}
	if (strcmp(cmd, ADMIN_CMD_RESET) == 0)
		return cmd_reset(a, req);
	return cmd_named(a, cmd, req);
}

json_object *admin_handle(struct admin *a, const char *line)
{
	json_object *req = json_tokener_parse(line);
	if (!req || !json_object_is_type(req, json_type_object)) {
		json_object_put(req);
		return reply_err("malformed request");
	}
	const char *cmd = get_str(req, ADMIN_KEY_CMD);
	json_object *rep = cmd ? dispatch(a, cmd, req) : reply_err("cmd missing");
	json_object_put(req);
	return rep;
}

/* ---- socket ---- */

static void conn_close(struct conn *c)
{
	if (c->timer)
		evloop_del_timer(c->a->env.d->loop, c->timer);
	c->a->nconns--;
	if (c->prev)
		c->prev->next = c->next;
	else
		c->a->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	evloop_del_fd(c->a->env.d->loop, c->fd);
	close(c->fd);
	free(c->out);
	free(c);
}

static void conn_flush(struct conn *c)
{
	while (c->outoff < c->outlen) {
		size_t w;
		enum io_step st =
		    io_send_step(c->fd, c->out + c->outoff, c->outlen - c->outoff, &w);

		if (st == IO_AGAIN)
			return;
		if (st == IO_CLOSED)
			break;
		c->outoff += w;
		c->active = mono_ms();
	}
	conn_close(c);
}

static void conn_reply(struct conn *c, json_object *rep)
{
	const char *s = json_object_to_json_string_ext(rep, JSON_C_TO_STRING_PLAIN |
	                                                        JSON_C_TO_STRING_NOSLASHESCAPE);
	size_t n = strlen(s);
	c->out = malloc(n + 1);
	if (!c->out) {
		json_object_put(rep);
		conn_close(c);
		return;
	}
	memcpy(c->out, s, n);
	c->out[n] = '\n';
	c->outlen = n + 1;
	json_object_put(rep);
	if (evloop_mod_fd(c->a->env.d->loop, c->fd, EV_WRITE) < 0) {
		conn_close(c);
		return;
	}
	conn_flush(c);
}

static void on_conn(struct evloop *l, int fd, unsigned events, void *arg)
{
	struct conn *c = arg;
	if (c->out) {
		conn_flush(c);
		return;
	}
	for (;;) {
		size_t r;
		enum io_step st =
		    io_recv_step(fd, c->in + c->inlen, sizeof(c->in) - 1 - c->inlen, &r);

		if (st == IO_AGAIN)
			return;
		if (st == IO_CLOSED) {
			conn_close(c);
			return;
		}
		c->active = mono_ms();
		/* memchr: a NUL byte in the request must not hide its newline */
		char *nl = memchr(c->in + c->inlen, '\n', r);
		c->inlen += r;
		c->in[c->inlen] = '\0';
		if (nl) {
			*nl = '\0';
			conn_reply(c, admin_handle(c->a, c->in));
			return;
		}
		if (c->inlen >= sizeof(c->in) - 1) {
			conn_reply(c, reply_err("request too long"));
			return;
		}
	}
}

/* A connection without progress for idle_ms goes; one that made some is
 * checked again when its idle_ms from then has passed. */
static void on_idle(struct evloop *l, uint64_t id, void *arg)
{
	struct conn *c = arg;
	uint64_t now = mono_ms(), due = c->active + c->a->idle_ms;

	c->timer = 0;
	if (now < due) {
		c->timer = evloop_add_timer(l, due - now, on_idle, c);
		if (c->timer)
			return;
	}
	log_debug("admin socket: a connection idle for %llu ms closed",
	          (unsigned long long)(now - c->active));
	conn_close(c);
}

/* The oldest open connection (the list is newest first). */
static struct conn *oldest_conn(struct admin *a)
{
	struct conn *c = a->conns;

	while (c && c->next)
		c = c->next;
	return c;
}

static void on_accept(struct evloop *l, int fd, unsigned events, void *arg)
{
	struct admin *a = arg;
	for (;;) {
		int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd < 0 && (errno == EMFILE || errno == ENFILE) && a->conns) {
			conn_close(oldest_conn(a)); /* its file makes room */
			continue;
		}
		if (cfd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				log_warn("admin socket: accept: %s", strerror(errno));
			return;
		}
		if (a->nconns >= ADMIN_MAX_CONNS) {
			log_debug("admin socket: %d connections open: the oldest goes",
			          ADMIN_MAX_CONNS);
			conn_close(oldest_conn(a));
		}
		struct conn *c = calloc(1, sizeof(*c));
		if (!c || evloop_add_fd(l, cfd, EV_READ, on_conn, c) < 0) {
			free(c);
			close(cfd);
			continue;
		}
		c->a = a;
		c->fd = cfd;
		c->active = mono_ms();
		c->next = a->conns;
		if (a->conns)
			a->conns->prev = c;
		a->conns = c;
		a->nconns++;
		c->timer = evloop_add_timer(l, a->idle_ms, on_idle, c);
		if (!c->timer) {
			log_warn("admin socket: no timer for a connection: it is refused");
			conn_close(c);
		}
	}
}

static int make_parent(const char *path, char *err, size_t len)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		set_err(err, len, "cannot create %s: %s", dir);
		return -1;
	}
	return 0;
}

/* A socket file left by a crashed daemon is removed; one that answers means
 * another mysteerd runs with this config, and we refuse to steal it. */
static int clear_stale(const struct sockaddr_un *sa, char *err, size_t len)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		set_err(err, len, "socket: %s%s", "");
		return -1;
	}
	int rc = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
	close(fd);
	if (rc == 0) {
		snprintf(err, len, "%s: another mysteerd is running", sa->sun_path);
		return -1;
	}
	if (unlink(sa->sun_path) < 0 && errno != ENOENT) {
		set_err(err, len, "cannot remove %s: %s", sa->sun_path);
		return -1;
	}
	return 0;
}

static int set_mode(const char *path, const char *group, char *err, size_t len)
{
	if (!group[0])
		return chmod(path, 0600) < 0 ? (set_err(err, len, "chmod %s: %s", path), -1) : 0;
	struct group *g = getgrnam(group);
	if (!g) {
		snprintf(err, len, "admin_group %s: no such group", group);
		return -1;
	}
	if (chown(path, 0, g->gr_gid) < 0 || chmod(path, 0660) < 0) {
		set_err(err, len, "chown/chmod %s: %s", path);
		return -1;
	}
	return 0;
}

static int open_socket(struct admin *a, char *err, size_t len)
{
	const struct config *c = cfg_of(a);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(c->admin_socket) >= sizeof(sa.sun_path)) {
		snprintf(err, len, "admin_socket path too long");
		return -1;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", c->admin_socket);
	snprintf(a->path, sizeof(a->path), "%s", c->admin_socket);
	if (make_parent(sa.sun_path, err, len) < 0 || clear_stale(&sa, err, len) < 0)
		return -1;
	a->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (a->lfd < 0) {
		set_err(err, len, "socket %s: %s", sa.sun_path);
		return -1;
	}
	/* No moment where the socket exists with a wider mode. */
	mode_t old = umask(0177);
	int rc = bind(a->lfd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (rc < 0) {
		set_err(err, len, "bind %s: %s", sa.sun_path);
		return -1;
	}
	if (set_mode(sa.sun_path, c->admin_group, err, len) < 0)
		return -1;
	if (listen(a->lfd, 64) < 0) {
		set_err(err, len, "listen %s: %s", sa.sun_path);
		return -1;
	}
	if (evloop_add_fd(a->env.d->loop, a->lfd, EV_READ, on_accept, a) < 0) {
		set_err(err, len, "watch %s: %s", sa.sun_path);
		return -1;
	}
	return 0;
}

struct admin *admin_new(const struct admin_env *env, char *err, size_t errlen)
{
	struct admin *a = calloc(1, sizeof(*a));
	if (!a) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	a->env = *env;
	a->lfd = -1;
	a->idle_ms = test_env_uint("MYSTEER_TEST_ADMIN_IDLE_MS", ADMIN_IDLE_MS, 3600000);
	register_metrics();
	if (metrics_add_collector(metrics_global(), collect, a) < 0) {
		snprintf(err, errlen, "out of memory");
		free(a);
		return NULL;
	}
	a->traffic = traffic_new(metrics_global());
	if (a->traffic)
		a->traffic_timer = evloop_add_timer(a->env.d->loop, 1000, on_traffic_tick, a);
	if (!a->traffic || !a->traffic_timer)
		log_warn("admin socket: out of memory: status shows no traffic rates");
	if (open_socket(a, err, errlen) < 0) {
		if (a->traffic_timer)
			evloop_del_timer(a->env.d->loop, a->traffic_timer);
		traffic_free(a->traffic);
		metrics_remove_collector(metrics_global(), collect, a);
		if (a->lfd >= 0)
			close(a->lfd);
		free(a);
		return NULL;
	}
	return a;
}

void admin_free(struct admin *a)
{
	if (!a)
		return;
	metrics_remove_collector(metrics_global(), collect, a);
	if (a->traffic_timer)
		evloop_del_timer(a->env.d->loop, a->traffic_timer);
	traffic_free(a->traffic);
	while (a->conns)
		conn_close(a->conns);
	if (a->lfd >= 0) {
		evloop_del_fd(a->env.d->loop, a->lfd);
		close(a->lfd);
		unlink(a->path);
	}
	for (size_t i = 0; i < a->nretired; i++)
		config_free(a->retired[i]);
	free(a->retired);
	free(a);
}
