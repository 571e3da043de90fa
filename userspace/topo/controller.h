/*
 * controller.h - the controller state: the effective backend list, one probe
 * per backend on the interval, health hysteresis, and the topology decided by
 * rules.h. Logs every change of health or role as one line and publishes a
 * new snapshot (topology.h) only when something a consumer acts on changed.
 * Runs on the daemon's loop thread; only controller_request_probe_async() may
 * be called from another thread.
 */
#ifndef MYSTEER_CONTROLLER_H
#define MYSTEER_CONTROLLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/topology.h"
#include "config/config.h"
#include "config/state.h"

struct evloop;
struct controller;

/* One backend of the effective list (config + runtime changes). */
struct ctl_backend_spec {
	char name[TOPO_NAME_MAX];
	char host[TOPO_HOST_MAX];
	uint16_t port;
	int priority, weight;
	enum be_admin admin;
	bool tls; /* the probe uses TLS ([backend:NAME] tls != off) */
};

struct controller *controller_new(struct evloop *l);
void controller_free(struct controller *c);

/* How the controller learns whether a backend id given back is still held by
 * a consumer (busy: connections to the old backend still open), and tells
 * the consumers that an id now names a new backend (reused: start its
 * counters again). Both run on the loop thread; either may be NULL. */
struct controller_id_hooks {
	bool (*busy)(uint32_t id, void *arg);
	void (*reused)(uint32_t id, void *arg);
	void *arg;
};
void controller_set_id_hooks(struct controller *c, const struct controller_id_hooks *h);

/* What an earlier daemon left about backend ids (topology.h), taken into
 * account by the next controller_apply only (the first one, at start): a
 * backend whose address a held id meant, or whose name, host and port the
 * state file kept with an id, gets that id back; held ids no backend takes
 * are given to new backends only as ids given back are (alloc_id), and
 * fresh ids never collide with them. */
void controller_restore_ids(struct controller *c, const struct topo_prior_ids *p);

/* What the controller keeps across restarts (state.h, struct state_runtime):
 * the writer chosen last and which backends were demoted, restored before
 * the first apply; the ids come back through controller_restore_ids. */
void controller_restore_runtime(struct controller *c, const struct state_runtime *rt);
/* Called (loop thread) with the runtime state whenever it changed: the
 * writer chosen, a backend demoted or given an id. The daemon saves it in
 * the state file. */
void controller_set_persist(struct controller *c,
                            void (*fn)(const struct state_runtime *rt, void *arg), void *arg);
/* An operator lets a demoted backend (name; NULL: all) become the writer
 * again (`mysteerctl enable`, `reset`). Returns how many were demoted. The
 * next apply decides again. */
size_t controller_clear_demoted(struct controller *c, const char *name);

/* Takes the probe settings and routes of cfg (kept by pointer: it must live
 * until the next apply) and the effective backends. Backends keep their id,
 * probe connection and health across applies when name and address stay. */
int controller_apply(struct controller *c, const struct config *cfg,
                     const struct ctl_backend_spec *specs, size_t n);

/* A snapshot of everything now, including the latest lag and latency
 * (published snapshots change only on decisions). Caller topo_put()s it. */
struct topology *controller_snapshot(struct controller *c);

/* A part that decides for the host instead of the rules (cluster/): fn
 * changes every snapshot the controller builds (published or shown) before
 * it is compared with the last published one; the rules still run and their
 * choice is what fn sees. NULL: none. */
typedef void (*controller_filter_fn)(struct topology *t, void *arg);
void controller_set_filter(struct controller *c, controller_filter_fn fn, void *arg);
/* A part that may overrule the host's own probes for the decision
 * (cluster/: the fleet's views): fn runs for each backend these probes see
 * down, at each decision; true makes the rules take it as up (with what the
 * last probe that answered saw). The snapshot still says down. NULL: none. */
typedef bool (*controller_vote_fn)(const struct topo_backend *b, void *arg);
void controller_set_vote(struct controller *c, controller_vote_fn fn, void *arg);
/* The probe interval (ms) from the next probe of each backend on; 0: the
 * config's interval_ms (cluster/: followers probe less often). */
void controller_set_interval(struct controller *c, int ms);
/* Builds the snapshot again and publishes it when what consumers act on
 * changed (the filter's input changed). Loop thread; nothing before the first
 * apply. */
void controller_refresh(struct controller *c);
/* The writer the rules keep while it is usable (sticky), when name is one of
 * the backends: a new cluster leader starts from the fleet's writer. */
void controller_hint_writer(struct controller *c, const char *name);

/* Probe a backend now (loop thread), or from any thread. */
void controller_request_probe(struct controller *c, uint32_t backend_id);
void controller_request_probe_async(struct controller *c, uint32_t backend_id);
/* Runs what other threads queued; the daemon calls it from its loop wake. */
void controller_run_pending(struct controller *c);

#endif
