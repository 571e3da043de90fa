/*
 * routines.h - the routine table the proxy classifies with: loaded from the
 * writer's information_schema.ROUTINES when it changed, swapped whole.
 */
#ifndef MYSTEER_PROXY_ROUTINES_H
#define MYSTEER_PROXY_ROUTINES_H

#include <stdatomic.h>
#include <stdint.h>

#include "classify/classify.h"

struct rt_snap {
	_Atomic int refs;
	struct cls_routines *rt;
};

struct proxy_routines;

/* Starts the loader thread (probe credentials, check every interval_ms). */
struct proxy_routines *rt_loader_start(const char *user, const char *password,
                                       unsigned interval_ms);
void rt_loader_stop(struct proxy_routines *p);
/* Bumped on every new table: compare before taking a snapshot. */
uint64_t rt_generation(const struct proxy_routines *p);
/* A new reference to the current table (NULL before the first) and its
 * generation. Drop it with rt_snap_put. */
struct rt_snap *rt_snap_get(struct proxy_routines *p, uint64_t *gen);
void rt_snap_put(struct rt_snap *s);

#endif
