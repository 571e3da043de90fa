/*
 * proxy.h - the 6450 MySQL protocol proxy: the service mysteerd runs, and the
 * engine API under it so that tests can run the engine without the daemon.
 *
 * The engine owns its worker threads (one epoll loop each, one SO_REUSEPORT
 * listener each), the client sessions and their backend connections. It reads
 * the topology with topo_current() on every routing decision, so it follows
 * the controller without being told.
 */
#ifndef MYSTEER_PROXY_H
#define MYSTEER_PROXY_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "common/service.h"

extern const struct service_ops proxy_service;

struct proxy_engine;

/* Starts workers listening on port of each [proxy] bind address of cfg.
 * Copies what it needs from cfg (users, limits). NULL with err on failure. */
struct proxy_engine *proxy_engine_start(const struct config *cfg, uint16_t port, char *err,
                                        size_t errlen);
/* Applies the reloadable keys (read_your_writes*, pool_*, reader_policy). */
void proxy_engine_reload(struct proxy_engine *e, const struct config *cfg);
void proxy_engine_stop(struct proxy_engine *e);
/* Adds the proxy's backend connections to a backend's counters: active now,
 * opened (steered) and failed to connect. Thread-safe. */
void proxy_engine_counters(struct proxy_engine *e, uint32_t id, struct backend_counters *bc);
/* The id names a new backend (nothing open to the old one): zero its
 * cumulative figures. */
void proxy_engine_counters_reset(struct proxy_engine *e, uint32_t id);
/* Client sessions, backend connections, worker threads now. Thread-safe. */
void proxy_engine_stats(struct proxy_engine *e, int *clients, int *backend_conns, int *workers);

struct proxy_pool_stats {
	int idle;        /* reset connections waiting in the pools */
	int in_use;      /* held by sessions (or being reset) */
	uint64_t opened; /* new backend connections since start */
	uint64_t reused; /* pooled connections taken instead (per statement when multiplexed) */
	uint64_t resets; /* COM_RESET_CONNECTIONs sent when parking */
	uint64_t clean;  /* parked without one: only clean reads ran on it */
	int open;        /* open connections now (idle, in use, warm, logging in) */
	int max;         /* pool_max_per_backend: the cap of open */
	int waiting;     /* sessions waiting now for a connection (open == max) */
	uint64_t waits;  /* sessions that had to wait, since start */
	uint64_t wait_timeouts; /* waits that ended with an ERR */
	int readers;            /* client sessions whose reader it is now */
	int prepared;           /* server-side prepared statements open on it now */
	uint64_t prepares;      /* statements the proxy prepared on it, since start */
};
/* Pool figures of one backend id, summed over the workers. Thread-safe. */
void proxy_engine_pool(struct proxy_engine *e, uint32_t id, struct proxy_pool_stats *ps);

#endif
