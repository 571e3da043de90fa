/*
 * views.h - "many eyes" (docs/CLUSTER.md): what each host of the fleet sees
 * of the backends, published under /mysteer/<name>/views/<host_id> with the
 * host's lease, and the leader's verdict from them. Pure functions (no etcd,
 * no loop), unit-tested in tests/unit/test_views.c.
 *
 * A view is JSON: {"host": ID, "time": unix ms when it was made,
 * "backends": [{"name", "health": "up"|"down"|"unknown", "read_only",
 * "lag": seconds or null}]}.
 */
#ifndef MYSTEER_CLUSTER_VIEWS_H
#define MYSTEER_CLUSTER_VIEWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/topology.h"

struct json_object;

/* This host's view of the backends of t (their own health: the host's
 * probes) as JSON text (free it); NULL when out of memory. */
char *views_text(const char *host, const struct topology *t, int64_t time_ms);

/* What a view says of backend name: HEALTH_UNKNOWN when it does not name it
 * or is not a view. */
enum be_health views_health_of(struct json_object *view, const char *name);

/* The leader's count for one backend: live = the leader plus every other
 * host with a view; down = those of them that see it down. */
struct views_count {
	unsigned live, down;
};

/* The verdict: true when the leader's own probes see the backend down AND
 * a strict majority of the live hosts (the leader counted) see it down.
 * others[n]: what each other live host's view says of it (unknown, or a
 * view without it, counts as live and not down). One host's partition
 * never makes the verdict alone, unless it is the only live host. */
bool views_agree_down(enum be_health own, const enum be_health *others, size_t n,
                      struct views_count *count);

#endif
