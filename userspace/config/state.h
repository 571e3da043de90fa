/*
 * state.h - the runtime overlay: backend changes made with mysteerctl (add,
 * remove, set, drain, disable, enable), kept in `state_file` and applied on
 * top of the config so that they survive restarts and `reload`.
 *
 * Pure data: no sockets, no topology. The controller owns one overlay, edits
 * it with the state_* calls below (each validates against the config and
 * refuses with a one-line reason), saves it after every change, and turns
 * config + overlay into the effective backend list with state_apply().
 *
 * Precedence: the config is the base, the overlay wins. A change
 * naming a backend that a reloaded config no longer has is kept but ignored,
 * so that it applies again if the backend comes back; `reset` drops it.
 */
#ifndef MYSTEER_STATE_H
#define MYSTEER_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/topology.h"
#include "config/config.h"

/* The changes to one backend, by name. */
struct state_change {
	char name[TOPO_NAME_MAX];
	bool added; /* defined at runtime: host/port (and priority/weight) below */
	char host[TOPO_HOST_MAX];
	uint16_t port;
	bool removed; /* a config backend taken out; nothing else is set */
	bool has_priority, has_weight, has_admin;
	int priority, weight;
	enum be_admin admin;
};

/*
 * What the controller decided and keeps across restarts (not an operator's
 * change: `reset` leaves it): the writer it chose last (kept while there is
 * no writer), and every backend's id and whether it was demoted (was the
 * writer until another server became it).
 */
struct state_runtime_backend {
	char name[TOPO_NAME_MAX];
	char host[TOPO_HOST_MAX];
	uint16_t port;
	uint32_t id;
	bool demoted;
};

struct state_runtime {
	char writer[TOPO_NAME_MAX]; /* "" none chosen yet */
	struct state_runtime_backend *b;
	size_t n;
};

struct state_overlay {
	struct state_change *changes;
	size_t n;
	struct state_runtime rt;
};

/* Replaces ov's runtime part with a copy of rt. -1 on allocation failure
 * (ov's runtime part is then left as it was). */
int state_set_runtime(struct state_overlay *ov, const struct state_runtime *rt);

/* The effective backend: the config's entry (or the added one) with the
 * overlay's overrides applied. cfg.line is 0 for runtime-added backends. */
struct state_backend {
	struct config_backend cfg;
	enum be_admin admin;
	bool runtime_added;
};

void state_init(struct state_overlay *ov);
void state_free(struct state_overlay *ov);

/* Loads path into ov (replacing its content). A missing file is an empty
 * overlay. A corrupt one returns -1 with "PATH: reason" in err and leaves ov
 * empty. */
int state_load(const char *path, struct state_overlay *ov, char *err, size_t errlen);
/* Writes ov atomically (temp file in the same directory, fsync, rename,
 * fsync of the directory), mode 0600. Creates the directory (one level) if
 * missing. -1 with "PATH: reason" in err on failure. */
int state_save(const char *path, const struct state_overlay *ov, char *err, size_t errlen);

/* Effective backends: config order, then runtime-added ones in the order
 * they were added; removed ones left out. *out is malloc'ed (free()).
 * Returns 0, or -1 on allocation failure. */
int state_apply(const struct config *c, const struct state_overlay *ov, struct state_backend **out,
                size_t *nout);

/* Edits. Each checks the request against config + overlay and returns 0, or
 * -1 with a one-line reason in err ("unknown backend \"x\"", ...) and ov
 * unchanged. priority/weight < 0 in state_add mean "default". */
int state_add(struct state_overlay *ov, const struct config *c, const char *name, const char *host,
              uint16_t port, int priority, int weight, char *err, size_t errlen);
int state_remove(struct state_overlay *ov, const struct config *c, const char *name, char *err,
                 size_t errlen);
int state_set(struct state_overlay *ov, const struct config *c, const char *name, int priority,
              int weight, char *err, size_t errlen); /* < 0: leave that one */
int state_set_admin(struct state_overlay *ov, const struct config *c, const char *name,
                    enum be_admin admin, char *err, size_t errlen);

/* Drops the changes of one backend (name) or all (NULL); the runtime part
 * stays. Returns how many entries were dropped (0 when there were none). */
size_t state_reset(struct state_overlay *ov, const char *name);

const struct state_change *state_find(const struct state_overlay *ov, const char *name);

#endif
