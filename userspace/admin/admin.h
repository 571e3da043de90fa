/*
 * admin.h - the admin socket of mysteerd (protocol in common/admin_proto.h) and
 * what its commands act on: the state overlay (config/state.h), the config
 * (reload) and the controller. Runs on the controller's loop thread, so a
 * command and a probe result never interleave.
 */
#ifndef MYSTEER_ADMIN_H
#define MYSTEER_ADMIN_H

#include <stddef.h>

#include "config/config.h"
#include "config/state.h"
#include "common/service.h"

struct controller;
struct admin;

struct admin_env {
	struct daemon_ctx *d; /* d->cfg is replaced on reload */
	struct controller *ctl;
	struct state_overlay *ov;
	const struct service_ops *const *services;
	size_t nservices;
	const char *version; /* shown by status */
	int64_t started_ms;  /* CLOCK_REALTIME ms the daemon started */
};

/* Opens the socket (creating its directory) and serves it on env->d->loop. */
struct admin *admin_new(const struct admin_env *env, char *err, size_t errlen);
/* Closes and unlinks the socket, frees every config retired by reloads. */
void admin_free(struct admin *a);

/* Pushes config + overlay to the controller (start and after changes). */
int admin_apply(struct admin *a, char *err, size_t errlen);
/* SIGHUP and `mysteerctl reload`: re-reads the config file; a bad file is
 * refused with its one-line error and the running config stays. */
int admin_reload(struct admin *a, char *err, size_t errlen);

/* The status object (docs/CLI.md, `status --json`), for the socket and for tests. */
struct json_object *admin_status_json(struct admin *a);
/* Handles one request line; returns the reply object (caller puts it). */
struct json_object *admin_handle(struct admin *a, const char *line);

#endif
