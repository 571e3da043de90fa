/*
 * resolver.h - host names resolved off the event loop. getaddrinfo() blocks
 * (a DNS server may take seconds), so lookups, a backend's first one included,
 * run on one worker thread owned by the resolver and their results come back
 * to the loop through an eventfd the loop watches; the callback then runs on
 * the loop thread.
 *
 * Why one thread with a queue rather than getaddrinfo_a() or a thread per
 * lookup: the thread count stays bounded (one), there is no signal or
 * SIGEV_THREAD machinery, and a request is keyed by a caller's number, never
 * by a pointer, so a caller that forgot an object while its lookup ran only
 * finds no match for the key: nothing freed is ever touched. The cost is that
 * one slow lookup delays the ones queued behind it (names in /etc/hosts or a
 * cache answer at once; a dead DNS server is bounded by resolv.conf).
 *
 * The worker starts at the first request, so a configuration of numeric
 * addresses never has one. resolver_free() joins an idle worker (so glibc's
 * per-thread resolver state is gone before the process exits, and valgrind
 * has nothing to report), and waits at most 500 ms for one in a lookup: past
 * that it detaches it; the worker holds its own reference to the shared state
 * and frees it when its lookup returns.
 */
#ifndef MYSTEER_RESOLVER_H
#define MYSTEER_RESOLVER_H

#include <stdint.h>
#include <sys/socket.h>

struct evloop;
struct resolver;

#define RESOLVER_MAX_ADDRS 8

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
/* Queues a lookup of host:port (TCP). Returns -1 when out of memory or the
 * worker cannot start. */
int resolver_submit(struct resolver *r, uint32_t key, const char *host, uint16_t port);

/* 1 when host is a name (not a numeric IPv4/IPv6 address); never blocks. */
int resolver_is_name(const char *host);

#endif
