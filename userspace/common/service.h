/*
 * service.h - how the parts of mysteerd that consume the topology plug into
 * the controller: the eBPF steering (userspace/maps) and the proxies
 * (userspace/proxy). main.c lists them in one table and calls them in order;
 * adding a part means adding one entry there, nothing else.
 */
#ifndef MYSTEER_SERVICE_H
#define MYSTEER_SERVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/topology.h"

struct config;
struct evloop;
struct json_object;

struct daemon_ctx {
	const struct config *cfg; /* current config; replaced on reload */
	struct evloop *loop;      /* the controller thread's loop */
	/* Thread-safe: probe this backend now instead of at the next interval
	 * (connect-failure feedback). */
	void (*request_probe)(struct daemon_ctx *d, uint32_t backend_id);
	void *controller; /* owned by the controller */
	/* Runs an admin request (JSON, as mysteerctl sends it) on the loop
	 * thread, as if typed here; its answer is logged when an error. For
	 * cluster/: a command from another host of the fleet. */
	void (*admin_run)(struct daemon_ctx *d, const char *request);
	/* With [cluster] (set by cluster/ while it runs, else NULL): an
	 * operator's drain, disable, enable or set of backend, done here, for
	 * the whole fleet. request: the admin request as received. */
	void (*fleet_admin)(struct daemon_ctx *d, const char *cmd, const char *backend,
	                    const char *request);
};

struct backend_counters {
	uint64_t active, steered, connect_failures;
	/* what still ties this part to the backend: connections open (steered
	 * and not closed, pooled), sessions waiting for one. A backend id is not
	 * given to a new backend while it is not 0. */
	uint64_t open;
};

struct service_ops {
	const char *name;
	/* After the config is loaded and before the first probe. Non-zero stops
	 * the daemon with the message in err. */
	int (*start)(struct daemon_ctx *d, char *err, size_t errlen);
	/* A new config after `mysteerctl reload`. */
	void (*reload)(struct daemon_ctx *d, const struct config *cfg);
	/* keep: leave kernel state pinned (keep_on_exit, SIGKILL-like upgrade). */
	void (*stop)(struct daemon_ctx *d, bool keep);
	/* Adds this part's counters for one backend to c (may be NULL). */
	void (*backend_counters)(uint32_t backend_id, struct backend_counters *c);
	/* The id now names a new backend: its counters start from zero (may be
	 * NULL). Called only when `open` was 0 for it. */
	void (*backend_reset)(uint32_t backend_id);
	/* What an earlier daemon left about backend ids (the pinned maps): fills
	 * the parts of p it knows (may be NULL). Called once, after start and
	 * before the first backends are applied. */
	void (*prior_ids)(struct topo_prior_ids *p);
	/* Adds keys of its own to the status object (may be NULL). */
	void (*status_json)(struct json_object *root);
	/* /ready: false, with why, while this part cannot do its job yet (its
	 * eBPF programs not attached, no topology in its maps). May be NULL. */
	bool (*ready)(char *why, size_t len);
};

#endif
