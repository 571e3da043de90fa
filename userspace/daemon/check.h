/*
 * check.h - `mysteerd --check -c FILE`: a preflight that says, one line a
 * fact, what the daemon could and could not do on this host with this
 * config: the kernel's features, the capabilities it holds, each backend's
 * reachability and what the monitoring user may read there. It attaches,
 * pins and listens on nothing, so it is safe beside a running daemon.
 */
#ifndef MYSTEER_DAEMON_CHECK_H
#define MYSTEER_DAEMON_CHECK_H

#include <stdio.h>

struct config;

/* Writes "ok|warn|FAIL  what: detail" lines to out. Returns 0 when the
 * daemon could do its job (warnings allowed), 1 when it could not. */
int daemon_check(const struct config *cfg, FILE *out);

#endif
