/*
 * engine.c - the 6450 proxy engine: worker threads with one epoll loop and one
 * SO_REUSEPORT listener each, client sessions (handshake, native password
 * auth, commands), backend connections the proxy logs in to itself, and the
 * routing of every statement by the classifier's token.
 *
 * A session holds at most one writer and one reader connection, and only
 * while it needs them (multiplexing): a connection goes back to the worker's
 * pool after a statement unless the session's state lives on it (a
 * transaction, temporary tables, ...; may_release()), and the next statement
 * takes one from the pool. Session statements are recorded as raw command
 * packets and replayed, in order, on a connection that has not seen them
 * before it runs anything else, so a pooled connection becomes the session's
 * own. Prepared statements are the session's, not a connection's: each
 * backend connection caches the server-side statements prepared on it (for
 * its present schema and session state, shared by the sessions that take it
 * clean), an EXECUTE uses the cached one or prepares in the same batch, and
 * a text is closed on the worker's connections when its last client
 * statement goes (skey_put). Responses are streamed: each backend fragment
 * is passed to the client as it arrives, and the response tracker of proto.c
 * says when the answer ends.
 *
 * Everything of a session lives on one worker thread; the only shared state is
 * the read-only user table, the connection counters (atomics, per backend: the
 * pool_max_per_backend cap is reserved in be_active), the workers' wake
 * eventfds and the topology snapshots. A session that finds its backend at the
 * cap waits in its worker's FIFO (wait_enqueue) until a connection of that
 * backend is parked or closed, or the bound runs out.
 */
#define _GNU_SOURCE
#include "proxy/proxy.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <openssl/sha.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

#include "classify/classify.h"
#include "common/testenv.h"
#include "common/log.h"
#include "common/topology.h"
#include "proxy/routines.h"
#include "proxy/proto.h"

#define SERVER_VERSION  "5.5.5-10.11.6-MariaDB-mysteer"
#define CHARSET_UTF8MB4 45
#define READ_CHUNK      65536
#define OUT_HIGH_WATER  (4u << 20) /* stop reading a backend past this */
/* stop reading a client past this much pipelined input while its command
 * runs: TCP holds the rest, as it would in front of a server */
#define IN_HIGH_WATER (4u << 20)
/* a session gets back the connection it parked this recently (pool_take) */
#define AFFINITY_MS   5
#define MAX_RETRIES   2
#define SWEEP_MS      250
#define PROXY_MAX_IDS TOPO_MAX_IDS
/* Prepared statements: per backend connection (server side, a pooled
 * connection must not eat the server's global max_prepared_stmt_count,
 * 16382 by default) and per client session (the proxy's memory). */
#define PS_PER_CONN    256
#define PS_PER_SESSION 1024
#define PS_KEY_BUCKETS 256
/* How long a session waits for a backend connection when the backend is at
 * pool_max_per_backend (then ERR 1040 to that statement). */
#define POOL_WAIT_MS 10000
/* The largest packet read before login: a handshake response (user, auth
 * data, schema, plugin, connection attributes) is a few hundred bytes, and
 * clients cap their connection attributes at 64 KB. */
#define PREAUTH_MAX_PACKET (1u << 20)

enum ev_type { EV_LISTEN = 1, EV_CLIENT, EV_BACKEND, EV_WAKE };

struct buf {
	uint8_t *d;
	size_t off, len, cap; /* data is d[off, len) */
};

struct hist {
	uint8_t *p; /* a command payload: command byte + arguments */
	size_t n;
};

/*
 * A statement text of one user, shared by the worker's sessions: the key of
 * the server-side statements its backend connections cache (struct bstmt).
 * refs counts the client statements of the worker's sessions that use it;
 * when it drops to 0 every connection of the worker that caches it closes
 * it (skey_put). ncached counts those connections.
 */
struct skey {
	uint64_t hash;
	uint32_t refs;
	uint32_t ncached;
	struct skey *next; /* in the worker's bucket */
	char user[128];
	size_t len;
	uint8_t sql[]; /* len bytes */
};

/*
 * A server-side statement cached on a backend connection. A connection's
 * cache only holds statements prepared under its present schema and session
 * state: whatever may change how the server parses (a session statement run
 * or replayed there, another schema, a reset) empties it first, so the text
 * (and user) is the whole key within one connection.
 */
struct bstmt {
	struct skey *k;
	uint32_t xid;  /* the server's statement id on that connection */
	uint64_t used; /* the worker's ps_tick at its last PREPARE or EXECUTE there */
	/* the parameter types last bound to it there (the server keeps them for
	 * an EXECUTE that sends none), NULL before its first EXECUTE */
	uint8_t *types;
	size_t ntypes;
};

/*
 * A client's prepared statement. The client sees our id; the backend
 * connections hold server-side statements of its key in their caches,
 * shared with the other sessions of the worker, and an EXECUTE uses the one
 * of the connection it got, or prepares one there in the same batch. The
 * statement is tied to no connection, so it keeps none from the pool.
 */
struct pstmt {
	uint32_t id;
	struct skey *key; /* the SQL, and the worker's count of its users */
	enum cls_token tok;
	uint32_t flags;
	uint16_t nparams;
	uint8_t *types;      /* 2 * nparams bytes from the last EXECUTE that bound them */
	struct buf longdata; /* SEND_LONG_DATA payloads, each led by its 4-byte length */
	bool longdata_over;  /* the session's passed max_packet_size: the next EXECUTE fails */
	struct pstmt *next;
};

enum cstate { C_HANDSHAKE, C_SWITCH, C_IDLE, C_BUSY };
enum bstate { B_CONNECTING, B_HANDSHAKE, B_AUTH, B_READY };

struct worker;
struct bconn;

struct client {
	enum ev_type type; /* first: epoll data points here */
	/* a ghost: no socket, only the login of a user with a plain password,
	 * for warm pool connections (pool_min_idle); warming[id] counts the
	 * connections logging in */
	bool ghost;
	int *warming;
	struct worker *w;
	int fd;
	enum cstate st;
	struct client *prev, *next;
	uint64_t deadline_ms;
	struct buf in, out;
	uint8_t scramble[SCRAMBLE_LEN], stage1[SHA1_LEN];
	char user[128], host[INET6_ADDRSTRLEN];
	char db0[256]; /* the schema named at connect: backends log in with it */
	char db[256];  /* the current schema, for the classifier */
	uint32_t caps;
	uint8_t charset;
	/* session */
	struct hist *hist;
	size_t nhist, hist_cap;
	bool in_trans, ro_trans, autocommit_off, pin_writer;
	uint64_t ryw_until_ms;
	struct bconn *wconn, *rconn, *last, *cur;
	/* the command in flight, kept whole until its answer starts, for a retry */
	struct buf cmd;
	enum resp_kind cur_kind;
	bool cur_write, fwd_started;
	bool cur_classified;    /* the command in flight is a statement: */
	enum cls_token cur_tok; /* its class */
	uint32_t cur_flags;     /* and CLS_F_* flags */
	enum cls_reason cur_reason;
	int retries;
	uint32_t exclude_id;
	bool has_exclude;
	enum { R_WRITER, R_READER, R_LAST, R_TRX } route; /* of the command in flight */
	bool cur_hist;          /* the command in flight is the last history entry */
	bool in_process;        /* client_process() is running: no nesting */
	struct bconn *trx_conn; /* the reader of a READ ONLY transaction */
	/* the reader the session's reads go to while it stays usable: one
	 * replica per session, chosen by weight (pick_reader) */
	uint32_t sticky_reader;
	bool has_sticky_reader;
	/* the previous statement's connection went back to the pool clean: it
	 * is that pooled connection while its takes count is still this one
	 * (reclaim_last: FOUND_ROWS() after a plain read) */
	bool has_parked_last;
	uint64_t parked_takes;
	struct pstmt *stmts, *cur_ps;
	char last_gtid[64]; /* of the session's last write, from the writer's OK */
	uint32_t next_stmt_id;
	uint32_t nstmts;    /* statements in stmts: capped by ps_per_session */
	size_t ld_bytes;    /* long data held for all its statements */
	struct buf scratch; /* the rewritten EXECUTE */
	uint32_t events;    /* epoll interest now */
	bool closing;
	bool dead; /* freed at the end of the event batch */
	struct client *next_dead;
	/* waiting for a connection of a backend at its cap (the worker's FIFO) */
	bool waiting;
	bool must_wait; /* set by conn_get: route_cmd queues the command */
	uint32_t want_id, wait_id;
	char want_name[TOPO_NAME_MAX], wait_name[TOPO_NAME_MAX];
	uint64_t wait_start, wait_deadline;
	struct client *wait_prev, *wait_next;
};

struct bconn {
	enum ev_type type;
	struct worker *w;
	int fd;
	enum bstate st;
	struct client *c;
	uint32_t backend_id;
	char name[TOPO_NAME_MAX];
	bool writer;
	struct buf in, out;
	struct buf lout; /* login packets: go before out, which waits for B_READY */
	size_t hist_applied;
	/* server-side statements (struct bstmt): at most ps_per_conn, the least
	 * recently used closed first; shared by the sessions that take the
	 * connection while it is clean (a dirty one is reset, which empties it,
	 * before another session gets it) */
	struct bstmt *bst;
	uint32_t nbst, bst_cap;
	struct skey *prep_key;   /* the last internal command is a PREPARE of this */
	char schema[256];        /* while clean: its schema (login or pool_take's COM_INIT_DB) */
	bool tracking_gtid;      /* last_gtid added to session_track_system_variables */
	bool tracking_state;     /* session_track_state_change = ON (the proxy's) */
	bool state_changed;      /* the client's command in flight reported a state change */
	bool state_tracked;      /* and was sent with tracking_state on */
	bool gtid_wait, gtid_ok; /* a MASTER_GTID_WAIT holds the client's command back */
	bool trans_open;         /* its last answer said: in a transaction or autocommit off */
	bool keep;               /* holds session state the history cannot rebuild (keeps_state) */
	bool dirty;              /* ran more than clean reads since its login or last reset */
	char waited_gtid[64];    /* this replica is known to have applied it */
	/* in the worker's pool (c == NULL): whose it may become */
	bool pooled, resetting;
	const struct client *last_owner; /* compared, never followed: pool_take */
	uint64_t parked_ms;              /* now_ms() when last_owner parked it */
	uint64_t takes;                  /* times taken from the pool */
	struct bconn *pool_next;
	struct bconn *warm_next; /* in the worker's list of warm logins */
	uint64_t idle_since;
	char pool_user[128];
	uint32_t pool_caps;
	uint8_t pool_charset;
	bool pool_has_db;
	int internal;  /* replayed commands whose answers are discarded */
	bool awaiting; /* the client's command is sent, its answer not finished */
	struct resp_tracker rt;
	uint32_t frag_left; /* payload bytes of the current fragment to pass on */
	bool frag_drop;
	uint32_t caps;
	uint32_t events;
	bool dead;
	struct bconn *next_dead;
};

struct user_entry {
	char name[TOPO_NAME_MAX];
	uint8_t stage2[SHA1_LEN];
	uint8_t stage1[SHA1_LEN];
	bool has_password; /* stage1 known: its pools are kept warm */
	bool has_hash;
};

struct proxy_engine {
	struct worker *workers;
	int nworkers;
	struct user_entry *users;
	size_t nusers;
	int max_clients, handshake_timeout_ms;
	uint32_t max_packet;
	uint32_t ps_per_conn, ps_per_session; /* prepared statement caps (testenv.h) */
	_Atomic int ryw_mode, ryw_ms;
	_Atomic int pool_max, pool_idle_ms, pool_min_idle;
	_Atomic int nclients;
	_Atomic int nbconns;
	/* per backend id (ids above PROXY_MAX_IDS are not counted) */
	_Atomic uint64_t be_active[PROXY_MAX_IDS], be_opened[PROXY_MAX_IDS],
	    be_failed[PROXY_MAX_IDS];
	/* pool figures: idle now, warm connections still logging in, new
	 * connections, sessions served from the pool. be_active counts every
	 * open connection; what serves a client is be_active - idle - warming. */
	_Atomic int be_idle[PROXY_MAX_IDS], be_warming[PROXY_MAX_IDS];
	_Atomic uint64_t be_connects[PROXY_MAX_IDS], be_reused[PROXY_MAX_IDS];
	/* parked with a COM_RESET_CONNECTION, or without one (clean) */
	_Atomic uint64_t be_resets[PROXY_MAX_IDS], be_clean[PROXY_MAX_IDS];
	/* sessions waiting now for a connection (the backend at its cap, which
	 * be_active counts against), sessions that had to wait, waits that
	 * ran out */
	_Atomic int be_waiting[PROXY_MAX_IDS];
	_Atomic int waiting_total; /* be_waiting summed: 0 keeps pool_yield off */
	_Atomic uint64_t be_waits[PROXY_MAX_IDS], be_wait_timeouts[PROXY_MAX_IDS];
	uint32_t wait_ms; /* POOL_WAIT_MS (MYSTEER_TEST_POOL_WAIT_MS) */
	_Atomic uint32_t next_conn_id;
	_Atomic bool trust_routines;
	struct proxy_routines *routines;
};

struct worker {
	struct proxy_engine *e;
	pthread_t th;
	bool started;
	int ep, lfd, wakefd;
	enum ev_type ltype, wtype;
	struct client *clients;
	struct client *dead_clients;
	struct bconn *dead_bconns;
	volatile bool stop;
	unsigned rnd;
	struct rnd_pool scrambles;
	struct skey *keys[PS_KEY_BUCKETS]; /* prepared statement texts in use */
	uint64_t ps_tick;                  /* LRU clock of the cached statements */
	struct bconn *pool;                /* idle backend connections, reset, of any user */
	uint64_t last_sweep;
	struct client *ghosts; /* one per user with a plain password */
	struct bconn *warming; /* warm connections still logging in */
	size_t nghosts;
	struct rt_snap *rt; /* this worker's reference to the routine table */
	uint64_t rt_gen;
	/* sessions waiting for a connection, first come first served */
	struct client *wait_head, *wait_tail;
	int wait_n[PROXY_MAX_IDS]; /* of them, per backend id */
	int nwaiting;              /* of them, in all */
	bool kick;                 /* a slot or a pooled connection came free: serve them */
};

/* ---- buffers ---- */

static int buf_reserve(struct buf *b, size_t more)
{
	size_t need, cap;
	uint8_t *d;

	if (b->cap - b->len >= more)
		return 0;
	if (b->off > 0) {
		memmove(b->d, b->d + b->off, b->len - b->off);
		b->len -= b->off;
		b->off = 0;
		if (b->cap - b->len >= more)
			return 0;
	}
	need = b->len + more;
	cap = b->cap ? b->cap : 4096;
	while (cap < need)
		cap *= 2;
	d = realloc(b->d, cap);
	if (!d)
		return -1;
	b->d = d;
	b->cap = cap;
	return 0;
}

static size_t buf_used(const struct buf *b)
{
	return b->len - b->off;
}

static void buf_consume(struct buf *b, size_t n)
{
	b->off += n;
	if (b->off == b->len)
		b->off = b->len = 0;
}

/* Idle connections keep no large buffers (32 KB per idle client). */
static void buf_trim(struct buf *b)
{
	if (buf_used(b) == 0 && b->cap > 16384) {
		free(b->d);
		memset(b, 0, sizeof(*b));
	}
}

static void buf_free(struct buf *b)
{
	free(b->d);
	memset(b, 0, sizeof(*b));
}

static int buf_append(struct buf *b, const void *p, size_t n)
{
	if (buf_reserve(b, n) < 0)
		return -1;
	memcpy(b->d + b->len, p, n);
	b->len += n;
	return 0;
}

/* Appends payload as packets starting at seq, split at 16 MB; returns the
 * next sequence id, or -1. */
static int buf_put_packet(struct buf *b, uint8_t seq, const uint8_t *p, size_t n)
{
	for (;;) {
		uint32_t f = n >= PKT_MAX_FRAG ? PKT_MAX_FRAG : (uint32_t)n;
		if (buf_reserve(b, PKT_HDR + f) < 0)
			return -1;
		pkt_put_hdr(b->d + b->len, f, seq++);
		memcpy(b->d + b->len + PKT_HDR, p, f);
		b->len += PKT_HDR + f;
		p += f;
		n -= f;
		if (f < PKT_MAX_FRAG)
			return seq;
	}
}

/* ---- small helpers ---- */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int ep_add(struct worker *w, int fd, uint32_t events, void *ptr)
{
	struct epoll_event ev = {.events = events, .data.ptr = ptr};

	return epoll_ctl(w->ep, EPOLL_CTL_ADD, fd, &ev);
}

static void ep_mod(struct worker *w, int fd, uint32_t *cur, uint32_t events, void *ptr)
{
	struct epoll_event ev = {.events = events, .data.ptr = ptr};

	if (*cur == events)
		return;
	*cur = events;
	if (epoll_ctl(w->ep, EPOLL_CTL_MOD, fd, &ev) < 0)
		log_debug("proxy: epoll_ctl mod: %s", strerror(errno));
}

static const struct user_entry *find_user(const struct proxy_engine *e, const char *name)
{
	for (size_t i = 0; i < e->nusers; i++)
		if (!strcmp(e->users[i].name, name))
			return &e->users[i];
	return NULL;
}

/* ---- prepared statements ---- */

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = v & 0xff;
	p[1] = (v >> 8) & 0xff;
	p[2] = (v >> 16) & 0xff;
	p[3] = (v >> 24) & 0xff;
}

static struct pstmt *ps_find(struct client *c, uint32_t id)
{
	for (struct pstmt *ps = c->stmts; ps; ps = ps->next)
		if (ps->id == id)
			return ps;
	return NULL;
}

static void bconn_update(struct bconn *b);

static uint64_t fnv1a(const void *p, size_t n, uint64_t h)
{
	const uint8_t *q = p;

	for (size_t i = 0; i < n; i++) {
		h ^= q[i];
		h *= 1099511628211ull;
	}
	return h;
}

/* The worker's key of this user's statement text, counted once more. */
static struct skey *skey_get(struct worker *w, const char *user, const uint8_t *sql, size_t len)
{
	uint64_t h = fnv1a(sql, len, fnv1a(user, strlen(user) + 1, 14695981039346656037ull));
	struct skey **head = &w->keys[h % PS_KEY_BUCKETS], *k;

	for (k = *head; k; k = k->next)
		if (k->hash == h && k->len == len && !strcmp(k->user, user) &&
		    !memcmp(k->sql, sql, len)) {
			k->refs++;
			return k;
		}
	k = calloc(1, sizeof(*k) + (len ? len : 1));
	if (!k)
		return NULL;
	k->hash = h;
	k->refs = 1;
	k->len = len;
	snprintf(k->user, sizeof(k->user), "%s", user);
	memcpy(k->sql, sql, len);
	k->next = *head;
	*head = k;
	return k;
}

/* The cached statement of key k on b, or NULL. */
static struct bstmt *bc_find(struct bconn *b, const struct skey *k)
{
	for (uint32_t i = 0; i < b->nbst; i++)
		if (b->bst[i].k == k)
			return &b->bst[i];
	return NULL;
}

/*
 * Forgets b's cached statement i, and closes it on the server unless the
 * server already dropped it (a reset, a closed connection). COM_STMT_CLOSE
 * has no answer: it may follow whatever b->out holds (a command in flight of
 * another session included), and b->internal is not counted up for it.
 */
static void bc_del(struct bconn *b, uint32_t i, bool send_close)
{
	uint8_t pkt[5] = {COM_STMT_CLOSE};

	if (send_close && !b->dead && b->st == B_READY) {
		put_le32(pkt + 1, b->bst[i].xid);
		if (buf_put_packet(&b->out, 0, pkt, sizeof(pkt)) < 0)
			log_warn("proxy: out of memory closing a statement on %s", b->name);
	}
	b->bst[i].k->ncached--;
	free(b->bst[i].types);
	b->bst[i] = b->bst[--b->nbst];
}

/* Empties b's cache: its schema or session state changes (send_close: the
 * statements are closed on the server), or the server dropped them. */
static void bc_clear(struct bconn *b, bool send_close)
{
	while (b->nbst > 0)
		bc_del(b, b->nbst - 1, send_close);
	if (!send_close || b->bst_cap > 32) {
		free(b->bst);
		b->bst = NULL;
		b->bst_cap = 0;
	}
}

/* A PREPARE of k answered on b with this id: cached (an older one of the
 * same key, when the client prepared the text again, is closed). */
static int bc_add(struct bconn *b, struct skey *k, uint32_t xid)
{
	struct bstmt *e = bc_find(b, k);

	if (!e) {
		if (b->nbst == b->bst_cap) {
			uint32_t cap = b->bst_cap ? b->bst_cap * 2 : 8;
			struct bstmt *n = realloc(b->bst, cap * sizeof(*n));
			if (!n)
				return -1;
			b->bst = n;
			b->bst_cap = cap;
		}
		e = &b->bst[b->nbst++];
		e->k = k;
		e->types = NULL;
		e->ntypes = 0;
		k->ncached++;
	} else {
		bc_del(b, (uint32_t)(e - b->bst), true);
		return bc_add(b, k, xid);
	}
	e->xid = xid;
	e->used = ++b->w->ps_tick;
	return 0;
}

/*
 * Before a PREPARE on b: a pooled connection lives long and serves many
 * sessions, so it holds at most ps_per_conn statements (the server's
 * max_prepared_stmt_count is global). Beyond that the least recently used
 * one is closed there and forgotten: its next EXECUTE on b prepares it
 * again, lazily, like on any other connection.
 */
static void bc_make_room(struct bconn *b)
{
	while (b->nbst > 0 && b->nbst >= b->w->e->ps_per_conn) {
		uint32_t lru = 0;
		for (uint32_t i = 1; i < b->nbst; i++)
			if (b->bst[i].used < b->bst[lru].used)
				lru = i;
		bc_del(b, lru, true);
	}
}

static void bc_drop_key(struct bconn *b, struct skey *k)
{
	struct bstmt *e = b ? bc_find(b, k) : NULL;

	if (!e)
		return;
	bc_del(b, (uint32_t)(e - b->bst), true);
	bconn_update(b); /* the event loop writes the close */
}

/*
 * One client statement of key k less in the worker. At 0 no session of the
 * worker uses the text: every connection of the worker that caches it,
 * idle in the pool or held by a session (busy or not), closes it, and the
 * key goes.
 */
static void skey_put(struct worker *w, struct skey *k)
{
	struct skey **pp;

	if (--k->refs > 0)
		return;
	for (struct bconn *b = w->pool; b && k->ncached; b = b->pool_next)
		bc_drop_key(b, k);
	for (struct client *c = w->clients; c && k->ncached; c = c->next) {
		bc_drop_key(c->wconn, k);
		bc_drop_key(c->rconn, k);
	}
	if (k->ncached)
		log_warn("proxy: %u connections still cache a closed statement", k->ncached);
	for (pp = &w->keys[k->hash % PS_KEY_BUCKETS]; *pp; pp = &(*pp)->next)
		if (*pp == k) {
			*pp = k->next;
			break;
		}
	free(k);
}

/* Drops the statement's long data and its memory, and counts it off. */
static void ps_drop_longdata(struct client *c, struct pstmt *ps)
{
	c->ld_bytes -= buf_used(&ps->longdata);
	buf_consume(&ps->longdata, buf_used(&ps->longdata));
	buf_trim(&ps->longdata);
}

static void ps_free(struct client *c, struct pstmt *ps)
{
	for (struct pstmt **pp = &c->stmts; *pp; pp = &(*pp)->next) {
		if (*pp == ps) {
			*pp = ps->next;
			break;
		}
	}
	if (c->cur_ps == ps)
		c->cur_ps = NULL;
	c->nstmts--;
	ps_drop_longdata(c, ps);
	skey_put(c->w, ps->key);
	free(ps->types);
	buf_free(&ps->longdata);
	free(ps);
}

static struct pstmt *ps_new(struct client *c, const uint8_t *sql, size_t len)
{
	struct pstmt *ps = calloc(1, sizeof(*ps));

	if (!ps || !(ps->key = skey_get(c->w, c->user, sql, len))) {
		free(ps);
		return NULL;
	}
	ps->id = ++c->next_stmt_id;
	ps->next = c->stmts;
	c->stmts = ps;
	c->nstmts++;
	return ps;
}

/* ---- the per-backend cap (pool_max_per_backend) ---- */

/*
 * Reserves one of the backend's pool_max_per_backend slots before a new
 * connection is opened: be_active counts every open connection of the proxy
 * to it (connecting, logging in, warm, idle, busy) over all workers, and is
 * given back when the connection is freed. false: the backend is at its cap.
 * Ids beyond PROXY_MAX_IDS are not counted, hence not capped.
 */
static bool slot_take(struct proxy_engine *e, uint32_t id)
{
	uint64_t max = (uint64_t)atomic_load(&e->pool_max), cur;

	if (id >= PROXY_MAX_IDS)
		return true;
	cur = atomic_load(&e->be_active[id]);
	do {
		if (cur >= max)
			return false;
	} while (!atomic_compare_exchange_weak(&e->be_active[id], &cur, cur + 1));
	return true;
}

/* Wakes the other workers (their eventfd): a slot came free that their
 * waiters may take, or this worker's waiters need their idle connections
 * (pool_yield). */
static void wake_others(struct worker *w)
{
	uint64_t one = 1;

	for (int i = 0; i < w->e->nworkers; i++) {
		struct worker *o = &w->e->workers[i];
		if (o == w || o->wakefd < 0)
			continue;
		if (write(o->wakefd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			log_debug("proxy: waking a worker: %s", strerror(errno));
	}
}

/* A connection of this backend was closed: its slot is free again. This
 * worker serves its waiters after the event batch (w->kick); other workers'
 * waiters are woken. */
static void slot_release(struct worker *w, uint32_t id)
{
	if (id >= PROXY_MAX_IDS)
		return;
	atomic_fetch_sub(&w->e->be_active[id], 1);
	w->kick = true;
	if (!w->stop && atomic_load(&w->e->be_waiting[id]) > w->wait_n[id])
		wake_others(w);
}

/* ---- object lifetime ---- */

static void warm_unlink(struct bconn *b)
{
	for (struct bconn **pp = &b->w->warming; *pp; pp = &(*pp)->warm_next)
		if (*pp == b) {
			*pp = b->warm_next;
			break;
		}
}

/* Objects are unlinked and closed at once but freed after the event batch, so
 * that a pointer held up the call stack can still be asked ->dead. */
static void bconn_free(struct bconn *b)
{
	struct client *c = b->c;

	if (b->dead)
		return;
	if (b->pooled) {
		if (b->backend_id < PROXY_MAX_IDS)
			atomic_fetch_sub(&b->w->e->be_idle[b->backend_id], 1);
		for (struct bconn **pp = &b->w->pool; *pp; pp = &(*pp)->pool_next)
			if (*pp == b) {
				*pp = b->pool_next;
				break;
			}
		b->pooled = false;
	}
	if (c && c->ghost) {
		warm_unlink(b);
		if (b->backend_id < PROXY_MAX_IDS) {
			c->warming[b->backend_id]--;
			atomic_fetch_sub(&b->w->e->be_warming[b->backend_id], 1);
		}
	}
	if (c && !c->ghost) {
		if (c->wconn == b)
			c->wconn = NULL;
		if (c->rconn == b)
			c->rconn = NULL;
		if (c->last == b)
			c->last = NULL;
		if (c->cur == b)
			c->cur = NULL;
		if (c->trx_conn == b)
			c->trx_conn = NULL;
	}
	if (b->fd >= 0)
		close(b->fd); /* also leaves the epoll set */
	b->fd = -1;
	bc_clear(b, false); /* the server drops them with the connection */
	b->dead = true;
	atomic_fetch_sub(&b->w->e->nbconns, 1);
	slot_release(b->w, b->backend_id);
	b->next_dead = b->w->dead_bconns;
	b->w->dead_bconns = b;
}

static void hist_clear(struct client *c)
{
	for (size_t i = 0; i < c->nhist; i++)
		free(c->hist[i].p);
	c->nhist = 0;
}

/* ---- pool ---- */

static void bconn_update(struct bconn *b);

static int bconn_flush(struct bconn *b);
static int bconn_read(struct bconn *b);

static int pool_count(struct worker *w, uint32_t backend_id)
{
	int n = 0;

	for (struct bconn *b = w->pool; b; b = b->pool_next)
		n += b->backend_id == backend_id;
	return n;
}

/*
 * A session hands back a connection that is between statements (when it
 * ends, or between statements: multiplexing): it is reset
 * (COM_RESET_CONNECTION: transaction, temporary tables, variables and
 * prepared statements go; the schema stays) and kept for the next session of
 * the same user, which then skips connect and login. A connection that ran
 * only clean reads since its login or its last reset (!dirty) is as a reset
 * would leave it, its schema being the session's login schema: it skips the
 * reset, and so its round trip. A PREPARE, and an EXECUTE of a read answered
 * cleanly, leave it clean: its cached statements (struct bstmt) survive the
 * park and serve the next sessions; a reset drops them.
 */
static bool pool_park(struct client *c, struct bconn *b)
{
	struct worker *w = c->w;
	static const uint8_t reset[1] = {COM_RESET_CONNECTION};
	int max = w->e->pool_max / (w->e->nworkers ? w->e->nworkers : 1);
	bool must_reset = b->dirty || b->trans_open || b->keep;
	uint32_t id = b->backend_id;

	/* Closed rather than kept idle: not reusable as it is, the pool full,
	 * over a pool_max_per_backend lowered by a reload, or sessions of
	 * other workers wait for a slot of this backend (pools are per
	 * worker: an idle connection here would not serve them). */
	if (b->st != B_READY || b->awaiting || b->internal || b->gtid_wait || b->frag_left ||
	    buf_used(&b->in) || max < 1 || pool_count(w, id) >= max ||
	    (id < PROXY_MAX_IDS &&
	     (atomic_load(&w->e->be_active[id]) > (uint64_t)atomic_load(&w->e->pool_max) ||
	      atomic_load(&w->e->be_waiting[id]) > w->wait_n[id]))) {
		bconn_free(b);
		return false;
	}
	if (c->wconn == b)
		c->wconn = NULL;
	if (c->rconn == b)
		c->rconn = NULL;
	b->c = NULL;
	if (must_reset && buf_put_packet(&b->out, 0, reset, sizeof(reset)) < 0) {
		bconn_free(b);
		return false;
	}
	snprintf(b->pool_user, sizeof(b->pool_user), "%s", c->user);
	b->pool_caps = c->caps;
	b->pool_charset = c->charset;
	b->hist_applied = 0; /* a clean connection never had the history replayed */
	if (must_reset) {
		b->pool_has_db = c->db[0] != 0;
		snprintf(b->schema, sizeof(b->schema), "%s", c->db);
		bc_clear(b, false); /* the reset closes its prepared statements */
		b->tracking_gtid = false;
		b->tracking_state = false;
		b->waited_gtid[0] = 0;
		b->prep_key = NULL;
		b->trans_open = false; /* the reset rolls back and restores autocommit */
		b->keep = false;
		b->dirty = false;
		b->resetting = true;
	} else {
		/* the login schema, or the COM_INIT_DB to it that pool_take sent;
		 * last_gtid tracking, the proxy's own, stays on */
		b->pool_has_db = c->db0[0] != 0;
		b->idle_since = now_ms();
	}
	b->pooled = true;
	b->last_owner = c;
	b->parked_ms = now_ms();
	b->pool_next = w->pool;
	w->pool = b;
	w->kick = true; /* a waiter of this worker may take it */
	if (b->backend_id < PROXY_MAX_IDS) {
		atomic_fetch_add(&w->e->be_idle[b->backend_id], 1);
		atomic_fetch_add(must_reset ? &w->e->be_resets[b->backend_id]
		                            : &w->e->be_clean[b->backend_id],
		                 1);
	}
	if (bconn_flush(b) < 0) {
		bconn_free(b);
		return false;
	}
	return !must_reset;
}

/* The reset's answer, or anything a pooled connection says (the server closing
 * it, most likely): only one OK is expected. */
static void pool_event(struct bconn *b, uint32_t events)
{
	size_t total, payload;
	uint8_t seq;
	int r;

	if ((events & EPOLLOUT) && bconn_flush(b) < 0) {
		bconn_free(b);
		return;
	}
	if (!(events & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP)))
		return;
	r = bconn_read(b);
	while (!b->dead && buf_used(&b->in) > 0) {
		int w = pkt_whole(b->in.d + b->in.off, buf_used(&b->in), 1 << 16, &total, &payload,
		                  &seq);
		if (w == 0)
			break;
		if (w < 0 || !b->resetting || b->in.d[b->in.off + PKT_HDR] != 0x00) {
			bconn_free(b);
			return;
		}
		buf_consume(&b->in, total);
		b->resetting = false;
		b->idle_since = now_ms();
		b->w->kick = true; /* takeable now */
	}
	if (!b->dead && r < 0)
		bconn_free(b);
}

/* A reset connection of this backend for this client, if one is idle. */
/* Takes *pp out of the worker's pool for c. */
static struct bconn *pool_unlink(struct client *c, struct bconn **pp)
{
	struct bconn *b = *pp;
	struct worker *w = c->w;

	*pp = b->pool_next;
	b->pooled = false;
	b->takes++;
	if (b->backend_id < PROXY_MAX_IDS) {
		atomic_fetch_sub(&w->e->be_idle[b->backend_id], 1);
		atomic_fetch_add(&w->e->be_reused[b->backend_id], 1);
	}
	b->c = c;
	return b;
}

/*
 * The previous statement's connection, back from the pool when nobody took
 * it since the session parked it clean (no reset: its server-side state is
 * the previous statement's), for a statement that reads that state
 * (FOUND_ROWS() after a plain read). false when it is gone or taken.
 */
static bool reclaim_last(struct client *c)
{
	if (!c->has_parked_last)
		return false;
	c->has_parked_last = false;
	for (struct bconn **pp = &c->w->pool; *pp; pp = &(*pp)->pool_next) {
		struct bconn *b = *pp;
		if (b->last_owner != c || b->takes != c->parked_takes || b->resetting)
			continue;
		if (b->writer ? c->wconn != NULL : c->rconn != NULL)
			return false;
		pool_unlink(c, pp);
		if (b->writer)
			c->wconn = b;
		else
			c->rconn = b;
		c->last = b;
		return true;
	}
	return false;
}

static struct bconn *pool_take(struct client *c, const struct topo_backend *be, bool writer)
{
	struct worker *w = c->w;
	static const uint8_t init_db = COM_INIT_DB;

	struct bconn **found = NULL;
	uint64_t now = now_ms();

	/* The connection this session gave back moments ago, when it is idle
	 * still: a session that keeps sending keeps one connection (and the
	 * server one thread), as without multiplexing. Else the one parked
	 * last, so that connections a quiet load does not need idle out. */
	for (struct bconn **pp = &w->pool; *pp; pp = &(*pp)->pool_next) {
		struct bconn *b = *pp;
		if (b->backend_id != be->id || b->resetting || b->pool_caps != c->caps ||
		    b->pool_charset != c->charset || strcmp(b->pool_user, c->user) ||
		    (b->pool_has_db && !c->db0[0]))
			continue;
		if (!found)
			found = pp;
		if (b->last_owner == c && now - b->parked_ms <= AFFINITY_MS) {
			found = pp;
			break;
		}
	}
	if (found) {
		struct bconn *b = pool_unlink(c, found);
		b->writer = writer;
		/* the schema survives a reset: set the one this client asked for,
		 * unless the connection is in it already (b->schema: its login's,
		 * the last COM_INIT_DB's, or the session's at a reset park; a
		 * clean one ran nothing that could change it) */
		if (c->db0[0] && strcmp(b->schema, c->db0) != 0) {
			uint8_t pkt[260];
			size_t n = strlen(c->db0);
			/* cached statements were parsed in another schema */
			bc_clear(b, true);
			snprintf(b->schema, sizeof(b->schema), "%s", c->db0);
			pkt[0] = init_db;
			memcpy(pkt + 1, c->db0, n);
			if (buf_put_packet(&b->out, 0, pkt, n + 1) < 0) {
				bconn_free(b);
				return NULL;
			}
			b->internal++;
		}
		atomic_fetch_add(&w->e->be_opened[be->id < PROXY_MAX_IDS ? be->id : 0],
		                 be->id < PROXY_MAX_IDS);
		return b;
	}
	return NULL;
}

/* This worker's share of pool_min_idle: the minimum is per (backend, user)
 * over all workers. */
static int min_idle_share(struct worker *w)
{
	int min = atomic_load(&w->e->pool_min_idle), n = w->e->nworkers ? w->e->nworkers : 1;
	int i = (int)(w - w->e->workers);

	return min / n + (i < min % n);
}

static int pool_count_user(struct worker *w, uint32_t backend_id, const char *user)
{
	int n = 0;

	for (struct bconn *b = w->pool; b; b = b->pool_next)
		n += b->backend_id == backend_id && !strcmp(b->pool_user, user);
	return n;
}

static bool keeps_warm(struct worker *w, const char *user)
{
	for (size_t i = 0; i < w->nghosts; i++)
		if (!strcmp(w->ghosts[i].user, user))
			return true;
	return false;
}

static bool backend_present(const struct topology *t, uint32_t id)
{
	for (size_t i = 0; t && i < t->nbackends; i++)
		if (t->backends[i].id == id)
			return true;
	return false;
}

/* Closes pooled connections idle past pool_idle_timeout_ms (but the warm
 * ones pool_min_idle keeps) and those of backends that left the topology:
 * nobody will take them, and their backend's id is not given to a new
 * backend while they are open. */
static void pool_sweep(struct worker *w, uint64_t now)
{
	uint64_t idle = (uint64_t)w->e->pool_idle_ms;
	int min = min_idle_share(w);
	const struct topology *t = topo_current();

	for (struct bconn *b = w->pool, *next; b; b = next) {
		next = b->pool_next;
		if (t && !b->resetting && !backend_present(t, b->backend_id)) {
			bconn_free(b);
			continue;
		}
		if (b->resetting || now - b->idle_since <= idle)
			continue;
		if (min > 0 && keeps_warm(w, b->pool_user) &&
		    pool_count_user(w, b->backend_id, b->pool_user) <= min)
			continue;
		bconn_free(b);
	}
	topo_put(t);
}

/* A warm connection logged in: into the pool as a fresh one (nothing to
 * reset). */
static void warm_park(struct bconn *b)
{
	struct client *g = b->c;
	struct worker *w = b->w;

	if (b->backend_id < PROXY_MAX_IDS) {
		g->warming[b->backend_id]--;
		atomic_fetch_sub(&w->e->be_warming[b->backend_id], 1);
	}
	warm_unlink(b);
	b->c = NULL;
	snprintf(b->pool_user, sizeof(b->pool_user), "%s", g->user);
	b->pool_has_db = false;
	b->resetting = false;
	b->idle_since = now_ms();
	b->pooled = true;
	b->pool_next = w->pool;
	w->pool = b;
	w->kick = true;
	if (b->backend_id < PROXY_MAX_IDS)
		atomic_fetch_add(&w->e->be_idle[b->backend_id], 1);
	bconn_update(b);
}

/* The session no longer waits for a connection (served, failed, timed out
 * or gone). */
static void wait_dequeue(struct client *c)
{
	struct worker *w = c->w;

	if (!c->waiting)
		return;
	if (c->wait_prev)
		c->wait_prev->wait_next = c->wait_next;
	else
		w->wait_head = c->wait_next;
	if (c->wait_next)
		c->wait_next->wait_prev = c->wait_prev;
	else
		w->wait_tail = c->wait_prev;
	c->wait_prev = c->wait_next = NULL;
	w->wait_n[c->wait_id]--;
	w->nwaiting--;
	atomic_fetch_sub(&w->e->be_waiting[c->wait_id], 1);
	atomic_fetch_sub(&w->e->waiting_total, 1);
	c->waiting = false;
}

static void client_close(struct client *c)
{
	struct worker *w = c->w;

	if (c->dead)
		return;
	wait_dequeue(c);
	if (c->wconn)
		pool_park(c, c->wconn);
	if (c->rconn)
		pool_park(c, c->rconn);
	if (c->prev)
		c->prev->next = c->next;
	else
		w->clients = c->next;
	if (c->next)
		c->next->prev = c->prev;
	close(c->fd);
	c->fd = -1;
	c->dead = true;
	c->next_dead = w->dead_clients;
	w->dead_clients = c;
	atomic_fetch_sub(&w->e->nclients, 1);
}

/* ---- multiplexing ---- */

/* A read with any of these may change its connection's state (or, for
 * SQL_CALC_FOUND_ROWS, leaves the FOUND_ROWS() answer that may be asked next). */
#define STATEFUL_FLAGS                                                                             \
	(CLS_F_MULTI | CLS_F_TEMP_TABLE | CLS_F_USER_VAR_WRITE | CLS_F_NAMED_LOCK |                \
	 CLS_F_ROUTINE | CLS_F_SET_TRANSACTION | CLS_F_UNREPLAYABLE | CLS_F_AUTOCOMMIT_OFF |       \
	 CLS_F_AUTOCOMMIT_ON | CLS_F_USE | CLS_F_CALC_FOUND_ROWS)

/*
 * Whether the session may hand this connection back to the pool between
 * statements. Not while the connection holds what the session history cannot
 * rebuild elsewhere: a transaction or autocommit off (as the connection itself
 * last reported, so a reader counts too), a READ ONLY transaction, and on the
 * writer: temporary tables, named locks, variables assigned by query or an
 * unreplayable SET (pin_writer), and the LAST_INSERT_ID() of an insert.
 * Prepared statements keep nothing: the next connection has the statement
 * in its cache or prepares it with the EXECUTE (queue_ps_prereqs).
 */
static bool may_release(const struct client *c, const struct bconn *b)
{
	if (b->keep || b->trans_open || c->trx_conn == b || c->ro_trans)
		return false;
	return b != c->wconn || !(c->in_trans || c->autocommit_off || c->pin_writer);
}

/*
 * Whether the statement just answered on b may have left state there that
 * the history cannot rebuild and that no flag of the session tracks: the
 * LAST_INSERT_ID() of an insert (read any time later, not only next), a
 * procedure or a function the classifier does not know (temporary tables,
 * variables, locks inside), LOCK TABLES, HANDLER, XA and other admin
 * statements, SET TRANSACTION (for the next transaction on this connection),
 * and statements the classifier did not understand. Such a connection stays
 * with the session. Even after an error: a routine may fail half way.
 */
static bool keeps_state(const struct client *c, const struct bconn *b)
{
	if (b->writer && !b->rt.saw_err && b->rt.last_ok.insert_id)
		return true;
	if (!c->cur_classified)
		return false;
	if (c->cur_flags & (CLS_F_ROUTINE | CLS_F_SET_TRANSACTION))
		return true;
	return c->cur_reason == CLS_R_ADMIN || c->cur_reason == CLS_R_CALL ||
	       c->cur_reason == CLS_R_UNKNOWN_FUNCTION || c->cur_reason == CLS_R_NOT_UNDERSTOOD;
}

/*
 * Whether the statement just answered on the writer left session state there
 * that the history cannot rebuild and the classifier could not see: the
 * server's session tracking reported a state change (user variables,
 * temporary tables, session variables set inside a routine) for a statement
 * that is not one the history replays. Without session tracking on the
 * connection, and after a routine that failed part way, a routine call
 * counts as such a change. The session then stays on the writer, like after
 * CREATE TEMPORARY TABLE. Named locks taken inside a routine are not
 * reported by the server and are not seen.
 */
static bool state_pins(const struct client *c, const struct bconn *b)
{
	bool routine;

	if (!b->writer || !c->cur_classified || c->cur_hist || c->cur_tok == CLS_SESSION)
		return false;
	if (b->state_changed)
		return true;
	routine = c->cur_reason == CLS_R_CALL || c->cur_reason == CLS_R_UNKNOWN_FUNCTION;
	return routine && (!b->state_tracked || b->rt.saw_err);
}

/* Between statements: back to the pool (reset there, so it is clean for the
 * next session), unless the session's state forbids it. */
static void mux_release(struct client *c, struct bconn *b)
{
	bool was_last = c->last == b;
	uint64_t takes = b->takes;

	if (!may_release(c, b))
		return;
	if (was_last)
		c->last = NULL;
	if (pool_park(c, b) && was_last) {
		c->has_parked_last = true;
		c->parked_takes = takes;
	}
}

/*
 * A statement arrived. What the session kept after the previous one (a write
 * or a SET, whose ROW_COUNT() or warnings this one might have asked for) goes
 * back to the pool, unless this statement reads that state (or runs on the
 * connection used last) or will run on it anyway.
 */
static void mux_next(struct client *c)
{
	if (c->route == R_LAST || (c->cur_flags & CLS_F_PREV_STATE))
		return;
	if (c->wconn && c->route != R_WRITER)
		mux_release(c, c->wconn);
	if (c->rconn && c->route != R_READER)
		mux_release(c, c->rconn);
}

/* An answer ended. A read that left neither an error nor warnings leaves
 * nothing a later statement could ask this connection for: it goes back at
 * once, so an idle session holds no backend connection. Anything else waits
 * for the next statement (mux_next). */
static void mux_answered(struct client *c, struct bconn *b, bool clean)
{
	if (clean && !b->dead && b->c == c)
		mux_release(c, b);
}

static void reap(struct worker *w)
{
	while (w->dead_bconns) {
		struct bconn *b = w->dead_bconns;
		w->dead_bconns = b->next_dead;
		buf_free(&b->in);
		buf_free(&b->out);
		buf_free(&b->lout);
		free(b->bst);
		free(b);
	}
	while (w->dead_clients) {
		struct client *c = w->dead_clients;
		w->dead_clients = c->next_dead;
		hist_clear(c);
		free(c->hist);
		while (c->stmts)
			ps_free(c, c->stmts);
		buf_free(&c->scratch);
		buf_free(&c->in);
		buf_free(&c->out);
		buf_free(&c->cmd);
		free(c);
	}
}

/* ---- output ---- */

/* Whether to read from the client now: not while a command runs and the
 * commands it pipelined behind it already fill IN_HIGH_WATER. */
static bool client_reads(const struct client *c)
{
	return c->st != C_BUSY || buf_used(&c->in) < IN_HIGH_WATER;
}

static void client_update(struct client *c)
{
	uint32_t ev =
	    (client_reads(c) ? EPOLLIN | EPOLLRDHUP : 0) | (buf_used(&c->out) ? EPOLLOUT : 0);

	ep_mod(c->w, c->fd, &c->events, ev, c);
}

/* Writes what is queued; -1 when the client is gone. */
static int client_flush(struct client *c)
{
	while (buf_used(&c->out) > 0) {
		ssize_t n = send(c->fd, c->out.d + c->out.off, buf_used(&c->out), MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0)
			return -1;
		buf_consume(&c->out, (size_t)n);
	}
	buf_trim(&c->out);
	client_update(c);
	return 0;
}

static void client_send(struct client *c, uint8_t seq, const uint8_t *p, size_t n)
{
	if (buf_put_packet(&c->out, seq, p, n) < 0)
		c->closing = true;
}

static void client_err(struct client *c, uint8_t seq, uint16_t code, const char *state,
                       const char *msg)
{
	uint8_t pkt[700];
	int n = err_build(pkt, sizeof(pkt), code, state, msg);

	if (n > 0)
		client_send(c, seq, pkt, (size_t)n);
}

static void client_ok(struct client *c, uint8_t seq)
{
	uint8_t pkt[32];
	uint16_t st = (c->autocommit_off ? 0 : SST_AUTOCOMMIT) | (c->in_trans ? SST_IN_TRANS : 0);
	int n = ok_build(pkt, sizeof(pkt), 0, 0, 0, st, 0);

	if (n > 0)
		client_send(c, seq, pkt, (size_t)n);
}

static bool bconn_paused(const struct bconn *b)
{
	return b->c && buf_used(&b->c->out) >= OUT_HIGH_WATER;
}

static void bconn_update(struct bconn *b)
{
	uint32_t ev;

	if (b->dead)
		return;
	if (b->st == B_CONNECTING)
		ev = EPOLLOUT;
	else
		ev = (bconn_paused(b) ? 0 : EPOLLIN | EPOLLRDHUP) |
		     (buf_used(&b->lout) || (b->st == B_READY && buf_used(&b->out)) ? EPOLLOUT : 0);
	ep_mod(b->w, b->fd, &b->events, ev, b);
}

/* 1: all written, 0: the socket is full, -1: error. */
static int flush_buf(int fd, struct buf *b)
{
	while (buf_used(b) > 0) {
		ssize_t n = send(fd, b->d + b->off, buf_used(b), MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n <= 0)
			return -1;
		buf_consume(b, (size_t)n);
	}
	buf_trim(b);
	return 1;
}

static int bconn_flush(struct bconn *b)
{
	int r;

	if (b->st == B_CONNECTING)
		return 0;
	r = flush_buf(b->fd, &b->lout);
	if (r == 1 && b->st == B_READY)
		r = flush_buf(b->fd, &b->out);
	if (r < 0)
		return -1;
	bconn_update(b);
	return 0;
}

/* ---- the command in flight ---- */

static void client_process(struct client *c);
static void route_cmd(struct client *c);
static void wait_enqueue(struct client *c);

/* The command is over (answered or refused): take the next one. */
static void cmd_done(struct client *c)
{
	c->cur = NULL;
	c->st = C_IDLE;
	c->has_exclude = false;
	c->retries = 0;
	c->cur_hist = false;
	buf_consume(&c->cmd, buf_used(&c->cmd));
	buf_trim(&c->cmd);
}

static void cmd_fail(struct client *c, uint16_t code, const char *msg)
{
	/* the statement never ran: a PREPARE's statement goes (the client got no
	 * id), an EXECUTE's long data too, as after an answer */
	if (c->cur_ps && c->cur_kind == RESP_PREPARE)
		ps_free(c, c->cur_ps);
	else if (c->cur_ps)
		ps_drop_longdata(c, c->cur_ps);
	c->cur_ps = NULL;
	if (c->cur_hist && c->nhist > 0) {
		free(c->hist[--c->nhist].p);
		if (c->wconn && c->wconn->hist_applied > c->nhist)
			c->wconn->hist_applied = c->nhist;
		if (c->rconn && c->rconn->hist_applied > c->nhist)
			c->rconn->hist_applied = c->nhist;
	}
	client_err(c, 1, code, "HY000", msg);
	cmd_done(c);
}

/*
 * A backend connection failed (refused, closed, malformed, login refused).
 * A read whose answer has not started is retried elsewhere; anything else
 * gets an ERR that says where it failed, or a closed connection when part of
 * the answer already reached the client or session state was lost with it.
 */
static void bconn_fail(struct bconn *b, const char *why)
{
	struct client *c = b->c;
	bool active = c && c->cur == b, writer = b->writer;
	uint32_t id = b->backend_id;
	char msg[512];
	bool state_lost;

	if (b->dead)
		return;
	if (b->st == B_CONNECTING && b->backend_id < PROXY_MAX_IDS)
		atomic_fetch_add(&b->w->e->be_failed[b->backend_id], 1);
	log_info("proxy: %s connection to %s failed: %s", writer ? "writer" : "reader", b->name,
	         why);
	snprintf(msg, sizeof(msg), "mysteer: lost the connection to the %s %s: %s",
	         writer ? "writer" : "reader", b->name, why);
	state_lost = c && ((writer && (c->in_trans || c->pin_writer || c->autocommit_off)) ||
	                   c->trx_conn == b);
	bconn_free(b);
	if (!c)
		return;
	if (active && c->fwd_started) {
		client_close(c);
		return;
	}
	if (!active) {
		if (state_lost)
			client_close(c);
		return;
	}
	if (c->route == R_READER && c->retries < MAX_RETRIES && !state_lost) {
		c->retries++;
		c->exclude_id = id;
		c->has_exclude = true;
		route_cmd(c);
	} else {
		cmd_fail(c, 1158,
		         msg); /* ER_NET_READ_ERROR: client codes (2013) confuse libmariadb */
		if (state_lost)
			c->closing = true;
	}
	if (c->st == C_IDLE) {
		if (client_flush(c) < 0 || c->closing)
			client_close(c);
		else
			client_process(c);
	}
}

static void bconn_login(struct bconn *b, const uint8_t *p, size_t n, uint8_t seq)
{
	struct handshake hs;
	struct hs_response r;
	struct client *c = b->c;
	uint8_t pkt[1024];
	int len;

	if (hs_parse(p, n, &hs) < 0 || hs.scramble_len < SCRAMBLE_LEN) {
		bconn_fail(b, "bad handshake");
		return;
	}
	memset(&r, 0, sizeof(r));
	r.caps = (c->caps & hs.caps & PROXY_CAPS & ~(CAP_CONNECT_ATTRS | CAP_CONNECT_WITH_DB)) |
	         CAP_PROTOCOL_41 | CAP_SECURE_CONNECTION | CAP_PLUGIN_AUTH;
	if (c->db0[0]) {
		r.caps |= CAP_CONNECT_WITH_DB;
		snprintf(r.db, sizeof(r.db), "%s", c->db0);
	}
	b->caps = r.caps;
	b->rt.caps = r.caps; /* the command queued before the login was tracked with 0 */
	if ((b->caps ^ c->caps) & (CAP_DEPRECATE_EOF | CAP_SESSION_TRACK | CAP_MULTI_RESULTS))
		log_warn("proxy: backend %s lacks capabilities the client uses", b->name);
	r.max_packet = 1u << 30;
	r.charset = c->charset;
	/* a ghost's caps may follow a client before this login is done: the
	 * pool matches on what this connection logged in with */
	b->pool_caps = c->caps;
	b->pool_charset = c->charset;
	snprintf(r.user, sizeof(r.user), "%s", c->user);
	snprintf(r.plugin, sizeof(r.plugin), "%s", NATIVE_PLUGIN);
	native_reply(hs.scramble, c->stage1, r.auth);
	r.auth_len = SHA1_LEN;
	len = hsr_build(pkt, sizeof(pkt), &r);
	if (len < 0 || buf_put_packet(&b->lout, (uint8_t)(seq + 1), pkt, (size_t)len) < 0) {
		bconn_fail(b, "cannot build the login");
		return;
	}
	b->st = B_AUTH;
	if (bconn_flush(b) < 0)
		bconn_fail(b, "write failed");
}

/* The login's answer: OK, ERR, or a switch to mysql_native_password. The
 * queued commands are written out once it is OK. */
static void bconn_auth_reply(struct bconn *b, const uint8_t *p, size_t n, uint8_t seq)
{
	struct err_pkt e;
	char plugin[64], msg[400];
	uint8_t scr[SCRAMBLE_LEN], reply[SHA1_LEN];
	size_t sl;
	if (n > 0 && p[0] == 0x00) {
		b->st = B_READY;
		if (bconn_flush(b) < 0)
			bconn_fail(b, "write failed");
		return;
	}
	if (n > 0 && p[0] == 0xff) {
		err_parse(p, n, &e);
		snprintf(msg, sizeof(msg), "login refused: %u %s", e.code, e.msg);
		bconn_fail(b, msg);
		return;
	}
	if (n > 0 && p[0] == 0xfe &&
	    auth_switch_parse(p, n, plugin, sizeof(plugin), scr, &sl) == 0 &&
	    !strcmp(plugin, NATIVE_PLUGIN) && sl == SCRAMBLE_LEN) {
		native_reply(scr, b->c->stage1, reply);
		if (buf_put_packet(&b->lout, (uint8_t)(seq + 1), reply, SHA1_LEN) < 0 ||
		    bconn_flush(b) < 0)
			bconn_fail(b, "write failed");
		return;
	}
	bconn_fail(b, "unsupported authentication request");
}

/* ---- answers ---- */

static void on_answer_done(struct client *c, struct bconn *b);

/* The kind of the next answer a backend connection will send. */
static enum resp_kind next_kind(const struct bconn *b)
{
	if (b->internal == 0)
		return b->c->cur_kind;
	return b->internal == 1 && b->prep_key ? RESP_PREPARE : RESP_GENERIC;
}

/* The first packet of a PREPARE's answer names the backend's statement id:
 * cache it on the connection, and show the client its own id. */
static void prepare_ok(struct bconn *b, uint8_t *payload, size_t n)
{
	struct client *c = b->c;
	struct pstmt *ps = b->frag_drop ? NULL : c->cur_ps;
	struct skey *k = b->frag_drop ? b->prep_key : ps ? ps->key : NULL;

	if (!k || n < 5 || payload[0] != 0x00)
		return;
	if (bc_add(b, k, b->rt.stmt_id) < 0)
		log_warn("proxy: out of memory caching a statement on %s", b->name);
	if (ps) {
		ps->nparams = b->rt.prep_params;
		put_le32(payload + 1, ps->id);
	}
}

static int send_cmd(struct client *c, struct bconn *b);
static void route_cmd(struct client *c);

/* The replica caught up with the session's last write (the command goes on)
 * or did not within read_your_writes_ms (the writer serves the read). */
static void gtid_waited(struct client *c, struct bconn *b)
{
	b->gtid_wait = false;
	c->cur = NULL;
	if (b->gtid_ok) {
		snprintf(b->waited_gtid, sizeof(b->waited_gtid), "%s", c->last_gtid);
		if (send_cmd(c, b) < 0)
			bconn_fail(b, "write failed");
		return;
	}
	log_debug("proxy: reader %s did not reach GTID %s in time: the writer reads", b->name,
	          c->last_gtid);
	c->route = R_WRITER;
	route_cmd(c);
	if (c->dead)
		return;
	bconn_update(b);
	if (c->st == C_IDLE) {
		if (client_flush(c) < 0 || c->closing)
			client_close(c);
		else
			client_process(c);
	}
}

/* Where word (lower case) first occurs in p[0..n), ignoring case; NULL if not. */
static const uint8_t *find_icase(const uint8_t *p, size_t n, const char *word)
{
	size_t wl = strlen(word);

	for (size_t i = 0; i + wl <= n; i++)
		if (!strncasecmp((const char *)p + i, word, wl))
			return p + i;
	return NULL;
}

#define TRACK_VARS  "session_track_system_variables"
#define TRACK_STATE "session_track_state_change"

/* Where a command of the session's history names that variable (a SET of
 * it, as the classifier made it a session statement), or NULL. */
static const uint8_t *names_var(const uint8_t *p, size_t n, const char *var)
{
	if (n < 1 || p[0] != COM_QUERY)
		return NULL;
	return find_icase(p + 1, n - 1, var);
}

/* The text after var in the session's last SET of it (*rest bytes), or
 * NULL when the client never set it. */
static const uint8_t *last_set(const struct client *c, const char *var, size_t *rest)
{
	for (size_t i = c->nhist; i-- > 0;) {
		const struct hist *h = &c->hist[i];
		const uint8_t *at = names_var(h->p, h->n, var);

		if (!at)
			continue;
		at += strlen(var);
		*rest = h->n - (size_t)(at - h->p);
		return at;
	}
	return NULL;
}

/*
 * Whether the client itself turned session_track_state_change on: its last
 * SET of it gives ON, 1 or TRUE. Otherwise the state-change entries the
 * writer reports are the proxy's own.
 */
static bool client_tracks_state(const struct client *c)
{
	static const char *const on[] = {"on", "1", "true"};
	size_t rest;
	const uint8_t *at = last_set(c, TRACK_STATE, &rest);

	while (at && rest > 0 && (*at == ' ' || *at == '=' || *at == '\t' || *at == '\n')) {
		at++;
		rest--;
	}
	for (size_t k = 0; at && k < sizeof(on) / sizeof(on[0]); k++) {
		size_t l = strlen(on[k]);
		if (rest >= l && !strncasecmp((const char *)at, on[k], l) &&
		    (rest == l || !isalnum(at[l])))
			return true;
	}
	return false;
}

/*
 * Whether the client asked for last_gtid in its session-state information:
 * its last SET of session_track_system_variables names it, or '*'.
 * Otherwise the last_gtid the servers report is the proxy's own.
 */
static bool client_tracks_gtid(const struct client *c)
{
	size_t rest;
	const uint8_t *at = last_set(c, TRACK_VARS, &rest);

	return at && (find_icase(at, rest, "last_gtid") || memchr(at, '*', rest));
}

/* A command of the session that sets a tracking variable replaces the
 * proxy's own setting on b: track_prologue sets it again before the next. */
static void tracking_replaced(struct bconn *b, const uint8_t *p, size_t n)
{
	if (names_var(p, n, TRACK_VARS))
		b->tracking_gtid = false;
	if (names_var(p, n, TRACK_STATE))
		b->tracking_state = false;
}

/*
 * Hides the proxy's own tracking from a client that did not ask for it: the
 * last_gtid variable and the state-change entry. p is a whole OK packet
 * (header included; the response tracker holds OKs back until they are
 * whole), rewritten in place. Returns the payload length to forward; an OK
 * that does not parse goes on as it is.
 */
static size_t hide_tracking(const struct bconn *b, uint8_t *p, size_t n, uint8_t seq)
{
	struct ok_state_drop what = {0};
	char gtid[64];
	int r;

	if (ok_find_last_gtid(&b->rt.last_ok, gtid, sizeof(gtid)) != 0 && !client_tracks_gtid(b->c))
		what.sysvar = "last_gtid";
	if (ok_state_changed(&b->rt.last_ok) != 0 && !client_tracks_state(b->c))
		what.state_change = true;
	if (!what.sysvar && !what.state_change)
		return n;
	r = ok_drop_state(p + PKT_HDR, p + PKT_HDR, n, b->caps, &what);
	if (r <= 0)
		return n;
	pkt_put_hdr(p, (uint32_t)r, seq);
	return (size_t)r;
}

/* Passes a piece of the answer on, or drops it for a replayed command. */
static void forward(struct bconn *b, const uint8_t *p, size_t n)
{
	struct client *c = b->c;

	if (b->frag_drop)
		return;
	if (buf_append(&c->out, p, n) < 0)
		c->closing = true;
	c->fwd_started = true;
}

/* Streams the fragments in b->in to the client, whole small ones and pieces of
 * large ones, until the answer ends or the client's buffer is full. */
static void bconn_answers(struct bconn *b)
{
	struct client *c = b->c;

again:
	while (!b->dead && buf_used(&b->in) > 0 && buf_used(&c->out) < OUT_HIGH_WATER) {
		uint8_t *p = b->in.d + b->in.off;
		size_t avail = buf_used(&b->in), take;
		struct pkt_frag f;
		enum resp_state st;

		if (b->frag_left > 0) {
			take = avail < b->frag_left ? avail : b->frag_left;
			forward(b, p, take);
			buf_consume(&b->in, take);
			b->frag_left -= (uint32_t)take;
			continue;
		}
		if (!b->awaiting && b->internal == 0) {
			bconn_fail(b, "unexpected data from the backend");
			return;
		}
		if (!pkt_frag_hdr(p, avail, &f))
			break;
		take = avail - PKT_HDR < f.len ? avail - PKT_HDR : f.len;
		if (take < f.len &&
		    (take == 0 || resp_needs_whole(&b->rt, p + PKT_HDR, take, f.len))) {
			if (buf_reserve(&b->in, PKT_HDR + f.len - avail) < 0)
				bconn_fail(b, "out of memory");
			break;
		}
		b->frag_drop = b->internal > 0;
		bool first = b->rt.state == RS_FIRST && !b->rt.in_frag;
		enum resp_state before = b->rt.state;
		b->rt.last_ok.state = NULL;
		st = resp_feed(&b->rt, p + PKT_HDR, take, f.len);
		if (st == RS_ERROR) {
			bconn_fail(b, "malformed answer");
			return;
		}
		if (first && b->rt.kind == RESP_PREPARE)
			prepare_ok(b, p + PKT_HDR, take);
		if (b->writer && b->rt.last_ok.state &&
		    ok_find_last_gtid(&b->rt.last_ok, c->last_gtid, sizeof(c->last_gtid)) < 0)
			c->last_gtid[0] = 0;
		if (b->rt.last_ok.state && !b->frag_drop && ok_state_changed(&b->rt.last_ok) != 0)
			b->state_changed = true;
		if (b->gtid_wait && before == RS_ROWS && st == RS_ROWS && take >= 2)
			b->gtid_ok = p[PKT_HDR] == 1 && p[PKT_HDR + 1] == '0';
		size_t fwd = take;
		if (b->rt.last_ok.state && !b->frag_drop && take == f.len && f.len < PKT_MAX_FRAG)
			fwd = hide_tracking(b, p, take, f.seq);
		forward(b, p, PKT_HDR + fwd);
		buf_consume(&b->in, PKT_HDR + take);
		b->frag_left = f.len - (uint32_t)take;
		if (st != RS_DONE)
			continue;
		if (b->internal > 0) {
			if (b->rt.saw_err)
				log_warn("proxy: replaying session state on %s failed", b->name);
			if (b->internal == 1)
				b->prep_key = NULL;
			b->internal--;
			resp_init(&b->rt, next_kind(b), b->caps);
			if (b->gtid_wait && b->internal == 0) {
				gtid_waited(c, b);
				return;
			}
			continue;
		}
		b->awaiting = false;
		on_answer_done(c, b);
		return;
	}
	if (b->dead || c->dead)
		return;
	bool full = buf_used(&c->out) >= OUT_HIGH_WATER;
	if (client_flush(c) < 0) {
		client_close(c);
		return;
	}
	/* Stopped for the client's buffer, which the socket took at once: the
	 * rest is already here, and no backend event will announce it again. */
	if (full && buf_used(&c->out) < OUT_HIGH_WATER && buf_used(&b->in) > 0)
		goto again;
	bconn_update(b);
}

static void on_answer_done(struct client *c, struct bconn *b)
{
	struct proxy_engine *e = c->w->e;
	uint16_t st = b->rt.status;
	bool ok = !b->rt.saw_err;
	/* a read that changed nothing on its connection and left nothing for
	 * SHOW WARNINGS: see mux_answered() and pool_park(); an EXECUTE counts
	 * as its statement would. A PREPARE changes nothing a session sees: its
	 * server-side statement belongs to the connection's cache, which only
	 * serves sessions that would parse it alike and closes it when no
	 * client statement uses it. */
	bool clean = ok && ((b->rt.warnings == 0 && c->cur_classified && c->cur_tok == CLS_READ &&
	                     !(c->cur_flags & STATEFUL_FLAGS)) ||
	                    c->cur_kind == RESP_PREPARE);

	/* A session statement (run here or failed half way), a routine, a
	 * multi-statement or anything not understood may change how the server
	 * parses: the cache of this connection is for its former state. */
	if (c->cur_hist ||
	    (c->cur_classified &&
	     (c->cur_tok == CLS_SESSION ||
	      (c->cur_flags & (CLS_F_MULTI | CLS_F_ROUTINE | CLS_F_UNREPLAYABLE | CLS_F_USE)) ||
	      c->cur_reason == CLS_R_ADMIN || c->cur_reason == CLS_R_CALL ||
	      c->cur_reason == CLS_R_UNKNOWN_FUNCTION || c->cur_reason == CLS_R_NOT_UNDERSTOOD)) ||
	    (!c->cur_classified && c->cur_kind == RESP_GENERIC && !c->cur_ps)) {
		if (b->nbst > 0) {
			bc_clear(b, true);
			bconn_update(b);
		}
	}
	/* a PREPARE's answer carries no status flags that could be trusted */
	if (b->writer && ok && c->cur_kind == RESP_GENERIC) {
		/* The server knows best whether a transaction is open. */
		c->in_trans = (st & SST_IN_TRANS) != 0;
		c->autocommit_off = !(st & SST_AUTOCOMMIT);
	}
	if (state_pins(c, b)) {
		if (!c->pin_writer)
			log_debug("proxy: session state changed by a statement of %s on %s: it "
			          "stays on the writer from now on",
			          c->user, b->name);
		c->pin_writer = true;
	}
	if (keeps_state(c, b)) {
		if (!b->keep)
			log_debug("proxy: a session of %s keeps its connection to %s", c->user,
			          b->name);
		b->keep = true;
		clean = false;
	}
	if (ok && c->cur_kind == RESP_GENERIC)
		b->trans_open = (st & SST_IN_TRANS) || !(st & SST_AUTOCOMMIT);
	if (!clean || b->trans_open)
		b->dirty = true;
	if (c->ro_trans && !c->trx_conn && ok)
		c->trx_conn = b;
	if (c->trx_conn == b) {
		c->ro_trans = ok ? (st & SST_IN_TRANS) != 0 : c->ro_trans;
		if (!c->ro_trans)
			c->trx_conn = NULL;
	} else if (c->ro_trans && !ok && !c->trx_conn) {
		c->ro_trans = false; /* START TRANSACTION READ ONLY failed */
	}
	if (c->cur_write && ok && e->ryw_mode != RYW_OFF)
		c->ryw_until_ms = now_ms() + (uint64_t)e->ryw_ms;
	if (c->cur_hist && !ok) {
		free(c->hist[--c->nhist].p);
		b->hist_applied = c->nhist;
	}
	if (c->cur_ps && c->cur_kind == RESP_PREPARE && !ok)
		ps_free(c, c->cur_ps);
	else if (c->cur_ps)
		ps_drop_longdata(c, c->cur_ps);
	c->cur_ps = NULL;
	c->last = b;
	c->has_parked_last = false;
	c->cur_hist = false;
	cmd_done(c);
	buf_trim(&b->in);
	mux_answered(c, b, clean);
	if (client_flush(c) < 0 || c->closing) {
		client_close(c);
		return;
	}
	client_process(c);
}

static int bconn_read(struct bconn *b)
{
	for (;;) {
		if (buf_reserve(&b->in, READ_CHUNK) < 0)
			return -1;
		ssize_t n = recv(b->fd, b->in.d + b->in.len, b->in.cap - b->in.len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n <= 0)
			return -1;
		b->in.len += (size_t)n;
		if (b->in.len < b->in.cap)
			return 0;
	}
}

/* Login packets, then answers. */
static void bconn_pump(struct bconn *b)
{
	while (!b->dead && (b->st == B_HANDSHAKE || b->st == B_AUTH)) {
		size_t total, payload;
		uint8_t seq, *p = b->in.d + b->in.off;
		int r = pkt_whole(p, buf_used(&b->in), 1 << 20, &total, &payload, &seq);

		if (r == 0)
			return;
		if (r < 0) {
			bconn_fail(b, "malformed login packet");
			return;
		}
		pkt_join(p, p, payload);
		buf_consume(&b->in, total); /* p stays valid: nothing moves b->in below */
		if (b->st == B_HANDSHAKE)
			bconn_login(b, p, payload, seq);
		else
			bconn_auth_reply(b, p, payload, seq);
	}
	if (!b->dead && b->st == B_READY && b->c && b->c->ghost) {
		warm_park(b);
		return;
	}
	if (!b->dead && b->st == B_READY)
		bconn_answers(b);
}

static void bconn_event(struct bconn *b, uint32_t events)
{
	int r;

	if (b->st == B_CONNECTING) {
		int err = 0;
		socklen_t el = sizeof(err);
		if (getsockopt(b->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err) {
			bconn_fail(b, strerror(err ? err : errno));
			return;
		}
		b->st = B_HANDSHAKE;
		bconn_update(b);
		return;
	}
	if ((events & EPOLLOUT) && bconn_flush(b) < 0) {
		bconn_fail(b, "write failed");
		return;
	}
	if (!(events & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP)))
		return;
	r = bconn_read(b);
	bconn_pump(b);
	if (b->dead)
		return;
	if (r < 0)
		bconn_fail(b, "closed by the server");
	else
		bconn_update(b);
}

/* A new connection to be, for c (or a ghost: a warm one). NULL with *full
 * set when the backend is at pool_max_per_backend. */
static struct bconn *bconn_open(struct client *c, const struct topo_backend *be, bool writer,
                                bool *full)
{
	struct bconn *b;
	int one = 1;

	*full = false;
	if (be->addrlen == 0)
		return NULL;
	if (!slot_take(c->w->e, be->id)) {
		*full = true;
		return NULL;
	}
	b = calloc(1, sizeof(*b));
	if (!b) {
		slot_release(c->w, be->id);
		return NULL;
	}
	b->type = EV_BACKEND;
	b->w = c->w;
	snprintf(b->schema, sizeof(b->schema), "%s", c->db0); /* bconn_login's */
	b->c = c;
	b->writer = writer;
	b->backend_id = be->id;
	snprintf(b->name, sizeof(b->name), "%s", be->name);
	b->fd = socket(be->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (b->fd < 0) {
		free(b);
		slot_release(c->w, be->id);
		return NULL;
	}
	if (setsockopt(b->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		log_debug("proxy: TCP_NODELAY: %s", strerror(errno));
	if ((connect(b->fd, (const struct sockaddr *)&be->addr, be->addrlen) < 0 &&
	     errno != EINPROGRESS) ||
	    ep_add(c->w, b->fd, EPOLLOUT, b) < 0) {
		log_info("proxy: connect to %s: %s", be->name, strerror(errno));
		close(b->fd);
		free(b);
		slot_release(c->w, be->id);
		return NULL;
	}
	b->events = EPOLLOUT;
	b->st = B_CONNECTING;
	atomic_fetch_add(&c->w->e->nbconns, 1);
	if (be->id < PROXY_MAX_IDS) {
		atomic_fetch_add(&c->w->e->be_connects[be->id], 1);
		/* a warm connection serves nobody yet: it counts as steered when
		 * a client takes it from the pool */
		if (c->ghost)
			atomic_fetch_add(&c->w->e->be_warming[be->id], 1);
		else
			atomic_fetch_add(&c->w->e->be_opened[be->id], 1);
	}
	return b;
}

/* ---- routing ---- */

static const struct topo_backend *pick_reader(struct client *c, const struct topology *t)
{
	int idx[64], total = 0, r;
	size_t n = 0;

	for (size_t i = 0; i < t->nbackends && n < 64; i++) {
		const struct topo_backend *b = &t->backends[i];
		if (b->role != ROLE_READER || !topo_backend_usable(b) || b->weight <= 0)
			continue;
		if (c->has_exclude && b->id == c->exclude_id)
			continue;
		idx[n++] = (int)i;
		total += b->weight;
	}
	if (n == 0)
		return NULL;
	for (size_t i = 0; c->has_sticky_reader && i < n; i++)
		if (t->backends[idx[i]].id == c->sticky_reader)
			return &t->backends[idx[i]];
	r = (int)(rand_r(&c->w->rnd) % (unsigned)total);
	size_t pick = n - 1;
	for (size_t i = 0; i < n; i++) {
		r -= t->backends[idx[i]].weight;
		if (r < 0) {
			pick = i;
			break;
		}
	}
	c->sticky_reader = t->backends[idx[pick]].id;
	c->has_sticky_reader = true;
	return &t->backends[idx[pick]];
}

/* A session that waits for a reader's connection keeps waiting for that
 * reader while it serves: NULL when it no longer does. */
static const struct topo_backend *waited_reader(struct client *c, const struct topology *t)
{
	if (!c->waiting)
		return NULL;
	for (size_t i = 0; i < t->nbackends; i++) {
		const struct topo_backend *b = &t->backends[i];
		if (b->id == c->wait_id)
			return b->role == ROLE_READER && topo_backend_usable(b) && b->weight > 0 &&
			               !(c->has_exclude && b->id == c->exclude_id)
			           ? b
			           : NULL;
	}
	return NULL;
}

/* An idle pooled connection of this backend, which pool_take did not give
 * the session (another user, capabilities, character set or schema): at the
 * cap it is closed so that the session's own takes its slot. Not one being
 * reset: that one comes back, and may fit, when the reset is answered. */
static struct bconn *pool_victim(struct worker *w, uint32_t id)
{
	for (struct bconn *b = w->pool; b; b = b->pool_next)
		if (b->backend_id == id && !b->resetting)
			return b;
	return NULL;
}

/* No connection now: route_cmd queues the command (wait_enqueue). */
static struct bconn *conn_wait(struct client *c, const struct topo_backend *be)
{
	c->must_wait = true;
	c->want_id = be->id;
	snprintf(c->want_name, sizeof(c->want_name), "%s", be->name);
	return NULL;
}

/*
 * A connection of be for the session: a pooled one, else a new one within
 * pool_max_per_backend, else (at the cap) a new one in the slot of an idle
 * one that does not fit; else NULL with c->must_wait set: the session waits
 * for a connection of be to be parked or closed. A session does not pass
 * the ones of its worker that already wait for be.
 */
static struct bconn *conn_get(struct client *c, const struct topo_backend *be, bool writer)
{
	struct worker *w = c->w;
	struct bconn *b, *victim;
	bool full;

	if (be->id < PROXY_MAX_IDS && w->wait_n[be->id] > 0 && !c->waiting)
		return conn_wait(c, be);
	b = pool_take(c, be, writer);
	if (b)
		return b;
	b = bconn_open(c, be, writer, &full);
	if (b || !full)
		return b;
	victim = pool_victim(w, be->id);
	if (victim) {
		log_debug("proxy: %s is at pool_max_per_backend: an idle connection of %s "
		          "makes room for %s",
		          be->name, victim->pool_user, c->user);
		bconn_free(victim);
		b = bconn_open(c, be, writer, &full);
		if (b || !full)
			return b;
	}
	return conn_wait(c, be);
}

static const struct topo_backend *cur_writer(const struct topology *t)
{
	if (!t || t->writer < 0 || (size_t)t->writer >= t->nbackends)
		return NULL;
	if (!topo_backend_usable(&t->backends[t->writer]))
		return NULL;
	return &t->backends[t->writer];
}

static bool still_serves(const struct topology *t, uint32_t id, enum be_role role)
{
	for (size_t i = 0; i < t->nbackends; i++)
		if (t->backends[i].id == id)
			return t->backends[i].role == role && topo_backend_usable(&t->backends[i]);
	return false;
}

/* Drops held connections to backends that lost their role, where the session
 * may move (not inside a transaction, nor with state only that server has). */
static void follow_topology(struct client *c, const struct topology *t)
{
	if (c->wconn && !c->in_trans && !c->pin_writer && !c->autocommit_off &&
	    !still_serves(t, c->wconn->backend_id, ROLE_WRITER))
		bconn_free(c->wconn);
	if (c->rconn && c->trx_conn != c->rconn &&
	    !still_serves(t, c->rconn->backend_id, ROLE_READER))
		bconn_free(c->rconn);
}

static void no_writer_msg(const struct topology *t, char *msg, size_t cap)
{
	size_t off;

	if (!t) {
		snprintf(msg, cap, "mysteer: no writer: no topology published yet");
		return;
	}
	off = (size_t)snprintf(msg, cap, "mysteer: no writer: no backend is up and writable");
	for (size_t i = 0; i < t->nbackends && off < cap; i++)
		if (t->backends[i].last_error[0])
			off += (size_t)snprintf(msg + off, cap - off, "; %s: %s",
			                        t->backends[i].name, t->backends[i].last_error);
}

static struct bconn *get_writer(struct client *c, const struct topology *t, char *msg, size_t cap)
{
	const struct topo_backend *be;

	if (c->wconn)
		return c->wconn;
	be = cur_writer(t);
	if (!be) {
		no_writer_msg(t, msg, cap);
		return NULL;
	}
	c->wconn = conn_get(c, be, true);
	if (!c->wconn && !c->must_wait)
		snprintf(msg, cap, "mysteer: cannot connect to the writer %s", be->name);
	return c->wconn;
}

static struct bconn *get_reader(struct client *c, const struct topology *t, char *msg, size_t cap)
{
	const struct topo_backend *be;

	if (c->rconn && !(c->has_exclude && c->rconn->backend_id == c->exclude_id))
		return c->rconn;
	if (c->rconn)
		bconn_free(c->rconn);
	be = t ? waited_reader(c, t) : NULL;
	if (!be && t)
		be = pick_reader(c, t);
	if (be)
		c->rconn = conn_get(c, be, false);
	if (c->rconn)
		return c->rconn;
	if (c->must_wait)
		return NULL; /* the read waits for the reader it was given */
	if (c->has_exclude && c->wconn && c->wconn->backend_id == c->exclude_id)
		bconn_free(c->wconn);
	return get_writer(c, t, msg, cap); /* no live reader: the writer stands in */
}

/*
 * Builds in c->scratch the EXECUTE for this connection: its statement id
 * (0xffffffff, MariaDB's "the statement just prepared", when the PREPARE is
 * sent in the same batch), no cursor (not supported: rows are streamed), and
 * the parameter types when this connection has not had them yet.
 */
/* Whether e (NULL: prepared in this batch) has the types last bound that
 * the session's EXECUTE would leave out; else it notes that it gets them. */
static bool types_already_bound(struct bstmt *e, const struct pstmt *ps)
{
	size_t n = 2u * ps->nparams;
	uint8_t *copy;

	if (!e)
		return false;
	if (e->types && e->ntypes == n && !memcmp(e->types, ps->types, n))
		return true;
	copy = malloc(n);
	if (copy)
		memcpy(copy, ps->types, n);
	free(e->types);
	e->types = copy;
	e->ntypes = copy ? n : 0;
	return false;
}

/* Rewrites the client's EXECUTE for connection statement xid (e: its cache
 * entry, NULL when prepared in the same batch). */
static int build_execute(struct client *c, struct bstmt *e, uint32_t xid, const uint8_t **out,
                         size_t *outlen)
{
	struct pstmt *ps = c->cur_ps;
	const uint8_t *p = c->cmd.d + c->cmd.off;
	size_t n = buf_used(&c->cmd), nb = ((size_t)ps->nparams + 7) / 8, off = 10 + nb;
	bool insert_types = false;

	buf_consume(&c->scratch, buf_used(&c->scratch));
	/* The backend statement may be shared: another session may have bound
	 * other types to it last. The client sends its types once; they go
	 * along whenever the statement's last ones differ. */
	if (ps->nparams > 0 && n > off && p[off] == 0 && ps->types)
		insert_types = !types_already_bound(e, ps);
	else if (ps->nparams > 0 && n > off && p[off] == 1 && ps->types && e)
		types_already_bound(e, ps); /* ps->types are these */
	if (insert_types) {
		uint8_t one = 1;
		if (buf_append(&c->scratch, p, off) < 0 || buf_append(&c->scratch, &one, 1) < 0 ||
		    buf_append(&c->scratch, ps->types, 2u * ps->nparams) < 0 ||
		    buf_append(&c->scratch, p + off + 1, n - off - 1) < 0)
			return -1;
	} else if (buf_append(&c->scratch, p, n) < 0) {
		return -1;
	}
	put_le32(c->scratch.d + c->scratch.off + 1, xid);
	c->scratch.d[c->scratch.off + 5] = 0; /* CURSOR_TYPE_NO_CURSOR */
	*out = c->scratch.d + c->scratch.off;
	*outlen = buf_used(&c->scratch);
	return 0;
}

/* Queues what an EXECUTE needs before it on this connection: a PREPARE when
 * the statement is not in its cache, and the long data. Sets *xid, and *ep
 * to its cache entry (NULL: prepared in this batch). */
static int queue_ps_prereqs(struct client *c, struct bconn *b, uint32_t *xid, struct bstmt **ep)
{
	struct pstmt *ps = c->cur_ps;
	struct bstmt *e = bc_find(b, ps->key);

	*ep = e;
	if (e) {
		*xid = e->xid;
		e->used = ++c->w->ps_tick;
	} else {
		*xid = 0xffffffffu;
		bc_make_room(b);
		/* payload = command byte + SQL */
		uint8_t *tmp = malloc(ps->key->len + 1);
		if (!tmp)
			return -1;
		tmp[0] = COM_STMT_PREPARE;
		memcpy(tmp + 1, ps->key->sql, ps->key->len);
		int r = buf_put_packet(&b->out, 0, tmp, ps->key->len + 1);
		free(tmp);
		if (r < 0)
			return -1;
		b->internal++;
		b->prep_key = ps->key; /* prepare_ok caches it */
	}
	for (size_t off = ps->longdata.off; off + 4 <= ps->longdata.len;) {
		uint32_t len = get_le32(ps->longdata.d + off);
		uint8_t *pl = ps->longdata.d + off + 4;
		put_le32(pl + 1, *xid);
		if (buf_put_packet(&b->out, 0, pl, len) < 0)
			return -1;
		off += 4 + len;
	}
	return 0;
}

static bool gtid_text_ok(const char *g)
{
	if (!*g)
		return false;
	for (; *g; g++)
		if (!((*g >= '0' && *g <= '9') || *g == '-' || *g == ','))
			return false;
	return true;
}

static int queue_query(struct bconn *b, const char *sql)
{
	char q[256];
	int n = snprintf(q, sizeof(q), "%c%s", COM_QUERY, sql);

	if (n < 0 || (size_t)n >= sizeof(q) ||
	    buf_put_packet(&b->out, 0, (uint8_t *)q, (size_t)n) < 0)
		return -1;
	b->internal++;
	return 0;
}

/*
 * The proxy's session tracking on a writer connection, in one internal SET
 * before the first statement and again after a reset:
 * - session_track_state_change: the server reports when a statement changed
 *   session state the history cannot rebuild (user variables, temporary
 *   tables or session variables set inside a stored routine), read by
 *   state_pins(). Needs CLIENT_SESSION_TRACK on the connection.
 * - read_your_writes = gtid: last_gtid in session_track_system_variables, so
 *   the writer's OK packets carry the session's last GTID.
 */
static int track_prologue(const struct client *c, struct bconn *b)
{
	/* before its login the connection's caps are not known yet: they will
	 * be the client's, as far as the server has them (bconn_login) */
	uint32_t caps = b->st == B_READY ? b->caps : c->caps;
	bool state = !b->tracking_state && (caps & CAP_SESSION_TRACK);
	bool gtid = !b->tracking_gtid && c->w->e->ryw_mode == RYW_GTID;
	char q[160];

	if (!b->writer || (!state && !gtid))
		return 0;
	b->tracking_state |= state;
	b->tracking_gtid |= gtid;
	snprintf(q, sizeof(q), "SET %s%s%s", state ? "session_track_state_change = ON" : "",
	         state && gtid ? ", " : "",
	         gtid ? "session_track_system_variables = "
	                "CONCAT(@@session_track_system_variables, ',last_gtid')"
	              : "");
	return queue_query(b, q);
}

/*
 * read_your_writes = gtid: a read on a replica first waits there for the
 * session's last GTID (which writer connections report, track_prologue).
 * Returns 1 when a wait was queued and the command is held back, 0 to go
 * on, -1 on error.
 */
static int gtid_prologue(struct client *c, struct bconn *b)
{
	struct proxy_engine *e = c->w->e;
	char q[200];

	if (b->writer || c->route != R_READER || !gtid_text_ok(c->last_gtid) ||
	    !strcmp(b->waited_gtid, c->last_gtid))
		return 0;
	snprintf(q, sizeof(q), "SELECT MASTER_GTID_WAIT('%s', %d.%03d)", c->last_gtid,
	         e->ryw_ms / 1000, e->ryw_ms % 1000);
	if (queue_query(b, q) < 0)
		return -1;
	b->gtid_wait = true;
	b->gtid_ok = false;
	resp_init(&b->rt, RESP_GENERIC, b->caps);
	b->awaiting = false;
	b->frag_left = 0;
	c->cur = b;
	c->fwd_started = false;
	c->st = C_BUSY;
	return 1;
}

/* Queues the session history this connection has not seen, then the command. */
static int send_cmd(struct client *c, struct bconn *b)
{
	size_t upto = c->cur_hist ? c->nhist - 1 : c->nhist;
	const uint8_t *p = c->cmd.d + c->cmd.off;
	size_t n = buf_used(&c->cmd);
	uint32_t xid;

	b->prep_key = NULL;
	/* the history changes how the server may parse: the cached statements
	 * were prepared without it (a clean connection has none replayed) */
	if (b->hist_applied < upto && b->nbst > 0)
		bc_clear(b, true);
	while (b->hist_applied < upto) {
		struct hist *h = &c->hist[b->hist_applied++];
		if (buf_put_packet(&b->out, 0, h->p, h->n) < 0)
			return -1;
		b->internal++;
		b->dirty = true;
		tracking_replaced(b, h->p, h->n);
	}
	if (track_prologue(c, b) < 0)
		return -1;
	if (c->w->e->ryw_mode == RYW_GTID) {
		int r = gtid_prologue(c, b);
		if (r != 0)
			return r < 0 ? -1 : bconn_flush(b);
	}
	if (c->cur_ps && p[0] == COM_STMT_EXECUTE) {
		struct bstmt *e;
		if (queue_ps_prereqs(c, b, &xid, &e) < 0 || build_execute(c, e, xid, &p, &n) < 0)
			return -1;
	} else if (c->cur_ps && p[0] == COM_STMT_PREPARE && !bc_find(b, c->cur_ps->key)) {
		bc_make_room(b);
	}
	if (buf_put_packet(&b->out, 0, p, n) < 0)
		return -1;
	if (c->cur_hist) {
		tracking_replaced(b, p, n);
		b->hist_applied = c->nhist;
	}
	b->state_changed = false;
	b->state_tracked = b->tracking_state;
	resp_init(&b->rt, next_kind(b), b->caps);
	b->awaiting = true;
	b->frag_left = 0;
	c->cur = b;
	c->fwd_started = false;
	c->st = C_BUSY;
	return bconn_flush(b);
}

/* Sends c->cmd where c->route says. On failure the client has its ERR and
 * the command is over (c->st is C_IDLE again). */
static void route_cmd(struct client *c)
{
	const struct topology *t = topo_current();
	struct bconn *b = NULL;
	char msg[512] = "mysteer: no backend available";

	c->must_wait = false;
	if (t)
		follow_topology(c, t);
	switch (c->route) {
	case R_LAST:
		b = c->last ? c->last : c->wconn ? c->wconn : c->rconn;
		if (!b)
			b = get_reader(c, t, msg, sizeof(msg));
		break;
	case R_TRX:
		b = c->trx_conn ? c->trx_conn : get_reader(c, t, msg, sizeof(msg));
		break;
	case R_READER:
		b = get_reader(c, t, msg, sizeof(msg));
		break;
	case R_WRITER:
		b = get_writer(c, t, msg, sizeof(msg));
		break;
	}
	if (t)
		topo_put(t);
	if (!b && c->must_wait) {
		wait_enqueue(c);
		return;
	}
	wait_dequeue(c);
	if (!b) {
		cmd_fail(c, 1105, msg);
		return;
	}
	if (send_cmd(c, b) < 0)
		bconn_fail(b, "write failed");
}

/*
 * The session waits for a connection of c->want_id, at pool_max_per_backend,
 * in its worker's FIFO: its command stays in c->cmd (C_BUSY: nothing more is
 * read from it meanwhile), and route_cmd runs again when a connection of that
 * backend is parked or closed (waiters_run), until POOL_WAIT_MS has passed
 * (wait_expire). A session already waiting keeps its place.
 */
static void wait_enqueue(struct client *c)
{
	struct worker *w = c->w;
	struct proxy_engine *e = w->e;
	uint32_t id = c->want_id;

	c->st = C_BUSY;
	c->cur = NULL;
	snprintf(c->wait_name, sizeof(c->wait_name), "%s", c->want_name);
	if (c->waiting && c->wait_id == id)
		return;
	if (c->waiting) {
		/* another reader now: same place in the queue */
		w->wait_n[c->wait_id]--;
		atomic_fetch_sub(&e->be_waiting[c->wait_id], 1);
	} else {
		c->waiting = true;
		c->wait_start = now_ms();
		c->wait_deadline = c->wait_start + e->wait_ms;
		c->wait_next = NULL;
		c->wait_prev = w->wait_tail;
		if (w->wait_tail)
			w->wait_tail->wait_next = c;
		else
			w->wait_head = c;
		w->wait_tail = c;
		w->nwaiting++;
		atomic_fetch_add(&e->waiting_total, 1);
		atomic_fetch_add(&e->be_waits[id], 1);
		log_debug("proxy: a session of %s waits for a connection to %s "
		          "(pool_max_per_backend = %d)",
		          c->user, c->want_name, atomic_load(&e->pool_max));
	}
	c->wait_id = id;
	w->wait_n[id]++;
	atomic_fetch_add(&e->be_waiting[id], 1);
	/* other workers' idle connections of it make room (pool_yield) */
	wake_others(w);
}

/* After route_cmd, from outside the client's own event: an ERR or a refusal
 * left it idle, so answer it and go on with what it sent next. */
static void client_resume(struct client *c)
{
	if (c->dead || c->st != C_IDLE)
		return;
	if (client_flush(c) < 0 || c->closing)
		client_close(c);
	else
		client_process(c);
}

/* A connection or a slot came free: the waiters try again, in order; the
 * first one of a backend that still finds none keeps the later ones of that
 * backend waiting too. */
static void waiters_run(struct worker *w)
{
	bool blocked[PROXY_MAX_IDS] = {false};

	w->kick = false;
	for (struct client *c = w->wait_head, *next; c; c = next) {
		next = c->wait_next;
		if (blocked[c->wait_id])
			continue;
		route_cmd(c);
		if (c->waiting)
			blocked[c->wait_id] = true;
		else
			client_resume(c);
	}
}

/* Waits longer than POOL_WAIT_MS end with an ERR to that statement; the
 * session goes on. */
static void wait_expire(struct worker *w, uint64_t now)
{
	struct proxy_engine *e = w->e;
	char msg[256];

	for (struct client *c = w->wait_head, *next; c; c = next) {
		next = c->wait_next;
		if (now < c->wait_deadline)
			continue;
		atomic_fetch_add(&e->be_wait_timeouts[c->wait_id], 1);
		wait_dequeue(c);
		snprintf(msg, sizeof(msg),
		         "mysteer: no connection to %s free within %u ms "
		         "(pool_max_per_backend = %d)",
		         c->wait_name, e->wait_ms, atomic_load(&e->pool_max));
		log_info("proxy: a session of %s waited %llu ms for %s: ERR", c->user,
		         (unsigned long long)(now - c->wait_start), c->wait_name);
		/* ER_CON_COUNT_ERROR, with HY000 rather than its 08004: connectors
		 * take SQLSTATE class 08 for a broken connection */
		cmd_fail(c, 1040, msg);
		client_resume(c);
	}
}

/* Idle connections of a backend that sessions of other workers wait for
 * are closed, as many as those wait for: pools are per worker, so only
 * their slots can serve them. */
static void pool_yield(struct worker *w)
{
	int freed[PROXY_MAX_IDS];

	/* the usual case, checked before walking the pool after every batch */
	if (atomic_load(&w->e->waiting_total) <= w->nwaiting)
		return;
	memset(freed, 0, sizeof(freed));

	for (struct bconn *b = w->pool, *next; b; b = next) {
		uint32_t id = b->backend_id;
		next = b->pool_next;
		if (id >= PROXY_MAX_IDS || b->resetting)
			continue;
		if (atomic_load(&w->e->be_waiting[id]) - w->wait_n[id] > freed[id]) {
			freed[id]++;
			bconn_free(b);
		}
	}
}

/* An earlier identical statement is superseded by the new one: applications
 * that repeat SET NAMES or SET time_zone on every request keep a short
 * history. */
static void hist_drop_same(struct client *c, const uint8_t *p, size_t n)
{
	struct bconn *conns[2] = {c->wconn, c->rconn};

	for (size_t i = 0; i < c->nhist; i++) {
		if (c->hist[i].n != n || memcmp(c->hist[i].p, p, n))
			continue;
		free(c->hist[i].p);
		memmove(&c->hist[i], &c->hist[i + 1], (c->nhist - i - 1) * sizeof(c->hist[0]));
		c->nhist--;
		for (int k = 0; k < 2; k++)
			if (conns[k] && conns[k]->hist_applied > i)
				conns[k]->hist_applied--;
		return;
	}
}

static int hist_add(struct client *c, const uint8_t *p, size_t n)
{
	hist_drop_same(c, p, n);
	if (c->nhist == c->hist_cap) {
		size_t cap = c->hist_cap ? c->hist_cap * 2 : 8;
		struct hist *h = realloc(c->hist, cap * sizeof(*h));
		if (!h)
			return -1;
		c->hist = h;
		c->hist_cap = cap;
	}
	c->hist[c->nhist].p = malloc(n);
	if (!c->hist[c->nhist].p)
		return -1;
	memcpy(c->hist[c->nhist].p, p, n);
	c->hist[c->nhist].n = n;
	c->nhist++;
	c->cur_hist = true;
	return 0;
}

/* Sets c->route (and the session flags) for a COM_QUERY. */
static void classify(struct client *c, const uint8_t *sql, size_t len, struct cls_result *res)
{
	struct worker *w = c->w;
	struct proxy_engine *e = w->e;
	struct cls_options opt = {.current_db = c->db, .current_db_len = strlen(c->db)};

	if (e->routines && rt_generation(e->routines) != w->rt_gen) {
		struct rt_snap *old = w->rt;
		w->rt = rt_snap_get(e->routines, &w->rt_gen);
		rt_snap_put(old);
	}
	opt.routines = w->rt ? w->rt->rt : NULL;
	opt.trust_routines = atomic_load_explicit(&e->trust_routines, memory_order_relaxed);
	cls_classify(&opt, (const char *)sql, len, res);
}

/* Sets c->route (and the session flags) for a statement of this class. A
 * prepared statement (is_ps) cannot be replayed from the history: a session
 * statement run that way pins the session instead. */
static void decide(struct client *c, enum cls_token tok, uint32_t flags, enum cls_reason reason,
                   bool is_ps)
{
	struct proxy_engine *e = c->w->e;

	c->cur_write = false;
	c->cur_classified = true;
	c->cur_tok = tok;
	c->cur_flags = flags;
	/* SET @a = ... is replayed from the history; SELECT @a := ... cannot be */
	if ((flags & (CLS_F_TEMP_TABLE | CLS_F_NAMED_LOCK)) ||
	    ((flags & CLS_F_USER_VAR_WRITE) && tok != CLS_SESSION)) {
		if (!c->pin_writer)
			log_debug("proxy: session of %s stays on the writer from now on", c->user);
		c->pin_writer = true;
	}
	c->route = R_WRITER;
	switch (tok) {
	case CLS_SESSION:
		if ((flags & CLS_F_UNREPLAYABLE) || is_ps) {
			log_debug("proxy: a SET the proxy cannot replay pins %s to the writer",
			          c->user);
			c->pin_writer = true;
			return;
		}
		if ((flags & CLS_F_SET_TRANSACTION) && !c->ro_trans)
			return; /* applies to the next transaction: the writer's */
		if (hist_add(c, c->cmd.d + c->cmd.off, buf_used(&c->cmd)) < 0)
			c->closing = true;
		c->route = c->ro_trans ? R_TRX : R_LAST;
		return;
	case CLS_BEGIN_RO:
		if (!c->in_trans && !c->autocommit_off && !c->pin_writer) {
			c->ro_trans = true;
			c->route = R_TRX;
		}
		return;
	case CLS_END:
		if (c->ro_trans)
			c->route = R_TRX;
		return;
	case CLS_BEGIN:
	case CLS_WRITE:
		if (c->ro_trans) {
			c->route = R_TRX; /* the server refuses it inside READ ONLY */
			return;
		}
		/* SELECT FOUND_ROWS() after a read on a replica: the answer is on
		 * that replica's connection, kept after a SQL_CALC_FOUND_ROWS read,
		 * back from the pool after a plain one if nobody took it since */
		if (reason == CLS_R_PREV_RESULT && !is_ps && (c->last || reclaim_last(c))) {
			c->route = R_LAST;
			return;
		}
		c->cur_write = true;
		return;
	case CLS_READ:
		break;
	}
	if (c->ro_trans) {
		c->route = R_TRX;
		return;
	}
	if ((flags & CLS_F_PREV_STATE) && c->last) {
		c->route = R_LAST;
		return;
	}
	if (c->in_trans || c->autocommit_off || c->pin_writer || (flags & CLS_F_HINT_WRITER) ||
	    ((e->ryw_mode == RYW_WINDOW ||
	      (e->ryw_mode == RYW_GTID && !(c->caps & CAP_SESSION_TRACK))) &&
	     now_ms() < c->ryw_until_ms))
		return;
	c->route = R_READER;
}

static void decide_query(struct client *c, const uint8_t *sql, size_t len)
{
	struct cls_result res;

	classify(c, sql, len, &res);
	if ((res.flags & CLS_F_USE) && res.db_len < sizeof(c->db) &&
	    (size_t)res.db_off + res.db_len <= len) {
		memcpy(c->db, sql + res.db_off, res.db_len);
		c->db[res.db_len] = 0;
	}
	decide(c, res.token, res.flags, res.reason, false);
	c->cur_reason = res.reason;
}

/* ---- client commands ---- */

static void unknown_stmt(struct client *c, uint32_t id, const char *cmd)
{
	char msg[128];

	snprintf(msg, sizeof(msg), "Unknown prepared statement handler (%u) given to %s", id, cmd);
	client_err(c, 1, 1243, "HY000", msg);
}

static int cmd_prepare(struct client *c, const uint8_t *p, size_t n)
{
	uint32_t max = c->w->e->ps_per_session;
	struct cls_result res;
	struct pstmt *ps;
	char msg[128];

	/* Each statement keeps its SQL here: without a cap a client could fill
	 * the proxy's memory. Answered as the server would at its own limit. */
	if (c->nstmts >= max) {
		snprintf(msg, sizeof(msg),
		         "Can't create more than max_prepared_stmt_count statements "
		         "(current value: %u)",
		         max);
		client_err(c, 1, 1461, "42000", msg);
		return -1;
	}
	ps = ps_new(c, p + 1, n - 1);
	if (!ps) {
		c->closing = true;
		return -1;
	}
	classify(c, p + 1, n - 1, &res);
	ps->tok = res.token;
	ps->flags = res.flags;
	c->cur_ps = ps;
	c->cur_kind = RESP_PREPARE;
	/* Prepared where it will most likely run; other backends prepare lazily. */
	c->route = res.token == CLS_READ && !c->in_trans && !c->autocommit_off && !c->pin_writer
	               ? R_READER
	               : R_WRITER;
	if (c->ro_trans)
		c->route = R_TRX;
	return 0;
}

static int cmd_execute(struct client *c, const uint8_t *p, size_t n)
{
	struct pstmt *ps = n >= 10 ? ps_find(c, get_le32(p + 1)) : NULL;
	size_t off;

	if (!ps) {
		unknown_stmt(c, n >= 5 ? get_le32(p + 1) : 0, "mysqld_stmt_execute");
		return -1;
	}
	if (ps->longdata_over) { /* the server's answer in that case */
		ps->longdata_over = false;
		client_err(c, 1, 1105, "HY000",
		           "Parameter of prepared statement which is set through "
		           "mysql_send_long_data() is longer than 'max_packet_size' bytes");
		return -1;
	}
	off = 10 + ((size_t)ps->nparams + 7) / 8;
	if (ps->nparams > 0 && n > off && p[off] == 1) {
		if (n < off + 1 + 2u * ps->nparams) {
			client_err(c, 1, 1210, "HY000",
			           "Incorrect arguments to mysqld_stmt_execute");
			return -1;
		}
		if (!ps->types && !(ps->types = malloc(2u * ps->nparams))) {
			c->closing = true;
			return -1;
		}
		memcpy(ps->types, p + off + 1, 2u * ps->nparams);
	}
	c->cur_ps = ps;
	decide(c, ps->tok, ps->flags, CLS_R_NONE, true);
	return 0;
}

static void cmd_long_data(struct client *c, const uint8_t *p, size_t n)
{
	struct pstmt *ps = n >= 7 ? ps_find(c, get_le32(p + 1)) : NULL;
	uint8_t len[4];

	if (!ps || ps->longdata_over)
		return; /* the server answers nothing either; EXECUTE will fail */
	/* Kept here until the EXECUTE: bounded for the whole session (all its
	 * statements) like the server's own max_long_data_size, or a client
	 * could grow it without end. */
	if (c->ld_bytes + 4 + n > c->w->e->max_packet) {
		ps->longdata_over = true;
		ps_drop_longdata(c, ps);
		return;
	}
	size_t before = buf_used(&ps->longdata);
	put_le32(len, (uint32_t)n);
	if (buf_append(&ps->longdata, len, 4) < 0 || buf_append(&ps->longdata, p, n) < 0)
		c->closing = true;
	c->ld_bytes += buf_used(&ps->longdata) - before;
}

/* The client's statement goes; the server-side ones of its text go with the
 * worker's last client statement of it (skey_put). No answer. */
static void cmd_stmt_close(struct client *c, const uint8_t *p, size_t n)
{
	struct pstmt *ps = n >= 5 ? ps_find(c, get_le32(p + 1)) : NULL;

	if (ps)
		ps_free(c, ps);
}

static void cmd_stmt_reset(struct client *c, const uint8_t *p, size_t n)
{
	struct pstmt *ps = n >= 5 ? ps_find(c, get_le32(p + 1)) : NULL;

	if (!ps) {
		unknown_stmt(c, n >= 5 ? get_le32(p + 1) : 0, "mysqld_stmt_reset");
		return;
	}
	/* Long data lives here until EXECUTE, and cursors are never opened:
	 * nothing on a backend needs resetting. */
	ps_drop_longdata(c, ps);
	ps->longdata_over = false;
	client_ok(c, 1);
}

static void client_command(struct client *c, const uint8_t *p, size_t n)
{
	buf_consume(&c->cmd, buf_used(&c->cmd));
	c->cur_hist = false;
	c->cur_write = false;
	c->cur_classified = false;
	c->cur_flags = 0;
	c->cur_reason = CLS_R_NONE;
	c->cur_ps = NULL;
	c->route = R_LAST;
	c->cur_kind = RESP_GENERIC;
	if (n == 0) {
		client_err(c, 1, 1047, "08S01", "Unknown command");
		return;
	}
	if (buf_append(&c->cmd, p, n) < 0) {
		c->closing = true;
		return;
	}
	switch (p[0]) {
	case COM_QUIT:
		c->closing = true;
		return;
	case COM_PING:
		client_ok(c, 1);
		return;
	case COM_QUERY:
		decide_query(c, p + 1, n - 1);
		break;
	case COM_INIT_DB:
		if (n - 1 < sizeof(c->db)) {
			memcpy(c->db, p + 1, n - 1);
			c->db[n - 1] = 0;
		}
		if (hist_add(c, p, n) < 0)
			c->closing = true;
		break;
	case COM_FIELD_LIST:
		c->cur_kind = RESP_FIELD_LIST;
		break;
	case COM_STATISTICS:
		c->cur_kind = RESP_ONE_PACKET;
		break;
	case COM_SET_OPTION:
		if (hist_add(c, p, n) < 0)
			c->closing = true;
		break;
	case COM_RESET_CONNECTION:
		/* Fresh backend connections are the most faithful reset. */
		if (c->wconn)
			bconn_free(c->wconn);
		if (c->rconn)
			bconn_free(c->rconn);
		hist_clear(c);
		c->in_trans = c->ro_trans = c->autocommit_off = c->pin_writer = false;
		c->ryw_until_ms = 0;
		snprintf(c->db, sizeof(c->db), "%s", c->db0);
		client_ok(c, 1);
		return;
	case COM_STMT_PREPARE:
		if (cmd_prepare(c, p, n) < 0)
			return;
		break;
	case COM_STMT_EXECUTE:
		if (cmd_execute(c, p, n) < 0)
			return;
		break;
	case COM_STMT_SEND_LONG_DATA:
		cmd_long_data(c, p, n);
		return; /* no answer is expected */
	case COM_STMT_CLOSE:
		cmd_stmt_close(c, p, n);
		return; /* no answer is expected */
	case COM_STMT_RESET:
		cmd_stmt_reset(c, p, n);
		return;
	case COM_STMT_FETCH:
		client_err(c, 1, 1295, "HY000", "mysteer: cursors are not supported on 6450");
		return;
	default:
		client_err(c, 1, 1047, "08S01", "Unknown command");
		return;
	}
	if (c->closing)
		return;
	mux_next(c);
	route_cmd(c);
}

/* ---- handshake and auth ---- */

static void send_handshake(struct client *c)
{
	struct handshake h = {0};
	uint8_t pkt[256];
	int n;

	snprintf(h.server_version, sizeof(h.server_version), "%s", SERVER_VERSION);
	h.conn_id = atomic_fetch_add(&c->w->e->next_conn_id, 1);
	memcpy(h.scramble, c->scramble, SCRAMBLE_LEN);
	h.scramble_len = SCRAMBLE_LEN;
	h.caps = PROXY_CAPS;
	h.charset = CHARSET_UTF8MB4;
	h.status = SST_AUTOCOMMIT;
	snprintf(h.plugin, sizeof(h.plugin), "%s", NATIVE_PLUGIN);
	n = hs_build(pkt, sizeof(pkt), &h);
	if (n > 0)
		client_send(c, 0, pkt, (size_t)n);
}

static void deny(struct client *c, uint8_t seq, bool with_password)
{
	char msg[400];

	snprintf(msg, sizeof(msg), "Access denied for user '%s'@'%s' (using password: %s)", c->user,
	         c->host, with_password ? "YES" : "NO");
	log_info("proxy: access denied for user '%s'@'%s'", c->user, c->host);
	client_err(c, seq, 1045, "28000", msg);
	c->closing = true;
}

static void check_password(struct client *c, const uint8_t *reply, size_t n, uint8_t seq)
{
	const struct user_entry *u = find_user(c->w->e, c->user);

	if (!u || !u->has_hash || native_verify(c->scramble, reply, n, u->stage2, c->stage1) < 0) {
		deny(c, seq, n > 0);
		return;
	}
	c->st = C_IDLE;
	c->deadline_ms = 0;
	/* warm connections log in like the last client of this user, so that
	 * the next one of its kind can take them */
	for (size_t i = 0; i < c->w->nghosts; i++)
		if (!strcmp(c->w->ghosts[i].user, c->user)) {
			c->w->ghosts[i].caps = c->caps;
			c->w->ghosts[i].charset = c->charset;
		}
	client_ok(c, seq);
}

static void client_auth(struct client *c, const uint8_t *p, size_t n, uint8_t seq)
{
	struct hs_response r;
	uint8_t pkt[128];
	int len;

	if (c->st == C_SWITCH) {
		check_password(c, p, n, (uint8_t)(seq + 1));
		return;
	}
	if (hsr_parse(p, n, &r) < 0 || r.ssl_request) {
		client_err(c, (uint8_t)(seq + 1), 1043, "08S01",
		           r.ssl_request ? "mysteer: TLS is not supported on 6450 yet"
		                         : "Bad handshake");
		c->closing = true;
		return;
	}
	snprintf(c->user, sizeof(c->user), "%s", r.user);
	c->caps = r.caps & PROXY_CAPS;
	c->charset = r.charset;
	if (r.has_db) {
		snprintf(c->db0, sizeof(c->db0), "%s", r.db);
		snprintf(c->db, sizeof(c->db), "%s", r.db);
	}
	if ((r.caps & CAP_PLUGIN_AUTH) && r.plugin[0] && strcmp(r.plugin, NATIVE_PLUGIN)) {
		len = auth_switch_build(pkt, sizeof(pkt), NATIVE_PLUGIN, c->scramble, SCRAMBLE_LEN);
		if (len > 0)
			client_send(c, (uint8_t)(seq + 1), pkt, (size_t)len);
		c->st = C_SWITCH;
		return;
	}
	check_password(c, r.auth, r.auth_len, (uint8_t)(seq + 1));
}

/* Handles the whole packets the client sent, while it may. */
static void client_process(struct client *c)
{
	struct proxy_engine *e = c->w->e;

	if (c->in_process || c->dead)
		return;
	c->in_process = true;
	while (!c->closing && !c->dead && c->st != C_BUSY) {
		size_t total, payload;
		uint8_t seq, *p = c->in.d + c->in.off;
		/* before login, only a handshake response or an auth switch
		 * reply can come: an anonymous client does not get
		 * max_packet_size bytes buffered */
		size_t max = c->st == C_IDLE ? e->max_packet : PREAUTH_MAX_PACKET;
		int r = pkt_whole(p, buf_used(&c->in), max, &total, &payload, &seq);

		if (r == 0)
			break;
		if (r < 0) {
			client_err(c, 1, 1153, "08S01",
			           "Got a packet bigger than 'max_allowed_packet' bytes");
			c->closing = true;
			break;
		}
		pkt_join(p, p, payload);
		if (c->st == C_IDLE)
			client_command(c, p, payload);
		else
			client_auth(c, p, payload, seq);
		if (!c->dead)
			buf_consume(&c->in, total);
	}
	c->in_process = false;
	if (c->dead)
		return;
	buf_trim(&c->in);
	if (client_flush(c) < 0 || c->closing)
		client_close(c);
}

static void client_event(struct client *c, uint32_t events)
{
	if (events & EPOLLOUT) {
		if (client_flush(c) < 0) {
			client_close(c);
			return;
		}
		/* A backend paused for this client's buffer may go on. */
		if (c->cur && !c->cur->dead && buf_used(&c->out) < OUT_HIGH_WATER) {
			bconn_pump(c->cur);
			if (c->dead)
				return;
		}
	}
	if (!(events & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP)))
		return;
	if (!client_reads(c)) {
		/* reading paused: an error or hangup (always reported) would
		 * come back at once; the client is gone anyway */
		if (events & (EPOLLERR | EPOLLHUP))
			client_close(c);
		else
			client_update(c);
		return;
	}
	for (;;) {
		if (buf_reserve(&c->in, 16384) < 0) {
			client_close(c);
			return;
		}
		ssize_t n = recv(c->fd, c->in.d + c->in.len, c->in.cap - c->in.len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			client_close(c);
			return;
		}
		c->in.len += (size_t)n;
		if (c->in.len < c->in.cap || !client_reads(c))
			break;
	}
	client_process(c);
	if (!c->dead)
		client_update(c);
}

/* ---- workers ---- */

static void refuse(int fd, uint16_t code, const char *msg)
{
	uint8_t pkt[256];
	int n = err_build(pkt + PKT_HDR, sizeof(pkt) - PKT_HDR, code, "08004", msg);

	if (n > 0) {
		pkt_put_hdr(pkt, (uint32_t)n, 0);
		if (send(fd, pkt, (size_t)n + PKT_HDR, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			log_debug("proxy: refusing a client: %s", strerror(errno));
	}
	close(fd);
}

/*
 * One client per call: the listener is level-triggered, so a backlog is
 * reported again by the next epoll_wait, while accepting on until EAGAIN
 * cost a failing accept4 on most wakeups (connection storms are one
 * connection per wakeup). TCP_NODELAY comes from the listener.
 */
static void accept_clients(struct worker *w)
{
	struct proxy_engine *e = w->e;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct client *c;
	int fd;

	do
		fd = accept4(w->lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			log_warn("proxy: accept: %s", strerror(errno));
		return;
	}
	if (atomic_fetch_add(&e->nclients, 1) >= e->max_clients) {
		atomic_fetch_sub(&e->nclients, 1);
		refuse(fd, 1040, "Too many connections");
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		atomic_fetch_sub(&e->nclients, 1);
		refuse(fd, 1041, "Out of memory");
		return;
	}
	c->type = EV_CLIENT;
	c->w = w;
	c->fd = fd;
	c->st = C_HANDSHAKE;
	if (ss.ss_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, c->host,
		          sizeof(c->host));
	else
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, c->host,
		          sizeof(c->host));
	if (!strncmp(c->host, "::ffff:", 7))
		memmove(c->host, c->host + 7, strlen(c->host + 7) + 1);
	c->events = EPOLLIN | EPOLLRDHUP;
	if (scramble_fill_pooled(&w->scrambles, c->scramble) < 0 ||
	    ep_add(w, fd, c->events, c) < 0) {
		log_warn("proxy: a new client: %s", strerror(errno));
		atomic_fetch_sub(&e->nclients, 1);
		close(fd);
		free(c);
		return;
	}
	c->next = w->clients;
	if (w->clients)
		w->clients->prev = c;
	w->clients = c;
	c->deadline_ms = now_ms() + (uint64_t)e->handshake_timeout_ms;
	send_handshake(c);
	if (client_flush(c) < 0)
		client_close(c);
}

/* Opens what pool_min_idle asks for: per usable backend and user with a
 * plain password, idle plus logging-in connections up to this worker's
 * share. Refills after use, since a taken connection leaves the count. */
static void pool_warm(struct worker *w)
{
	int min = min_idle_share(w);
	const struct topology *t;

	if (min <= 0 || w->nghosts == 0)
		return;
	t = topo_current();
	if (!t)
		return;
	for (size_t i = 0; i < t->nbackends; i++) {
		const struct topo_backend *be = &t->backends[i];
		/* sessions waiting for a slot come first */
		if (!topo_backend_usable(be) || be->id >= PROXY_MAX_IDS ||
		    atomic_load(&w->e->be_waiting[be->id]) > 0)
			continue;
		for (size_t g = 0; g < w->nghosts; g++) {
			struct client *gh = &w->ghosts[g];
			int have = pool_count_user(w, be->id, gh->user) + gh->warming[be->id];
			for (; have < min; have++) {
				bool full;
				struct bconn *b =
				    bconn_open(gh, be, be->role == ROLE_WRITER, &full);
				if (!b)
					break;
				gh->warming[be->id]++;
				b->warm_next = w->warming;
				w->warming = b;
			}
		}
	}
	topo_put(t);
}

static int ghosts_init(struct worker *w)
{
	struct proxy_engine *e = w->e;

	w->ghosts = calloc(e->nusers ? e->nusers : 1, sizeof(*w->ghosts));
	if (!w->ghosts)
		return -1;
	for (size_t i = 0; i < e->nusers; i++) {
		struct client *g = &w->ghosts[w->nghosts];
		if (!e->users[i].has_password)
			continue;
		g->warming = calloc(PROXY_MAX_IDS, sizeof(*g->warming));
		if (!g->warming)
			return -1;
		g->ghost = true;
		g->w = w;
		g->fd = -1;
		snprintf(g->user, sizeof(g->user), "%s", e->users[i].name);
		memcpy(g->stage1, e->users[i].stage1, SHA1_LEN);
		g->caps = PROXY_CAPS & ~(CAP_CONNECT_ATTRS | CAP_CONNECT_WITH_DB);
		g->charset = 45; /* utf8mb4_general_ci, the MariaDB client's default */
		w->nghosts++;
	}
	return 0;
}

static void ghosts_free(struct worker *w)
{
	for (size_t i = 0; w->ghosts && i < w->nghosts; i++)
		free(w->ghosts[i].warming);
	free(w->ghosts);
	w->ghosts = NULL;
	w->nghosts = 0;
}

/* Drops clients that did not finish the handshake in time. */
static void sweep(struct worker *w)
{
	uint64_t now = now_ms();

	if (now - w->last_sweep < SWEEP_MS)
		return;
	w->last_sweep = now;
	pool_sweep(w, now);
	/* waits run out; the rest try again (a wake from another worker is
	 * not needed for progress, only for speed) */
	wait_expire(w, now);
	if (w->wait_head)
		waiters_run(w);
	pool_yield(w);
	pool_warm(w);
	for (struct client *c = w->clients, *next; c; c = next) {
		next = c->next;
		if ((c->st == C_HANDSHAKE || c->st == C_SWITCH) && now > c->deadline_ms) {
			log_debug("proxy: handshake timeout from %s", c->host);
			client_close(c);
		}
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct epoll_event evs[128];

	while (!w->stop) {
		int n = epoll_wait(w->ep, evs, 128, SWEEP_MS);
		if (n < 0 && errno != EINTR) {
			log_error("proxy: epoll_wait: %s", strerror(errno));
			break;
		}
		for (int i = 0; i < n; i++) {
			enum ev_type *t = evs[i].data.ptr;
			uint32_t ev = evs[i].events;
			uint64_t v;

			switch (*t) {
			case EV_LISTEN:
				accept_clients(w);
				break;
			case EV_WAKE:
				if (read(w->wakefd, &v, sizeof(v)) < 0)
					log_debug("proxy: wake: %s", strerror(errno));
				w->kick = true; /* another worker freed a slot, or waits */
				break;
			case EV_CLIENT: {
				struct client *c = (struct client *)t;
				if (!c->dead)
					client_event(c, ev);
				break;
			}
			case EV_BACKEND: {
				struct bconn *b = (struct bconn *)t;
				if (!b->dead && b->pooled)
					pool_event(b, ev);
				else if (!b->dead)
					bconn_event(b, ev);
				break;
			}
			}
		}
		if (w->kick && !w->stop) {
			w->kick = false;
			if (w->wait_head)
				waiters_run(w);
			pool_yield(w);
		}
		reap(w);
		sweep(w);
	}
	while (w->clients)
		client_close(w->clients);
	while (w->pool)
		bconn_free(w->pool);
	while (w->warming)
		bconn_free(w->warming);
	reap(w);
	return NULL;
}

static int listen_on(const char *addr, uint16_t port, char *err, size_t errlen)
{
	struct sockaddr_storage ss = {0};
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	socklen_t sl;
	int fd, one = 1, zero = 0;

	if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		sl = sizeof(*s4);
	} else if (inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		sl = sizeof(*s6);
	} else {
		snprintf(err, errlen, "proxy: bad listen address %s", addr);
		return -1;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0 ||
	    /* accepted clients inherit it: no setsockopt per connection */
	    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0 ||
	    (ss.ss_family == AF_INET6 &&
	     setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)) < 0) ||
	    bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, 4096) < 0) {
		snprintf(err, errlen, "proxy: listen on [%s]:%u: %s", addr, port, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static void copy_users(struct proxy_engine *e, const struct config *cfg)
{
	e->users = calloc(cfg->nusers ? cfg->nusers : 1, sizeof(*e->users));
	if (!e->users)
		return;
	for (size_t i = 0; i < cfg->nusers; i++) {
		snprintf(e->users[i].name, sizeof(e->users[i].name), "%s", cfg->users[i].name);
		memcpy(e->users[i].stage2, cfg->users[i].hash_stage2, SHA1_LEN);
		e->users[i].has_password = cfg->users[i].has_password;
		if (cfg->users[i].has_password)
			SHA1((const unsigned char *)cfg->users[i].password,
			     strlen(cfg->users[i].password), e->users[i].stage1);
		e->users[i].has_hash = cfg->users[i].has_hash;
	}
	e->nusers = cfg->nusers;
}

void proxy_engine_reload(struct proxy_engine *e, const struct config *cfg)
{
	atomic_store(&e->ryw_mode, (int)cfg->read_your_writes);
	atomic_store(&e->ryw_ms, cfg->read_your_writes_ms);
	atomic_store(&e->pool_max, cfg->pool_max_per_backend);
	atomic_store(&e->pool_idle_ms, cfg->pool_idle_timeout_ms);
	atomic_store(&e->pool_min_idle, cfg->pool_min_idle);
	atomic_store(&e->trust_routines, cfg->trust_routine_characteristics);
}

void proxy_engine_stop(struct proxy_engine *e)
{
	uint64_t one = 1;

	if (!e)
		return;
	for (int i = 0; i < e->nworkers; i++) {
		struct worker *w = &e->workers[i];
		if (!w->started)
			continue;
		w->stop = true;
		if (write(w->wakefd, &one, sizeof(one)) < 0)
			log_warn("proxy: waking a worker: %s", strerror(errno));
		pthread_join(w->th, NULL);
	}
	rt_loader_stop(e->routines);
	for (int i = 0; i < e->nworkers; i++) {
		struct worker *w = &e->workers[i];
		rt_snap_put(w->rt);
		ghosts_free(w);
		if (w->lfd >= 0)
			close(w->lfd);
		if (w->wakefd >= 0)
			close(w->wakefd);
		if (w->ep >= 0)
			close(w->ep);
	}
	free(e->workers);
	free(e->users);
	free(e);
}

static int worker_init(struct worker *w, struct proxy_engine *e, const char *addr, uint16_t port,
                       char *err, size_t errlen)
{
	w->e = e;
	w->ltype = EV_LISTEN;
	w->wtype = EV_WAKE;
	w->rnd = (unsigned)(now_ms() ^ (uintptr_t)w);
	w->ep = epoll_create1(EPOLL_CLOEXEC);
	w->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->ep < 0 || w->wakefd < 0) {
		snprintf(err, errlen, "proxy: epoll/eventfd: %s", strerror(errno));
		return -1;
	}
	if (ghosts_init(w) < 0) {
		snprintf(err, errlen, "proxy: out of memory");
		return -1;
	}
	w->lfd = listen_on(addr, port, err, errlen);
	if (w->lfd < 0)
		return -1;
	if (ep_add(w, w->lfd, EPOLLIN, &w->ltype) < 0 ||
	    ep_add(w, w->wakefd, EPOLLIN, &w->wtype) < 0) {
		snprintf(err, errlen, "proxy: epoll_ctl: %s", strerror(errno));
		return -1;
	}
	return 0;
}

struct proxy_engine *proxy_engine_start(const struct config *cfg, const char *addr, uint16_t port,
                                        char *err, size_t errlen)
{
	struct proxy_engine *e = calloc(1, sizeof(*e));
	int n = cfg->workers > 0 ? cfg->workers : get_nprocs();

	if (!e) {
		snprintf(err, errlen, "proxy: out of memory");
		return NULL;
	}
	copy_users(e, cfg);
	e->max_clients = cfg->max_client_connections;
	e->handshake_timeout_ms = cfg->handshake_timeout_ms;
	e->max_packet = cfg->max_packet_size;
	e->next_conn_id = 1;
	/* test-only, not config keys: tests make them small */
	e->ps_per_conn = (uint32_t)test_env_uint("MYSTEER_TEST_PS_PER_CONN", PS_PER_CONN, 1000000);
	e->ps_per_session =
	    (uint32_t)test_env_uint("MYSTEER_TEST_PS_PER_SESSION", PS_PER_SESSION, 1000000);
	e->wait_ms = (uint32_t)test_env_uint("MYSTEER_TEST_POOL_WAIT_MS", POOL_WAIT_MS, 1000000);
	proxy_engine_reload(e, cfg);
	e->workers = calloc((size_t)n, sizeof(*e->workers));
	if (!e->workers || !e->users) {
		snprintf(err, errlen, "proxy: out of memory");
		proxy_engine_stop(e);
		return NULL;
	}
	e->nworkers = n;
	e->routines = rt_loader_start(cfg->probe_user, cfg->probe_password,
	                              (unsigned)(cfg->interval_ms > 0 ? cfg->interval_ms : 1000));
	for (int i = 0; i < n; i++)
		e->workers[i].ep = e->workers[i].lfd = e->workers[i].wakefd = -1;
	for (int i = 0; i < n; i++) {
		struct worker *w = &e->workers[i];
		if (worker_init(w, e, addr, port, err, errlen) < 0) {
			proxy_engine_stop(e);
			return NULL;
		}
		if (pthread_create(&w->th, NULL, worker_main, w) != 0) {
			snprintf(err, errlen, "proxy: cannot start a worker thread");
			proxy_engine_stop(e);
			return NULL;
		}
		w->started = true;
	}
	log_info("proxy: listening on [%s]:%u with %d worker(s)", addr, port, n);
	return e;
}

/* Backend connections serving a client now: idle pooled ones and warm ones
 * still logging in are not "active". The counters are read one by one while
 * workers move connections, so clamp a transient negative. */
static int in_use(struct proxy_engine *e, uint32_t id)
{
	int n = (int)atomic_load(&e->be_active[id]) - atomic_load(&e->be_idle[id]) -
	        atomic_load(&e->be_warming[id]);
	return n < 0 ? 0 : n;
}

void proxy_engine_counters(struct proxy_engine *e, uint32_t id, struct backend_counters *bc)
{
	if (!e || id >= PROXY_MAX_IDS)
		return;
	bc->active += in_use(e, id);
	bc->steered += atomic_load(&e->be_opened[id]);
	bc->connect_failures += atomic_load(&e->be_failed[id]);
	bc->open += atomic_load(&e->be_active[id]) + (uint64_t)atomic_load(&e->be_waiting[id]);
}

void proxy_engine_counters_reset(struct proxy_engine *e, uint32_t id)
{
	if (!e || id >= PROXY_MAX_IDS)
		return;
	atomic_store(&e->be_opened[id], 0);
	atomic_store(&e->be_failed[id], 0);
	atomic_store(&e->be_connects[id], 0);
	atomic_store(&e->be_reused[id], 0);
	atomic_store(&e->be_resets[id], 0);
	atomic_store(&e->be_clean[id], 0);
	atomic_store(&e->be_waits[id], 0);
	atomic_store(&e->be_wait_timeouts[id], 0);
}

void proxy_engine_stats(struct proxy_engine *e, int *clients, int *backend_conns, int *workers)
{
	*clients = e ? atomic_load(&e->nclients) : 0;
	*backend_conns = e ? atomic_load(&e->nbconns) : 0;
	*workers = e ? e->nworkers : 0;
}

void proxy_engine_pool(struct proxy_engine *e, uint32_t id, struct proxy_pool_stats *ps)
{
	memset(ps, 0, sizeof(*ps));
	if (!e || id >= PROXY_MAX_IDS)
		return;
	ps->idle = atomic_load(&e->be_idle[id]);
	ps->in_use = in_use(e, id);
	ps->opened = atomic_load(&e->be_connects[id]);
	ps->reused = atomic_load(&e->be_reused[id]);
	ps->resets = atomic_load(&e->be_resets[id]);
	ps->clean = atomic_load(&e->be_clean[id]);
	ps->open = (int)atomic_load(&e->be_active[id]);
	ps->max = atomic_load(&e->pool_max);
	ps->waiting = atomic_load(&e->be_waiting[id]);
	ps->waits = atomic_load(&e->be_waits[id]);
	ps->wait_timeouts = atomic_load(&e->be_wait_timeouts[id]);
}
