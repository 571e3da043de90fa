/*
 * engine_test.h - the proxy engine driven by a test in its own thread, with
 * no listener, no worker thread and no routine loader: clients come as
 * sockets the test hands over, backend connections are made by a function
 * the test gives (a socketpair to a scripted server, say), and the test runs
 * the worker's event loop one batch at a time.
 *
 * Compiled only with -DMYSTEER_ENGINE_TEST (the fuzz build, tests/fuzz):
 * mysteerd has none of it.
 */
#ifndef MYSTEER_PROXY_ENGINE_TEST_H
#define MYSTEER_PROXY_ENGINE_TEST_H

#include <stdint.h>
#include <stddef.h>

#include "common/topology.h"
#include "config/config.h"

struct proxy_engine;

/* Makes the connection to backend be: a connected, non-blocking socket, or
 * -1 with errno set (the connect failed, as a refused one would). */
typedef int (*proxy_test_connect_fn)(void *arg, const struct topo_backend *be);

/* One worker, its settings from cfg. NULL with err on failure. */
struct proxy_engine *proxy_engine_test_new(const struct config *cfg, proxy_test_connect_fn fn,
                                           void *arg, char *err, size_t errlen);
/* A new client session on fd (connected, non-blocking; the engine owns it
 * from now on, also on failure), as if accepted from 127.0.0.1. The
 * handshake is queued at once. 0, or -1 when the engine refused it. */
int proxy_engine_test_client(struct proxy_engine *e, int fd);
/* One batch of events, waiting at most timeout_ms (0: none), then the
 * waits, frees and, when due, the sweep. */
void proxy_engine_test_run(struct proxy_engine *e, int timeout_ms);
/* The periodic sweep now (pool idle timeouts, waits, client timeouts). */
void proxy_engine_test_sweep(struct proxy_engine *e);
/* Moves the engine's clock (CLOCK_MONOTONIC ms) forward, for every engine
 * of the process: timeouts come without waiting. */
void proxy_engine_test_advance(uint64_t ms);
/* Closes every session and connection and frees the engine. */
void proxy_engine_test_free(struct proxy_engine *e);

#endif
