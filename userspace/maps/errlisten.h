/*
 * errlisten.h - the "no target" answer: one listener of mysteerd a route, on
 * relay_address:ephemeral, that answers every accepted connection with a
 * MySQL ERR packet naming the reason ("mysteer: route rw has no writer (db1
 * down: ...)") and closes it. connect4/6 steer a route's connections here when
 * it has no target, so a client gets a named error, never a hang or a bare
 * EPERM; sk_lookup (userspace/relay) puts errl_fd() in the SOCKMAP slot
 * MS_SOCKMAP_ERR(route) for the same purpose.
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

/* nroutes listeners on addr (IPv4 or IPv6 literal). NULL with err on failure. */
struct errlisten *errl_new(struct evloop *l, const char *addr, size_t nroutes, char *err,
                           size_t errlen);
void errl_free(struct errlisten *e);

/* The message sent to connections of route (copied). */
void errl_set_reason(struct errlisten *e, size_t route, const char *msg);

/* The listening socket of route (owned by e), and its address. -1 if none. */
int errl_fd(const struct errlisten *e, size_t route);
int errl_endpoint(const struct errlisten *e, size_t route, struct ms_endpoint *ep);

#endif
