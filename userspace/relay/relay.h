/*
 * relay.h - the L4 relay of mysteerd: moves bytes between a client accepted
 * on a per-backend relay listener and a fresh connection to that backend.
 *
 * One listener per backend (bound to relay_address:ephemeral) so that the
 * choice of backend is made in the kernel (sk_lookup assigns the connection
 * to the listener's socket through the SOCKMAP) and the relay never parses
 * anything. The relay runs on a thread of its own so a slow or huge transfer
 * never blocks the controller loop.
 *
 * Data path: non-blocking sockets on one epoll (edge triggered), a bounded
 * buffer (or pipe) per direction, so a side is read only while the other side
 * drains (backpressure); EOF on one side is propagated as shutdown(SHUT_WR)
 * of the other (half-close); the pair is closed when both directions ended
 * or on any error. A backend connect is bounded (relay_set_connect_timeout)
 * and its failure reported (relay_on_connect_fail); both sides of a pair
 * have keepalive and a user timeout, so a peer that vanished ends the pair.
 */
#ifndef MYSTEER_RELAY_H
#define MYSTEER_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

enum relay_mode {
	RELAY_COPY = 0, /* read(2)/write(2) through a user buffer */
	RELAY_SPLICE,   /* splice(2) through a pipe per direction */
};

struct relay_stats {
	uint64_t accepted;       /* connections accepted on the listeners */
	uint64_t active;         /* pairs open now */
	uint64_t connect_failed; /* backend connections that failed */
	uint64_t bytes_up;       /* client -> backend */
	uint64_t bytes_down;     /* backend -> client */
};

struct relay;

/* The default data path: the fastest measured in docs/BENCHMARKS.md. */
enum relay_mode relay_default_mode(void);
const char *relay_mode_name(enum relay_mode m);
/* "copy" | "splice"; -1 when unknown. */
int relay_mode_parse(const char *s);

/* The thread count relay_new() takes for 0: half the cores, at least one. */
unsigned relay_default_threads(void);
/* Creates the relay and starts its threads (0: the default); the first
 * accepts on every listener and deals the pairs out to all of them in turn.
 * NULL with a reason in err. */
struct relay *relay_new(enum relay_mode mode, unsigned threads, char *err, size_t errlen);
/* Stops the threads, closes every listener and every pair. */
void relay_free(struct relay *r);

/*
 * Makes sure backend id has a listener bound to bind_addr (numeric IPv4 or
 * IPv6) on an ephemeral port and relays to dst. Calling it again with another
 * dst retargets new connections only. Returns the listening socket (owned by
 * the relay; the caller may put it into a SOCKMAP), or -1 with errno set.
 */
int relay_set_backend(struct relay *r, uint32_t id, const char *bind_addr,
                      const struct sockaddr *dst, socklen_t dstlen);
/* New connections through backend id's listener start with a PROXY v2
 * header (the client's address and where it connected to), or stop doing
 * so. Thread-safe; no-op for an id without a listener. */
void relay_set_proxy_protocol(struct relay *r, uint32_t id, bool on);
/* Closes the listener of backend id (pairs in flight continue). */
void relay_remove_backend(struct relay *r, uint32_t id);
/* The listener of backend id, -1 when none. */
int relay_listener_fd(struct relay *r, uint32_t id);
/* Number of listeners; fills ids[] up to max. */
size_t relay_backend_ids(struct relay *r, uint32_t *ids, size_t max);

/* Relays between two connected sockets (the relay owns both from now on).
 * Thread-safe; used by the benchmark and the tests. Returns 0 or -1. */
int relay_add_pair(struct relay *r, int fd_client, int fd_backend);

/* The most descriptors the pairs of all threads may hold (0: no bound, the
 * default): beyond it, and at EMFILE, accepts pause (relay_new's thread
 * stops watching the listeners for a moment: no spinning, one log line per
 * 10 s), so what the daemon keeps for probes and the admin socket stays
 * free. Thread-safe. */
void relay_set_fd_budget(struct relay *r, uint64_t fds);

/* The backend connect's bound (0: RELAY_CONNECT_TIMEOUT_MS); thread-safe. */
#define RELAY_CONNECT_TIMEOUT_MS 3000
void relay_set_connect_timeout(struct relay *r, unsigned ms);

/* Called (on a relay thread) when a connect to the backend of listener id
 * fails or times out, with the errno; set before any listener. */
typedef void (*relay_fail_fn)(uint32_t id, int err, void *arg);
void relay_on_connect_fail(struct relay *r, relay_fail_fn fn, void *arg);

/* Ends, with a reset, the pairs accepted on listener id whose client
 * connected to local port lport (0: any): close-on-demote. Thread-safe; done
 * by each relay thread at its next wakeup. */
void relay_close_pairs(struct relay *r, uint32_t id, uint16_t lport);

void relay_get_stats(struct relay *r, struct relay_stats *s);

#endif
