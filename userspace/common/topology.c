/*
 * topology.c - see topology.h. Owns the current-snapshot pointer and the
 * subscriber list. The pointer is swapped under a mutex, so that taking a
 * reference (load + increment) cannot race with the last put of the old
 * snapshot; the counts themselves are atomics.
 */
#include "common/topology.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SUBSCRIBERS 16

static pthread_mutex_t cur_lock = PTHREAD_MUTEX_INITIALIZER;
static struct topology *cur;
static uint64_t last_generation;

static struct {
	topo_subscriber_fn fn;
	void *arg;
} subs[MAX_SUBSCRIBERS];
static size_t nsubs;

/* Each enum's names, indexed by value. A value out of range reads as the
 * enum's zero, which is its default. */
static const char *const role_names[] = {
    [ROLE_NONE] = "none", [ROLE_WRITER] = "writer", [ROLE_READER] = "reader"};
static const char *const health_names[] = {
    [HEALTH_UNKNOWN] = "unknown", [HEALTH_UP] = "up", [HEALTH_DOWN] = "down"};
static const char *const admin_names[] = {
    [ADMIN_ENABLED] = "enabled", [ADMIN_DRAINED] = "drained", [ADMIN_DISABLED] = "disabled"};
static const char *const route_role_names[] = {
    [ROUTE_WRITER] = "writer", [ROUTE_READER] = "reader", [ROUTE_SPLIT] = "split"};

#define ENUM_NAME(names, v) ((names)[(unsigned)(v) < sizeof(names) / sizeof(*(names)) ? (v) : 0])

const char *topo_role_name(enum be_role r)
{
	return ENUM_NAME(role_names, r);
}

const char *topo_health_name(enum be_health h)
{
	return ENUM_NAME(health_names, h);
}

const char *topo_admin_name(enum be_admin a)
{
	return ENUM_NAME(admin_names, a);
}

const char *topo_route_role_name(enum route_role r)
{
	return ENUM_NAME(route_role_names, r);
}

const char *topo_state_name(const struct topo_backend *b)
{
	if (b->admin == ADMIN_DISABLED)
		return "disabled";
	if (b->admin == ADMIN_DRAINED)
		return "drained";
	return topo_health_name(b->health);
}

bool topo_backend_usable(const struct topo_backend *b)
{
	return b->health == HEALTH_UP && b->admin == ADMIN_ENABLED;
}

bool topo_reader_usable(const struct topo_backend *b)
{
	return b->role == ROLE_READER && topo_backend_usable(b) && b->weight > 0;
}

const struct topo_backend *topo_usable_writer(const struct topology *t)
{
	if (!t || t->writer < 0 || (size_t)t->writer >= t->nbackends)
		return NULL;
	return topo_backend_usable(&t->backends[t->writer]) ? &t->backends[t->writer] : NULL;
}

const char *topo_addr_str(const struct sockaddr_storage *ss, socklen_t sslen, char *buf, size_t len)
{
	const void *a = NULL;

	if (sslen == 0)
		return NULL;
	if (ss->ss_family == AF_INET)
		a = &((const struct sockaddr_in *)ss)->sin_addr;
	else if (ss->ss_family == AF_INET6)
		a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
	if (!a || !inet_ntop(ss->ss_family, a, buf, (socklen_t)len))
		return NULL;
	return buf;
}

static size_t add_readers(const struct topology *t, int *idx, size_t n, size_t max)
{
	for (size_t i = 0; i < t->nbackends && n < max; i++) {
		const struct topo_backend *b = &t->backends[i];
		if (topo_reader_usable(b))
			idx[n++] = (int)i;
	}
	return n;
}

static size_t add_writer(const struct topology *t, int *idx, size_t n, size_t max)
{
	if (n >= max || !topo_usable_writer(t))
		return n;
	idx[n++] = t->writer;
	return n;
}

size_t topo_route_targets(const struct topology *t, const struct topo_route *r, int *idx,
                          size_t max)
{
	size_t n = 0;
	switch (r->role) {
	case ROUTE_WRITER:
		return add_writer(t, idx, 0, max);
	case ROUTE_READER:
		n = add_readers(t, idx, 0, max);
		return n ? n : add_writer(t, idx, 0, max);
	case ROUTE_SPLIT:
		n = add_writer(t, idx, 0, max);
		return add_readers(t, idx, n, max);
	}
	return 0;
}

const struct topo_backend *topo_find(const struct topology *t, const char *name)
{
	for (size_t i = 0; t && i < t->nbackends; i++)
		if (strcmp(t->backends[i].name, name) == 0)
			return &t->backends[i];
	return NULL;
}

static _Atomic int *refs_of(const struct topology *t)
{
	return (_Atomic int *)&((struct topology *)t)->refs;
}

const struct topology *topo_get(const struct topology *t)
{
	if (t)
		atomic_fetch_add(refs_of(t), 1);
	return t;
}

void topo_put(const struct topology *t)
{
	if (!t || atomic_fetch_sub(refs_of(t), 1) != 1)
		return;
	struct topology *m = (struct topology *)t;
	free(m->backends);
	free(m->routes);
	free(m);
}

const struct topology *topo_current(void)
{
	pthread_mutex_lock(&cur_lock);
	const struct topology *t = topo_get(cur);
	pthread_mutex_unlock(&cur_lock);
	return t;
}

struct topology *topo_alloc(size_t nbackends, size_t nroutes)
{
	struct topology *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->backends = calloc(nbackends ? nbackends : 1, sizeof(*t->backends));
	t->routes = calloc(nroutes ? nroutes : 1, sizeof(*t->routes));
	if (!t->backends || !t->routes) {
		free(t->backends);
		free(t->routes);
		free(t);
		return NULL;
	}
	t->nbackends = nbackends;
	t->nroutes = nroutes;
	t->writer = -1;
	atomic_store(refs_of(t), 1);
	return t;
}

void topo_publish(struct topology *t)
{
	pthread_mutex_lock(&cur_lock);
	t->generation = ++last_generation;
	struct topology *old = cur;
	cur = t;
	pthread_mutex_unlock(&cur_lock);
	topo_put(old);
	for (size_t i = 0; i < nsubs; i++)
		subs[i].fn(t, subs[i].arg);
}

void topo_reset(void)
{
	pthread_mutex_lock(&cur_lock);
	struct topology *old = cur;
	cur = NULL;
	pthread_mutex_unlock(&cur_lock);
	topo_put(old);
}

int topo_subscribe(topo_subscriber_fn fn, void *arg)
{
	if (!fn || nsubs == MAX_SUBSCRIBERS)
		return -1;
	subs[nsubs].fn = fn;
	subs[nsubs].arg = arg;
	nsubs++;
	return 0;
}

void topo_unsubscribe(topo_subscriber_fn fn, void *arg)
{
	for (size_t i = 0; i < nsubs; i++) {
		if (subs[i].fn != fn || subs[i].arg != arg)
			continue;
		memmove(&subs[i], &subs[i + 1], (nsubs - i - 1) * sizeof(subs[0]));
		nsubs--;
		return;
	}
}
