/*
 * resolver.c - see resolver.h.
 */
#define _GNU_SOURCE /* pthread_timedjoin_np */
#include "topo/resolver.h"

#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/evloop.h"
#include "common/log.h"
#include "common/thread.h"

struct req {
	struct req *next;
	struct resolver_result res;
	uint16_t port;
	char host[]; /* NUL-terminated */
};

/* Shared by the loop side and the workers; freed by whichever drops the last
 * reference (the loop side holds one, each started worker one). Everything
 * below lock is guarded by it. */
struct shared {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* a request queued, or stop */
	int refs;
	bool stop;
	int nthreads;  /* started; they run until stop */
	int nfree;     /* of those, not in a lookup (waiting, or not yet waiting) */
	size_t queued; /* requests in queue */
	pthread_t tid[RESOLVER_THREADS];
	struct req *queue, **queue_tail;
	struct req *done, **done_tail;
	int efd;
};

struct resolver {
	struct evloop *l;
	resolver_done_fn fn;
	void *arg;
	struct shared *sh;
	bool watching;
};

static void free_list(struct req *r)
{
	while (r) {
		struct req *next = r->next;
		free(r);
		r = next;
	}
}

/* Drops one reference; the caller holds the lock, which this releases. */
static void shared_put_unlock(struct shared *sh)
{
	bool last = --sh->refs == 0;
	pthread_mutex_unlock(&sh->lock);
	if (!last)
		return;
	free_list(sh->queue);
	free_list(sh->done);
	if (sh->efd >= 0)
		close(sh->efd);
	pthread_cond_destroy(&sh->cond);
	pthread_mutex_destroy(&sh->lock);
	free(sh);
}

static void lookup(struct req *r)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
	struct addrinfo *ai = NULL;
	char port[8];

	snprintf(port, sizeof(port), "%u", r->port);
	r->res.err = getaddrinfo(r->host, port, &hints, &ai);
	if (r->res.err == 0) {
		for (const struct addrinfo *p = ai; p && r->res.naddrs < RESOLVER_MAX_ADDRS;
		     p = p->ai_next) {
			if (p->ai_addrlen > sizeof(r->res.addr[0]))
				continue;
			memcpy(&r->res.addr[r->res.naddrs], p->ai_addr, p->ai_addrlen);
			r->res.addrlen[r->res.naddrs++] = p->ai_addrlen;
		}
		if (r->res.naddrs == 0) {
			r->res.err = EAI_FAIL;
			snprintf(r->res.error, sizeof(r->res.error), "no usable address");
		}
	} else if (r->res.err == EAI_SYSTEM) {
		snprintf(r->res.error, sizeof(r->res.error), "%s", strerror(errno));
	} else {
		snprintf(r->res.error, sizeof(r->res.error), "%s", gai_strerror(r->res.err));
	}
	if (ai)
		freeaddrinfo(ai);
}

static void *worker(void *arg)
{
	struct shared *sh = arg;

	pthread_mutex_lock(&sh->lock);
	for (;;) {
		while (!sh->stop && !sh->queue)
			pthread_cond_wait(&sh->cond, &sh->lock);
		if (sh->stop)
			break;
		struct req *r = sh->queue;
		sh->queue = r->next;
		if (!sh->queue)
			sh->queue_tail = &sh->queue;
		r->next = NULL;
		sh->queued--;
		sh->nfree--;
		pthread_mutex_unlock(&sh->lock);
		lookup(r);
		pthread_mutex_lock(&sh->lock);
		sh->nfree++;
		if (sh->stop) {
			free(r);
			break;
		}
		*sh->done_tail = r;
		sh->done_tail = &r->next;
		uint64_t one = 1;
		/* Only fails when the counter would overflow: the loop is already
		 * due to wake then. */
		if (write(sh->efd, &one, sizeof(one)) != (ssize_t)sizeof(one) && errno != EAGAIN)
			log_warn("resolver: cannot wake the loop: %s", strerror(errno));
	}
	shared_put_unlock(sh);
	return NULL;
}

static void on_efd(struct evloop *l, int fd, unsigned events, void *arg)
{
	struct resolver *rs = arg;
	struct shared *sh = rs->sh;
	uint64_t n;

	if (read(fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		log_warn("resolver: read eventfd: %s", strerror(errno));
	pthread_mutex_lock(&sh->lock);
	struct req *list = sh->done;
	sh->done = NULL;
	sh->done_tail = &sh->done;
	pthread_mutex_unlock(&sh->lock);
	while (list) {
		struct req *r = list;
		list = r->next;
		rs->fn(rs->arg, &r->res);
		free(r);
	}
}

struct resolver *resolver_new(struct evloop *l, resolver_done_fn fn, void *arg)
{
	struct resolver *rs = calloc(1, sizeof(*rs));
	struct shared *sh = calloc(1, sizeof(*sh));
	if (!rs || !sh)
		goto fail;
	rs->l = l;
	rs->fn = fn;
	rs->arg = arg;
	rs->sh = sh;
	sh->refs = 1;
	sh->queue_tail = &sh->queue;
	sh->done_tail = &sh->done;
	sh->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (sh->efd < 0)
		goto fail;
	if (pthread_mutex_init(&sh->lock, NULL) != 0)
		goto fail_fd;
	if (pthread_cond_init(&sh->cond, NULL) != 0)
		goto fail_lock;
	if (evloop_add_fd(l, sh->efd, EV_READ, on_efd, rs) < 0)
		goto fail_cond;
	rs->watching = true;
	return rs;
fail_cond:
	pthread_cond_destroy(&sh->cond);
fail_lock:
	pthread_mutex_destroy(&sh->lock);
fail_fd:
	close(sh->efd);
fail:
	free(sh);
	free(rs);
	return NULL;
}

/*
 * An idle worker ends at once on stop: join it, so that it has released what
 * glibc keeps per thread (its resolver state) before the caller goes on, and
 * exits. One inside a slow lookup is left to end by itself (detached) rather
 * than holding up a shutdown; it holds its own reference to what it uses. One
 * deadline for all of them: a shutdown waits 500 ms at most, however many are
 * stuck.
 */
static void reap_workers(const pthread_t *tid, int n)
{
	struct timespec until;
	bool timed = clock_gettime(CLOCK_REALTIME, &until) == 0;
	int rc;

	if (timed) {
		until.tv_nsec += 500 * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
	}
	for (int i = 0; i < n; i++) {
		if (timed && pthread_timedjoin_np(tid[i], NULL, &until) == 0)
			continue;
		rc = pthread_detach(tid[i]);
		if (rc != 0)
			log_warn("resolver: cannot detach a lookup thread: %s", strerror(rc));
	}
}

void resolver_free(struct resolver *rs)
{
	if (!rs)
		return;
	struct shared *sh = rs->sh;
	pthread_t tid[RESOLVER_THREADS];
	if (rs->watching)
		evloop_del_fd(rs->l, sh->efd);
	pthread_mutex_lock(&sh->lock);
	sh->stop = true;
	free_list(sh->queue);
	sh->queue = NULL;
	sh->queue_tail = &sh->queue;
	sh->queued = 0;
	free_list(sh->done);
	sh->done = NULL;
	sh->done_tail = &sh->done;
	pthread_cond_broadcast(&sh->cond);
	/* Copied before our reference goes: the last worker may free sh. */
	int n = sh->nthreads;
	memcpy(tid, sh->tid, sizeof(tid[0]) * (size_t)n);
	shared_put_unlock(sh);
	free(rs);
	reap_workers(tid, n);
}

/*
 * Called with the lock held, after a request was queued: a new worker only
 * when the requests waiting outnumber the workers free to take them (every
 * worker is busy) and the pool is not full. A worker counts as free from its
 * start until it takes a request, so a burst of requests starts no more
 * workers than it needs. Joinable: resolver_free joins it, or detaches it
 * when a lookup is slow. The worker's reference is taken before it can run.
 */
static int grow_pool(struct shared *sh)
{
	if (sh->queued <= (size_t)sh->nfree || sh->nthreads >= RESOLVER_THREADS)
		return 0;
	sh->refs++;
	int rc = pthread_create(&sh->tid[sh->nthreads], NULL, worker, sh);
	if (rc != 0) {
		sh->refs--;
		/* The workers there are take the request in turn. */
		if (sh->nthreads > 0)
			log_warn("resolver: cannot start lookup thread %d: %s", sh->nthreads + 1,
			         strerror(rc));
		return sh->nthreads > 0 ? 0 : -1;
	}
	thread_name(sh->tid[sh->nthreads], "mysteer-dns%d", sh->nthreads);
	sh->nthreads++;
	sh->nfree++;
	return 0;
}

int resolver_submit(struct resolver *rs, uint32_t key, const char *host, uint16_t port)
{
	struct shared *sh = rs->sh;
	size_t len = strlen(host);
	struct req *r = calloc(1, sizeof(*r) + len + 1);
	if (!r)
		return -1;
	memcpy(r->host, host, len + 1);
	r->port = port;
	r->res.key = key;

	pthread_mutex_lock(&sh->lock);
	*sh->queue_tail = r;
	sh->queue_tail = &r->next;
	sh->queued++;
	if (grow_pool(sh) < 0) {
		/* No worker at all: take the request back (it is the last one). */
		struct req **p = &sh->queue;
		while (*p != r)
			p = &(*p)->next;
		*p = NULL;
		sh->queue_tail = p;
		sh->queued--;
		pthread_mutex_unlock(&sh->lock);
		free(r);
		return -1;
	}
	pthread_cond_signal(&sh->cond);
	pthread_mutex_unlock(&sh->lock);
	return 0;
}

int resolver_is_name(const char *host)
{
	struct addrinfo hints = {.ai_flags = AI_NUMERICHOST};
	struct addrinfo *ai = NULL;
	int rc = getaddrinfo(host, NULL, &hints, &ai);
	if (ai)
		freeaddrinfo(ai);
	return rc != 0;
}
