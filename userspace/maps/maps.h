/*
 * maps.h - userspace side of the eBPF steering (userspace/maps): turning a
 * topology snapshot into the map image of bpf/mysteer_abi.h, publishing it
 * with a generation flip (and the wait for readers after it, quiesce.h), the
 * "no target" error listeners (errlisten.h), what an earlier daemon left and
 * `mysteerctl detach` (leftover.h), the dump behind `mysteerctl maps`, and
 * the steer_service of mysteerd.
 *
 * The image builder and the close-on-demote diff are pure functions, so the
 * selection rules are unit-tested without a kernel.
 */
#ifndef MYSTEER_MAPS_H
#define MYSTEER_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "mysteer_abi.h"
#include "common/topology.h"
#include "config/config.h"
#include "common/service.h"

struct maps_service_entry {
	struct ms_service_key key; /* key.gen 0: the publisher sets it */
	struct ms_service val;
};

/* The label of a kernel path (MS_PATH_*), as the metrics and the dump name it. */
static inline const char *maps_path_name(unsigned path)
{
	static const char *const names[MS_PATHS] = {"connect", "lookup", "relay"};

	return path < MS_PATHS ? names[path] : "?";
}

/* A backend's counters over every route and path (active: c->active). */
static inline struct ms_path_counters maps_counters_total(const struct ms_counters *c)
{
	struct ms_path_counters t = {.active = c->active};

	for (int r = 0; r < MS_ROUTE_SLOTS; r++)
		for (int p = 0; p < MS_PATHS; p++) {
			t.steered += c->by[r][p].steered;
			t.connect_failures += c->by[r][p].connect_failures;
			t.closed_on_demote += c->by[r][p].closed_on_demote;
		}
	return t;
}

/* Everything one generation of the maps holds. */
struct maps_image {
	struct ms_backend backends[MS_MAX_BACKENDS];
	struct ms_route routes[MS_ROUTE_SLOTS]; /* by route id; flags 0: no route */
	struct maps_service_entry services[MS_MAX_SERVICES];
	size_t nservices;
	/* Why a route has no target, for the error listener's message. */
	char reason[MS_ROUTE_SLOTS][200];
};

/* Route ids (MS_ROUTE_SLOTS): the name of the route holding each id, "" when
 * the id is free. */
struct maps_route_ids {
	char name[MS_ROUTE_SLOTS][MS_NAME_MAX];
};

/*
 * The ids of t's routes after prev (the ids of the active generation): a
 * route whose name holds an id in prev keeps it; a new route takes the
 * lowest id free in prev and not busy (busy: ids that an older generation a
 * program may still read uses; may be NULL), so never one that names another
 * route to a program. Fills next and ids[i] for t->routes[i]. Returns 0, or
 * -1 with a reason (more than MS_MAX_ROUTES).
 */
int maps_assign_route_ids(const struct maps_route_ids *prev, const bool busy[MS_ROUTE_SLOTS],
                          const struct topology *t, struct maps_route_ids *next,
                          uint32_t ids[MS_MAX_ROUTES], char *err, size_t errlen);

/*
 * Builds the image of t: backends by id, each route at its id (ids[i] for
 * t->routes[i]; NULL: its index) with its targets (readers weighted by
 * weight, weight 0 never chosen; the writer standing in for the read route),
 * and the services: every vip x every non-split route port. Error listener
 * endpoints are left to the publisher. Returns 0, or -1 with a reason (more
 * routes or backends than the ABI holds).
 */
int maps_build_image(const struct topology *t, const struct config *cfg,
                     const uint32_t ids[MS_MAX_ROUTES], struct maps_image *img, char *err,
                     size_t errlen);

/*
 * Close-on-demote: for every backend id, the routes (bit = route id) whose
 * steered connections must be closed when moving from the image old to
 * new_img, the image of cur: the backend was a target of the route and is
 * not anymore (a route is the same while its id is present with the same
 * role: ids follow names across reloads), unless it is drained (drain leaves
 * connections), or it still serves that kind of route (a live writer that
 * stops standing in for readers keeps its read connections). Returns how
 * many backends have a non-zero mask.
 */
size_t maps_close_mask(const struct maps_image *old, const struct topology *cur,
                       const struct maps_image *new_img, uint32_t mask[MS_MAX_BACKENDS]);

/*
 * The same after a restart, when old is what the previous daemon left in the
 * maps: old ids are matched to cur's backends by address, since the sockets
 * carry the old ids.
 */
size_t maps_close_mask_adopted(const struct maps_image *old, const struct topology *cur,
                               const struct maps_image *new_img, uint32_t mask[MS_MAX_BACKENDS]);

/* Mounts bpffs at /sys/fs/bpf when it is not (Debian does not at boot) and
 * makes dir there. Returns 0, or -1 with a one-line reason in err. */
int maps_prepare_bpffs(const char *dir, char *err, size_t errlen);

/*
 * Fail closed on role, not on a blip: applied to a close mask (above) for
 * new_img, the image of cur. A backend that leaves a writer route only
 * because it missed probes (not up, still enabled) and no other server
 * became the writer (the route has no target) keeps its connections of
 * that route: the bit goes from mask to held (bit = route id, by backend
 * id). Held connections are closed (their bit back in mask) once the route
 * has a target that is not the backend, or the backend is back up without
 * the role, disabled or removed, or the route goes; held no more once the
 * backend is the route's target again. Returns how many backends have a
 * non-zero mask.
 */
size_t maps_hold_writer(const struct maps_image *new_img, const struct topology *cur,
                        uint32_t mask[MS_MAX_BACKENDS], uint32_t held[MS_MAX_BACKENDS]);

/*
 * Close-on-demote for connections that no eBPF program can close: after a
 * publish whose close mask (maps_close_mask) is not empty, fn gets that mask
 * and, per route id, the route's service port (host order; 0: no route).
 * Called on the controller thread; one hook (the relay's), NULL removes it.
 */
typedef void (*maps_demote_fn)(const uint32_t mask[MS_MAX_BACKENDS],
                               const uint16_t port[MS_ROUTE_SLOTS], void *arg);
void maps_on_demote(maps_demote_fn fn, void *arg);

/* The MySQL ERR packet the error listener sends (sequence 0), into buf.
 * Returns its length. */
size_t maps_err_packet(uint8_t *buf, size_t len, uint16_t code, const char *msg);

/* The eBPF client-side steering service of mysteerd (service.h). */
extern const struct service_ops steer_service;

#endif
