/*
 * probe.h - one backend's health probe over a kept-open monitoring connection,
 * with libmysqlclient's non-blocking API driven by the controller's evloop.
 *
 * Each probe is bounded by the caller's timeout with the loop's own timer
 * (libmysqlclient's timeouts count whole seconds), so a black-holed backend
 * only ever costs its own probe, never the others'.
 */
#ifndef MYSTEER_PROBE_H
#define MYSTEER_PROBE_H

#include <stdbool.h>
#include <stdint.h>

struct evloop;

struct probe_result {
	bool ok;             /* reachable and answered every query */
	char error[160];     /* why not, when !ok */
	bool connect_failed; /* !ok while connecting (refused, unreachable, timed out) */
	/* !ok because the server refused the monitoring user (access denied,
	 * a privilege missing): a configuration problem, not a server down */
	bool misconfigured;
	bool read_only;   /* @@read_only, or @@super_read_only where the server has it */
	bool is_replica;  /* has a replication source configured */
	bool replicating; /* IO and SQL threads running */
	bool has_lag;     /* Seconds_Behind_Master was not NULL */
	double lag_s;
	double latency_ms; /* whole probe, including a reconnect */
};

typedef void (*probe_done_fn)(void *arg, const struct probe_result *r);

struct probe;

struct probe *probe_new(struct evloop *l, const char *host, uint16_t port, const char *user,
                        const char *password, probe_done_fn fn, void *arg);
/* Frees at once, also in the middle of a probe (fn is then not called). */
void probe_free(struct probe *p);
/* Starts one probe; fn is called exactly once, from the loop, when it ends.
 * Returns -1 when a probe is already running. */
int probe_start(struct probe *p, unsigned timeout_ms);
/* Like probe_start, but over a new connection: used when a client's connect to
 * the backend failed, which a kept-open connection cannot notice. */
int probe_start_fresh(struct probe *p, unsigned timeout_ms);
bool probe_busy(const struct probe *p);
/* New user and password (a reload): used from the next probe on, over a new
 * connection; the backend keeps its health and history. */
int probe_set_credentials(struct probe *p, const char *user, const char *password);
/* TLS on the probe's connection ([backend:NAME] tls != off): required (a
 * server that offers none fails the probe), the certificate not checked
 * (the 6450 proxy checks it on its own connections, tls = verify). A
 * change takes effect at the next probe, over a new connection. */
void probe_set_tls(struct probe *p, bool on);

#endif
