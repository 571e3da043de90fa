/*
 * etcd.h - a small etcd v3 client for the controller's loop, through etcd's
 * gRPC-JSON gateway (POST /v3/kv/range, /v3/kv/txn, /v3/lease/grant,
 * /v3/lease/keepalive, /v3/watch; keys and values base64 in the JSON).
 *
 * libcurl's easy API blocks, so it never runs on the loop: one thread sends
 * the requests, one after the other, in the order they were queued; another
 * keeps one watch open (a stream of JSON objects, one a line). Their results
 * come back to the loop through an eventfd it watches, and the callback runs
 * on the loop thread, as the DNS resolver's do (topo/resolver.h).
 *
 * Endpoints: a request goes to the endpoint that answered last; one that
 * cannot be reached (connect failed, timed out) makes the request go to the
 * next, each endpoint once, within the request's deadline each. A request
 * that no endpoint answers comes back with ok = false and the reason.
 *
 * The watch is kept open by its thread: when the stream ends or breaks, or
 * does not say "created" within the request timeout, it says so (WATCH_DOWN)
 * and opens it again on the next endpoint after a short pause. The caller
 * can make it reconnect at once (etcd_watch_restart), e.g. when keepalives
 * fail: a stream to a partitioned member may stay silent for ever.
 *
 * etcd_free() stops both threads: a transfer in flight is aborted through
 * curl's progress callback (at most about a second), nothing queued runs and
 * no callback runs after it returns.
 */
#ifndef MYSTEER_ETCD_H
#define MYSTEER_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct evloop;
struct etcd;
struct json_object;

enum etcd_kind {
	ETCD_REPLY = 0,   /* the answer to etcd_request() (tag as given) */
	ETCD_WATCH_UP,    /* the watch is created (events follow) */
	ETCD_WATCH_EVENT, /* json: the "result" object, with its "events" */
	ETCD_WATCH_DOWN,  /* the watch stream ended or failed: error says why */
};

struct etcd_reply {
	enum etcd_kind kind;
	uint64_t tag;
	bool ok;                  /* HTTP 200 and a JSON object without "error" */
	long http;                /* the HTTP status, 0 when none came */
	char error[192];          /* why not ok */
	struct json_object *json; /* the body (borrowed for the call), NULL when none */
	uint64_t sent_ms;         /* mono_ms() when the request was first sent */
	char endpoint[128];       /* which endpoint answered (or was tried last) */
};

typedef void (*etcd_fn)(void *arg, const struct etcd_reply *r);

/* endpoints: "http://HOST:PORT" separated by commas and/or spaces (up to 8).
 * timeout_ms bounds each try of a request on one endpoint. fn runs on the
 * loop thread. NULL with err on a bad list or when out of resources. */
struct etcd *etcd_new(struct evloop *l, const char *endpoints, unsigned timeout_ms, etcd_fn fn,
                      void *arg, char *err, size_t errlen);
void etcd_free(struct etcd *e);

/* etcd auth: every request and the watch carry a token got from
 * /v3/auth/authenticate with user and password (in the Authorization
 * header); a token etcd refuses (expired) is replaced once per request.
 * Call before any request or etcd_watch(). -1 when out of memory. */
int etcd_auth(struct etcd *e, const char *user, const char *password);
/* Queues POST path (e.g. "/v3/kv/range") with body (JSON text, copied). -1
 * when out of memory. */
int etcd_request(struct etcd *e, uint64_t tag, const char *path, const char *body);
/* POST path with body now, on the caller's thread, blocking up to
 * timeout_ms per endpoint (for the daemon's exit: giving the lease back).
 * 0 when an endpoint answered 200 without an error, else -1 with err. */
int etcd_post_now(struct etcd *e, const char *path, const char *body, unsigned timeout_ms,
                  char *err, size_t errlen);
/* Requests queued or in flight, not answered yet. */
size_t etcd_pending(struct etcd *e);

/* Starts the watch of [key, range_end) (range_end "" : key only); once. */
int etcd_watch(struct etcd *e, const char *key, const char *range_end);
/* The watch stream is dropped and opened again (WATCH_DOWN, then UP). */
void etcd_watch_restart(struct etcd *e);

/* base64 of n bytes into a new string (free it), NULL when out of memory. */
char *etcd_b64(const void *in, size_t n);
/* Decodes a base64 string into out (cap bytes, NUL added); the length, or -1
 * when it is not base64 or does not fit. */
int etcd_unb64(const char *in, char *out, size_t cap);
/* The end of the range of keys starting with prefix (prefix with its last
 * byte plus one), into out. */
void etcd_prefix_end(const char *prefix, char *out, size_t cap);

#endif
