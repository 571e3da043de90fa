/*
 * topology.h - the one interface through which the controller publishes what
 * it decided: which backend is the writer, which are readers, and the state of
 * every backend and route.
 *
 * A topology is an immutable, reference-counted snapshot. The controller
 * (userspace/topo) builds a new one on every change of state or role and hands
 * it to every subscriber (the eBPF map publisher, the 6450 proxy, the admin
 * socket, tests). Readers on other threads take a reference with
 * topo_current() and drop it with topo_put(); a snapshot is never modified
 * after it is published, so no lock is held while it is used.
 */
#ifndef MYSTEER_TOPOLOGY_H
#define MYSTEER_TOPOLOGY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define TOPO_NAME_MAX 64
#define TOPO_HOST_MAX 256
/* Backend ids the eBPF maps (MS_MAX_BACKENDS) and the 6450 pool's counters
 * hold. An id given back is reused only once nothing counts against it any
 * more (a removed backend's sockets, pooled connections: the controller's
 * alloc_id); a backend that finds none free gets an id past this, which the
 * kernel paths and the pool's cap do not cover. */
#define TOPO_MAX_IDS 256

/*
 * What an earlier daemon left behind about backend ids, so that a restarted
 * one gives every backend the id it had: the ids that the pinned eBPF maps
 * use (and the address each meant there), the ids the state file kept (by
 * name, host and port), and which backend was the writer. Sockets carry ids
 * in their marks and sk_lookup's SOCKMAP slots are indexed by them, so an id
 * must never come to mean another server while they live.
 */
struct topo_prior_ids {
	bool held[TOPO_MAX_IDS]; /* the pinned maps use the id (entry or counters) */
	struct sockaddr_storage addr[TOPO_MAX_IDS]; /* what it meant there */
	socklen_t addrlen[TOPO_MAX_IDS];            /* 0: no address known */
	int64_t writer_id;                          /* the maps' writer, -1: none */
	/* from the state file: name, host, port -> id ("" name: none) */
	struct {
		char name[TOPO_NAME_MAX];
		char host[TOPO_HOST_MAX];
		uint16_t port;
	} kept[TOPO_MAX_IDS];
};

enum be_role { ROLE_NONE = 0, ROLE_WRITER, ROLE_READER };
enum be_health { HEALTH_UNKNOWN = 0, HEALTH_UP, HEALTH_DOWN };
enum be_admin { ADMIN_ENABLED = 0, ADMIN_DRAINED, ADMIN_DISABLED };
enum route_role { ROUTE_WRITER = 0, ROUTE_READER, ROUTE_SPLIT };

struct topo_backend {
	uint32_t id; /* stable for the backend's life, map index; reused (alloc_id) */
	char name[TOPO_NAME_MAX];
	char host[TOPO_HOST_MAX];
	uint16_t port;
	struct sockaddr_storage addr; /* resolved host:port (AF_INET or AF_INET6) */
	socklen_t addrlen;            /* 0 when the host did not resolve */
	enum be_role role;
	enum be_health health;
	enum be_admin admin;
	int priority; /* lower wins */
	int weight;   /* 0: never chosen as a reader */
	bool read_only;
	bool replicating; /* IO and SQL threads running */
	bool has_lag;     /* lag_s valid: a replica with replication running */
	double lag_s;
	double probe_ms;        /* latency of the last good probe */
	int64_t last_probe_ms;  /* CLOCK_REALTIME ms of the last probe, 0 never */
	char last_error[160];   /* why it is down, "" when up */
	char last_change[200];  /* its last change of health, admin state or role, and why */
	int64_t last_change_ms; /* CLOCK_REALTIME ms of that change, 0 none yet */
	bool demoted;           /* was the writer until another server became it */
	bool extra_writable;    /* writable, live, and not the writer: a warning */
};

struct topo_route {
	char name[TOPO_NAME_MAX];
	uint16_t port;
	enum route_role role;
};

struct topology {
	uint64_t generation; /* grows by one with every published change */
	int writer;          /* index into backends, -1: none */
	size_t nbackends;
	struct topo_backend *backends; /* config order */
	size_t nroutes;
	struct topo_route *routes;
	/* Why this host steers no writes although the fleet may have a writer
	 * (cluster/, fencing), "" when it is not fenced. */
	char fence[192];
	int refs; /* atomic; use topo_get/topo_put */
};

/* Human-readable names, as docs/CLI.md shows them. */
const char *topo_role_name(enum be_role r);
const char *topo_health_name(enum be_health h);
const char *topo_admin_name(enum be_admin a);
const char *topo_route_role_name(enum route_role r);
/* "disabled", else "drained", else the health. */
const char *topo_state_name(const struct topo_backend *b);

/* A backend may get new connections of its role (up and enabled). */
bool topo_backend_usable(const struct topo_backend *b);

/*
 * The one rule for who takes new connections, followed by the eBPF map image
 * (the kernel paths), the 6450 proxy and the status, so that they never
 * disagree. A reader: role reader, usable, weight above 0 (weight 0 takes a
 * reader out of the rotation without draining it). The writer: the
 * snapshot's writer when usable, else NULL.
 */
bool topo_reader_usable(const struct topo_backend *b);
const struct topo_backend *topo_usable_writer(const struct topology *t);
/* The numeric form of an address into buf (INET6_ADDRSTRLEN bytes do), NULL
 * when there is none (len 0, another family). */
const char *topo_addr_str(const struct sockaddr_storage *ss, socklen_t sslen, char *buf,
                          size_t len);

/*
 * Targets of a route now: for ROUTE_WRITER the writer; for ROUTE_READER the
 * readers, or the writer standing in when none is live; for ROUTE_SPLIT the
 * writer and the readers. Fills idx[] (indexes into backends) up to max and
 * returns the count.
 */
size_t topo_route_targets(const struct topology *t, const struct topo_route *r, int *idx,
                          size_t max);

const struct topo_backend *topo_find(const struct topology *t, const char *name);

/* Snapshot lifetime. topo_current() returns a new reference (or NULL before
 * the first publish); every reference is dropped with topo_put(). */
const struct topology *topo_current(void);
const struct topology *topo_get(const struct topology *t);
void topo_put(const struct topology *t);

/* Subscribers are called, on the controller thread, with every newly published
 * snapshot (the reference is only borrowed for the call). */
typedef void (*topo_subscriber_fn)(const struct topology *t, void *arg);
int topo_subscribe(topo_subscriber_fn fn, void *arg);
/* Removes a subscription made with the same fn and arg. */
void topo_unsubscribe(topo_subscriber_fn fn, void *arg);

/* Controller side. topo_alloc() returns a zeroed snapshot with room for the
 * given counts (refs 1, writer -1). topo_publish() takes that reference: it
 * sets the generation, makes the snapshot current and calls the subscribers.
 * topo_reset() drops the current snapshot (daemon exit, tests). */
struct topology *topo_alloc(size_t nbackends, size_t nroutes);
void topo_publish(struct topology *t);
void topo_reset(void);

#endif
