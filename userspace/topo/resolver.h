/*
 * resolver.h - host names resolved off the event loop. getaddrinfo() blocks
 * (a DNS server may take seconds), so lookups, a backend's first one included,
 * run on a small pool of worker threads owned by the resolver, and their
 * results come back to the loop through an eventfd the loop watches; the
 * callback then runs on the loop thread, in the order the lookups end (not
 * the order they were submitted).
 *
 * Why a small pool with one queue rather than getaddrinfo_a() or a thread per
 * lookup: the thread count stays bounded (RESOLVER_THREADS), there is no
 * signal or SIGEV_THREAD machinery, and a request is keyed by a caller's
 * number, never by a pointer, so a caller that forgot an object while its
 * lookup ran only finds no match for the key: nothing freed is ever touched.
 * Why more than one thread: a slow lookup (a dead DNS server, bounded only by
 * resolv.conf's timeout and attempts) would otherwise delay every lookup
 * queued behind it, names that /etc/hosts answers at once and the periodic
 * lookups of the other backends included. With the pool, up to
 * RESOLVER_THREADS - 1 names can be stuck while the others still resolve at
 * once; only when every thread is in a slow lookup do requests wait. What is
 * bounded: the threads (RESOLVER_THREADS, however many backends and names),
 * and the wait of a shutdown (500 ms, however many threads are stuck). The
 * queue is not: the caller keeps one lookup in flight per backend.
 *
 * Threads start on demand: a new one only when a request is queued and every
 * thread there is busy, so a configuration of numeric addresses never has
 * one, and names that answer at once keep to one thread. They then wait for
 * work until the resolver is freed. resolver_free() joins the idle ones (so
 * glibc's per-thread resolver state is gone before the process exits, and
 * valgrind has nothing to report), and waits at most 500 ms in all for those
 * in a lookup: past that it detaches them. Each worker holds its own
 * reference to the shared state (queue, results, eventfd); the loop side
 * holds one more, and whichever drops the last frees it, so a detached
 * worker whose lookup returns after the resolver is gone still finds it,
 * drops its result and frees it if it is the last.
 */
#ifndef MYSTEER_RESOLVER_H
#define MYSTEER_RESOLVER_H

#include <stdint.h>
#include <sys/socket.h>

struct evloop;
struct resolver;

#define RESOLVER_MAX_ADDRS 8
/* Lookup threads at most: a few names may be stuck without holding up the
 * others. */
#define RESOLVER_THREADS 4

struct resolver_result {
	uint32_t key;   /* as given to resolver_submit() */
	int err;        /* 0, or a getaddrinfo() EAI_* code */
	char error[96]; /* why not, when err */
	/* The addresses returned, in getaddrinfo()'s order, port set (up to
	 * RESOLVER_MAX_ADDRS): a caller keeps its address while it is among
	 * them, so a name with several records is no move. */
	size_t naddrs;
	struct sockaddr_storage addr[RESOLVER_MAX_ADDRS];
	socklen_t addrlen[RESOLVER_MAX_ADDRS];
};

typedef void (*resolver_done_fn)(void *arg, const struct resolver_result *r);

/* fn is called on the loop thread, once per submitted request, unless the
 * resolver is freed first. */
struct resolver *resolver_new(struct evloop *l, resolver_done_fn fn, void *arg);
/* Drops queued and undelivered results; fn is never called again. */
void resolver_free(struct resolver *r);
/* Queues a lookup of host:port (TCP), starting a thread when all are busy and
 * the pool is not full. Returns -1 when out of memory or no thread can start
 * (none runs yet). */
int resolver_submit(struct resolver *r, uint32_t key, const char *host, uint16_t port);

/* 1 when host is a name (not a numeric IPv4/IPv6 address); never blocks. */
int resolver_is_name(const char *host);

#endif
