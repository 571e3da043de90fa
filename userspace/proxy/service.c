/*
 * service.c - plugs the 6450 proxy engine into mysteerd (common/service.h):
 * started when the config has a route of role split, on that route's port.
 * The engine pointer is this module's own state.
 */
#include <json-c/json.h>
#include <stdio.h>

#include "common/metrics.h"
#include "common/topology.h"
#include "proxy/proxy.h"

static struct proxy_engine *engine;

/* The 6450 proxy's connection and pool figures, read at each render. */
static struct {
	struct metric_family *clients, *conns, *idle, *in_use, *open, *max, *waiting;
	struct metric_family *opened, *reused, *resets, *waits, *wait_timeouts;
	struct metric_family *prepared, *prepares;
} PM;

static void collect(struct metrics *m, void *arg)
{
	const struct topology *t;
	int clients, conns, workers;

	if (!engine)
		return;
	proxy_engine_stats(engine, &clients, &conns, &workers);
	metric_set(metric_series(PM.clients, NULL), clients);
	metric_set(metric_series(PM.conns, NULL), conns);
	if (!(t = topo_current()))
		return;
	for (size_t i = 0; i < t->nbackends; i++) {
		const char *b = t->backends[i].name;
		struct proxy_pool_stats ps;

		proxy_engine_pool(engine, t->backends[i].id, &ps);
		metric_set(metric_at(PM.idle, b), ps.idle);
		metric_set(metric_at(PM.in_use, b), ps.in_use);
		metric_set(metric_at(PM.open, b), ps.open);
		metric_set(metric_at(PM.max, b), ps.max);
		metric_set(metric_at(PM.waiting, b), ps.waiting);
		metric_set(metric_at(PM.opened, b), (double)ps.opened);
		metric_set(metric_at(PM.reused, b), (double)ps.reused);
		metric_set(metric_at(PM.resets, b), (double)ps.resets);
		metric_set(metric_at(PM.waits, b), (double)ps.waits);
		metric_set(metric_at(PM.wait_timeouts, b), (double)ps.wait_timeouts);
		metric_set(metric_at(PM.prepared, b), ps.prepared);
		metric_set(metric_at(PM.prepares, b), (double)ps.prepares);
	}
	topo_put(t);
}

static void register_metrics(void)
{
	static bool done;
	static const char *const be[] = {"backend", NULL};
	const struct metric_def defs[] = {
	    {&PM.clients, METRIC_GAUGE, "mysteer_proxy_client_connections",
	     "Client connections of the 6450 proxy open now", NULL},
	    {&PM.conns, METRIC_GAUGE, "mysteer_proxy_backend_connections",
	     "Backend connections of the 6450 proxy open now", NULL},
	    {&PM.idle, METRIC_GAUGE, "mysteer_pool_idle_connections",
	     "Pooled backend connections waiting for a session", be},
	    {&PM.in_use, METRIC_GAUGE, "mysteer_pool_in_use_connections",
	     "Pooled backend connections held by sessions", be},
	    {&PM.open, METRIC_GAUGE, "mysteer_pool_open_connections",
	     "Backend connections open (idle, in use, warming, logging in)", be},
	    {&PM.max, METRIC_GAUGE, "mysteer_pool_max_connections", "pool_max_per_backend", be},
	    {&PM.waiting, METRIC_GAUGE, "mysteer_pool_waiting_sessions",
	     "Sessions waiting now for a connection of a full pool", be},
	    {&PM.opened, METRIC_COUNTER, "mysteer_pool_opened_total",
	     "Backend connections the pool opened", be},
	    {&PM.reused, METRIC_COUNTER, "mysteer_pool_reused_total",
	     "Pooled connections taken instead of opening one", be},
	    {&PM.resets, METRIC_COUNTER, "mysteer_pool_resets_total",
	     "COM_RESET_CONNECTIONs sent when parking a connection", be},
	    {&PM.waits, METRIC_COUNTER, "mysteer_pool_waits_total",
	     "Sessions that had to wait for a connection", be},
	    {&PM.wait_timeouts, METRIC_COUNTER, "mysteer_pool_wait_timeouts_total",
	     "Waits for a connection that ended with an error", be},
	    {&PM.prepared, METRIC_GAUGE, "mysteer_proxy_prepared_statements",
	     "Server-side prepared statements the proxy's connections to the backend hold now", be},
	    {&PM.prepares, METRIC_COUNTER, "mysteer_proxy_prepares_total",
	     "Statements the proxy prepared on the backend (COM_STMT_PREPARE answered)", be},
	};

	if (!done)
		done = metrics_register(defs, sizeof(defs) / sizeof(defs[0]), collect, NULL);
}

static const struct config_route *split_route(const struct config *cfg)
{
	for (size_t i = 0; i < cfg->nroutes; i++)
		if (cfg->routes[i].role == ROUTE_SPLIT)
			return &cfg->routes[i];
	return NULL;
}

static int proxy_start(struct daemon_ctx *d, char *err, size_t errlen)
{
	const struct config_route *r = split_route(d->cfg);

	if (!r)
		return 0;
	engine = proxy_engine_start(d->cfg, r->port, err, errlen);
	if (engine)
		register_metrics();
	return engine ? 0 : -1;
}

static void proxy_reload(struct daemon_ctx *d, const struct config *cfg)
{
	if (engine)
		proxy_engine_reload(engine, cfg);
}

static void proxy_stop(struct daemon_ctx *d, bool keep)
{
	proxy_engine_stop(engine);
	engine = NULL;
}

static void proxy_counters(uint32_t backend_id, struct backend_counters *c)
{
	proxy_engine_counters(engine, backend_id, c);
}

static void proxy_counters_reset(uint32_t backend_id)
{
	proxy_engine_counters_reset(engine, backend_id);
}

/* "pool": {"NAME": {"idle", "in_use", "opened", "reused", "resets",
 * "clean", "open", "max", "waiting", "waits", "wait_timeouts", "readers"}} per backend
 * of the topology now. */
static void pool_status(struct json_object *root)
{
	const struct topology *t = topo_current();
	struct json_object *pool;

	if (!t)
		return;
	pool = json_object_new_object();
	for (size_t i = 0; pool && i < t->nbackends; i++) {
		struct proxy_pool_stats ps;
		struct json_object *o = json_object_new_object();
		if (!o)
			break;
		proxy_engine_pool(engine, t->backends[i].id, &ps);
		json_object_object_add(o, "idle", json_object_new_int(ps.idle));
		json_object_object_add(o, "in_use", json_object_new_int(ps.in_use));
		json_object_object_add(o, "opened", json_object_new_int64((int64_t)ps.opened));
		json_object_object_add(o, "reused", json_object_new_int64((int64_t)ps.reused));
		json_object_object_add(o, "resets", json_object_new_int64((int64_t)ps.resets));
		json_object_object_add(o, "clean", json_object_new_int64((int64_t)ps.clean));
		json_object_object_add(o, "open", json_object_new_int(ps.open));
		json_object_object_add(o, "max", json_object_new_int(ps.max));
		json_object_object_add(o, "waiting", json_object_new_int(ps.waiting));
		json_object_object_add(o, "waits", json_object_new_int64((int64_t)ps.waits));
		json_object_object_add(o, "wait_timeouts",
		                       json_object_new_int64((int64_t)ps.wait_timeouts));
		json_object_object_add(o, "readers", json_object_new_int(ps.readers));
		json_object_object_add(pool, t->backends[i].name, o);
	}
	topo_put(t);
	if (pool)
		json_object_object_add(root, "pool", pool);
}

/* "proxy": {"clients": N, "backend_connections": N, "workers": N} and the
 * pool figures. */
static void proxy_status(struct json_object *root)
{
	struct json_object *o;
	int clients, conns, workers;

	if (!engine)
		return;
	proxy_engine_stats(engine, &clients, &conns, &workers);
	o = json_object_new_object();
	if (!o)
		return;
	json_object_object_add(o, "clients", json_object_new_int(clients));
	json_object_object_add(o, "backend_connections", json_object_new_int(conns));
	json_object_object_add(o, "workers", json_object_new_int(workers));
	json_object_object_add(root, "proxy", o);
	pool_status(root);
}

const struct service_ops proxy_service = {
    .name = "proxy",
    .start = proxy_start,
    .reload = proxy_reload,
    .stop = proxy_stop,
    .backend_counters = proxy_counters,
    .backend_reset = proxy_counters_reset,
    .status_json = proxy_status,
};
