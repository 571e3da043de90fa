/*
 * errlisten.h - the "no target" answer: one listener of mysteerd a route (by
 * route id), on an address:ephemeral, that answers every accepted connection
 * with a MySQL ERR packet naming the reason ("mysteer: route rw has no writer
 * (db1 down: ...)") and closes it. connect4/6 steer a route's connections
 * here when it has no target, so a client gets a named error, never a hang or
 * a bare EPERM; sk_lookup finds errl_fd() in the SOCKMAP slot
 * MS_SOCKMAP_ERR(route) for the same purpose. Listeners are opened and closed
 * as routes come and go with reloads (steer_service).
 *
 * Runs on the evloop it was created with; not thread-safe.
 */
#ifndef MYSTEER_ERRLISTEN_H
#define MYSTEER_ERRLISTEN_H

#include <stddef.h>
#include <sys/socket.h>

#include "mysteer_abi.h"

struct evloop;
struct errlisten;

/* A set of listeners on addr (IPv4 or IPv6 literal), none open yet. NULL with
 * err when addr is not an IP address or memory is short. */
struct errlisten *errl_new(struct evloop *l, const char *addr, char *err, size_t errlen);
void errl_free(struct errlisten *e);

/* Opens the listener of route (a route id < MS_ROUTE_SLOTS); 0 when it is
 * open already. -1 with err on failure. */
int errl_open(struct errlisten *e, size_t route, char *err, size_t errlen);
/* Closes it (closing drops its SOCKMAP entries). */
void errl_close(struct errlisten *e, size_t route);

/* The message sent to connections of route (copied). */
void errl_set_reason(struct errlisten *e, size_t route, const char *msg);

/* The listening socket of route (owned by e), and its address. -1 if none. */
int errl_fd(const struct errlisten *e, size_t route);
int errl_endpoint(const struct errlisten *e, size_t route, struct ms_endpoint *ep);

#endif
