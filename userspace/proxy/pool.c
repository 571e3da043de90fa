/*
 * pool.c - backend connections between sessions: the pool_max_per_backend
 * cap (a slot reserved in be_active before a connection opens, given back
 * when it closes), the worker's pool of idle connections (park with or
 * without COM_RESET_CONNECTION, take, sweep), the warm connections
 * pool_min_idle keeps logging in, and pool_conn_get, which gives a session a
 * connection or tells it to wait (wait.c). Separate from the sessions: a
 * pooled connection belongs to no client.
 */
#define _GNU_SOURCE
#include "proxy/engine_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the per-backend cap (pool_max_per_backend) ---- */

/*
 * Reserves one of the backend's pool_max_per_backend slots before a new
 * connection is opened: be_active counts every open connection of the proxy
 * to it (connecting, logging in, warm, idle, busy) over all workers, and is
 * given back when the connection is freed. false: the backend is at its cap.
 * Ids beyond PROXY_MAX_IDS are not counted, hence not capped.
 */
bool pool_slot_take(struct proxy_engine *e, uint32_t id)
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
 * (wait_yield). */
void pool_wake_others(struct worker *w)
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
void pool_slot_release(struct worker *w, uint32_t id)
{
	if (id >= PROXY_MAX_IDS)
		return;
	atomic_fetch_sub(&w->e->be_active[id], 1);
	w->kick = true;
	if (!w->stop && atomic_load(&w->e->be_waiting[id]) > w->wait_n[id])
		pool_wake_others(w);
}

void pool_warm_unlink(struct bconn *b)
{
	for (struct bconn **pp = &b->w->warming; *pp; pp = &(*pp)->warm_next)
		if (*pp == b) {
			*pp = b->warm_next;
			break;
		}
}

/* ---- pool ---- */

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
bool pool_park(struct client *c, struct bconn *b)
{
	struct worker *w = c->w;
	static const uint8_t reset[1] = {COM_RESET_CONNECTION};
	int max = w->e->pool_max / (w->e->nworkers ? w->e->nworkers : 1);
	bool must_reset = b->dirty || b->trans_open || b->keep;
	uint32_t id = b->backend_id;
	size_t hist_upto = b->hist_applied;

	/* Closed rather than kept idle: not reusable as it is, the pool full,
	 * over a pool_max_per_backend lowered by a reload, or a session of
	 * another worker waits for a slot of this backend longer than any of
	 * this one (pools are per worker: an idle connection here would not
	 * serve it, its slot will). */
	if (b->st != B_READY || b->awaiting || b->internal || b->gtid_wait || b->frag_left ||
	    buf_used(&b->in) || max < 1 || pool_count(w, id) >= max ||
	    (id < PROXY_MAX_IDS &&
	     (atomic_load(&w->e->be_active[id]) > (uint64_t)atomic_load(&w->e->pool_max) ||
	      wait_older_elsewhere(w, id, atomic_load(&w->oldest[id]))))) {
		bconn_free(b);
		return false;
	}
	if (c->wconn == b)
		c->wconn = NULL;
	if (c->rconn == b)
		c->rconn = NULL;
	stmt_forget_conn(c, b);
	b->c = NULL;
	snprintf(b->pool_user, sizeof(b->pool_user), "%s", c->user);
	b->pool_caps = c->caps;
	b->pool_ext_caps = c->ext_caps;
	b->pool_charset = c->charset;
	b->hist_applied = 0; /* a clean connection never had the history replayed */
	b->lid_gen = 0;
	b->lid_held = b->lid_ok_set = false;
	free(b->hist_img);
	b->hist_img = NULL;
	/* only the history replayed: kept as it is for a session with the same
	 * one (pool_take), else reset like any other */
	if (!must_reset && b->hist_dirty) {
		b->hist_img = hist_upto > 0 ? hist_image(c, hist_upto, &b->hist_img_len) : NULL;
		if (b->hist_img) {
			b->hist_fp = hist_fingerprint(c, hist_upto);
			b->hist_applied = hist_upto; /* for pool_reclaim_last: no second replay */
		} else {
			must_reset = true;
		}
	}
	if (must_reset && buf_put_packet(&b->out, 0, reset, sizeof(reset)) < 0) {
		bconn_free(b);
		return false;
	}
	if (must_reset) {
		b->lid_touched = b->lid_foreign = false; /* the reset sets LAST_INSERT_ID() to 0 */
		b->pool_has_db = c->db[0] != 0;
		snprintf(b->schema, sizeof(b->schema), "%s", c->db);
		stmt_cache_clear(b, false); /* the reset closes its prepared statements */
		ryw_conn_reset(b);
		b->tracking_state = false;
		b->prep_key = NULL;
		b->trans_open = false; /* the reset rolls back and restores autocommit */
		b->keep = false;
		b->keep_why = NULL;
		b->dirty = false;
		b->hist_dirty = false;
		b->has_cursor = false; /* the reset closes the statements and their cursors */
		b->resetting = true;
	} else {
		/* the login schema, or the COM_INIT_DB to it that pool_take sent;
		 * last_gtid tracking, the proxy's own, stays on; a non-zero
		 * LAST_INSERT_ID() is this session's, which mux_lid_prologue replaces
		 * for the next */
		b->lid_foreign = b->lid_touched;
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
void pool_event(struct bconn *b, uint32_t events)
{
	size_t total, payload;
	uint8_t seq;
	int r;

	/* a TLS read waited for the socket to take a write, or back */
	if ((b->tls_want & EPOLLOUT) && (events & EPOLLOUT))
		events |= EPOLLIN;
	if ((b->tls_want & EPOLLIN) && (events & EPOLLIN))
		events |= EPOLLOUT;
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
	free(b->hist_img); /* matched (pool_take) or its own (pool_reclaim_last) */
	b->hist_img = NULL;
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
bool pool_reclaim_last(struct client *c)
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

	struct bconn **found = NULL, **replay = NULL;
	uint64_t now = now_ms();
	/* a session without history takes no connection that has one */
	uint64_t fp = c->nhist ? hist_fingerprint(c, c->nhist) : 0;

	/* The connection this session gave back moments ago, when it is idle
	 * still: a session that keeps sending keeps one connection (and the
	 * server one thread), as without multiplexing. Else the one parked
	 * last, so that connections a quiet load does not need idle out; one
	 * that has the session's history before one it would be replayed on
	 * (which would then leave that connection to sessions without it). */
	for (struct bconn **pp = &w->pool; *pp; pp = &(*pp)->pool_next) {
		struct bconn *b = *pp;
		if (b->backend_id != be->id || b->resetting || b->pool_caps != c->caps ||
		    b->pool_ext_caps != c->ext_caps || b->pool_charset != c->charset ||
		    strcmp(b->pool_user, c->user) || (b->pool_has_db && !c->db0[0]) ||
		    (b->pp && strcmp(b->pp_host, c->host)) ||
		    (b->hist_img && (!c->nhist || !hist_image_matches(c, b, fp))))
			continue;
		if (c->nhist && !b->hist_img) {
			if (!replay)
				replay = pp;
			continue;
		}
		if (!found)
			found = pp;
		if (b->last_owner == c && now - b->parked_ms <= AFFINITY_MS) {
			found = pp;
			break;
		}
	}
	if (!found)
		found = replay;
	if (found) {
		bool has_hist = (*found)->hist_img != NULL;
		struct bconn *b = pool_unlink(c, found);
		if (has_hist) /* the session's history as it is: nothing to replay */
			b->hist_applied = c->nhist;
		b->writer = writer;
		/* the schema survives a reset: set the one this client asked for,
		 * unless the connection is in it already (b->schema: its login's,
		 * the last COM_INIT_DB's, or the session's at a reset park; a
		 * clean one ran nothing that could change it) */
		if (c->db0[0] && strcmp(b->schema, c->db0) != 0) {
			uint8_t pkt[260];
			size_t n = strlen(c->db0);
			/* cached statements were parsed in another schema */
			stmt_cache_clear(b, true);
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
void pool_sweep(struct worker *w, uint64_t now)
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
void pool_warm_park(struct bconn *b)
{
	struct client *g = b->c;
	struct worker *w = b->w;

	if (b->backend_id < PROXY_MAX_IDS) {
		g->warming[b->backend_id]--;
		atomic_fetch_sub(&w->e->be_warming[b->backend_id], 1);
		retry_ok(&g->warm_retry[b->backend_id]);
	}
	pool_warm_unlink(b);
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

/* First come, first served over all workers: a statement that does not
 * wait yet queues behind any session waiting for the backend (one atomic
 * load, 0 but at the cap); a waiting one lets an older waiter of another
 * worker have what comes free (that worker is woken: pool_slot_release,
 * wait_yield). */
static bool must_queue(struct client *c, uint32_t id)
{
	if (id >= PROXY_MAX_IDS)
		return false;
	if (!c->waiting)
		return atomic_load(&c->w->e->be_waiting[id]) > 0;
	return wait_older_elsewhere(c->w, id, c->wait_ticket);
}

/*
 * A connection of be for the session: a pooled one, else a new one within
 * pool_max_per_backend, else (at the cap) a new one in the slot of an idle
 * one that does not fit; else NULL with c->must_wait set: the session waits
 * for a connection of be to be parked or closed. A session does not pass
 * the ones of any worker that already wait for be (must_queue).
 */
struct bconn *pool_conn_get(struct client *c, const struct topo_backend *be, bool writer)
{
	struct worker *w = c->w;
	struct bconn *b, *victim;
	bool full;

	if (must_queue(c, be->id))
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

/* A warm login failed (the caller logs why): the next one to that backend
 * waits, twice as long as the last wait, up to WARM_RETRY_MAX_MS. */
void pool_warm_failed(struct bconn *b)
{
	uint32_t pause;

	if (!b->c || !b->c->ghost || b->backend_id >= PROXY_MAX_IDS)
		return;
	pause =
	    retry_failed(&b->c->warm_retry[b->backend_id], now_ms(), SWEEP_MS, WARM_RETRY_MAX_MS);
	log_info("proxy: warm logins of %s to %s pause for %u ms", b->c->user, b->name, pause);
}

/* Opens what pool_min_idle asks for: per usable backend and user with a
 * plain password, idle plus logging-in connections up to this worker's
 * share. Refills after use, since a taken connection leaves the count. */
void pool_warm(struct worker *w)
{
	int min = min_idle_share(w);
	const struct topology *t;
	uint64_t now = now_ms();

	if (min <= 0 || w->nghosts == 0)
		return;
	t = topo_current();
	if (!t)
		return;
	for (size_t i = 0; i < t->nbackends; i++) {
		const struct topo_backend *be = &t->backends[i];
		/* sessions waiting for a slot come first */
		if (!topo_backend_usable(be) || be->id >= PROXY_MAX_IDS ||
		    atomic_load(&w->e->be_waiting[be->id]) > 0 || engine_backend_pp(w->e, be))
			continue;
		for (size_t g = 0; g < w->nghosts; g++) {
			struct client *gh = &w->ghosts[g];
			int have = pool_count_user(w, be->id, gh->user) + gh->warming[be->id];
			if (!retry_due(&gh->warm_retry[be->id], now))
				continue;
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

int pool_ghosts_init(struct worker *w)
{
	const struct user_table *t = w->users;

	w->ghosts = calloc(t->n ? t->n : 1, sizeof(*w->ghosts));
	if (!w->ghosts)
		return -1;
	for (size_t i = 0; i < t->n; i++) {
		struct client *g = &w->ghosts[w->nghosts];
		if (!t->users[i].has_password)
			continue;
		g->warming = calloc(PROXY_MAX_IDS, sizeof(*g->warming));
		g->warm_retry = calloc(PROXY_MAX_IDS, sizeof(*g->warm_retry));
		if (!g->warming || !g->warm_retry) {
			free(g->warming);
			free(g->warm_retry);
			return -1;
		}
		g->ghost = true;
		g->w = w;
		g->fd = -1;
		snprintf(g->user, sizeof(g->user), "%s", t->users[i].name);
		memcpy(g->stage1, t->users[i].stage1, SHA1_LEN);
		g->empty_pw = t->users[i].empty;
		g->caps = PROXY_CAPS & ~(CAP_CONNECT_ATTRS | CAP_CONNECT_WITH_DB);
		g->ext_caps = PROXY_EXT_CAPS;
		g->charset = 45; /* utf8mb4_general_ci, the MariaDB client's default */
		w->nghosts++;
	}
	return 0;
}

/* The ghosts again, for a new users table (w->users): warm logins in
 * flight are dropped (the next sweep starts them again); a user still there
 * keeps what its ghost learnt of its clients (capabilities, charset). */
int pool_ghosts_renew(struct worker *w)
{
	struct client *old = w->ghosts;
	size_t nold = w->nghosts;
	int rc;

	while (w->warming)
		bconn_free(w->warming);
	w->ghosts = NULL;
	w->nghosts = 0;
	rc = pool_ghosts_init(w);
	for (size_t i = 0; i < w->nghosts; i++)
		for (size_t k = 0; k < nold; k++)
			if (!strcmp(w->ghosts[i].user, old[k].user)) {
				w->ghosts[i].caps = old[k].caps;
				w->ghosts[i].charset = old[k].charset;
			}
	struct client *now = w->ghosts;
	size_t nnow = w->nghosts;
	w->ghosts = old;
	w->nghosts = nold;
	pool_ghosts_free(w);
	w->ghosts = now;
	w->nghosts = nnow;
	return rc;
}

void pool_ghosts_free(struct worker *w)
{
	for (size_t i = 0; w->ghosts && i < w->nghosts; i++) {
		free(w->ghosts[i].warming);
		free(w->ghosts[i].warm_retry);
		explicit_bzero(w->ghosts[i].stage1, SHA1_LEN);
	}
	free(w->ghosts);
	w->ghosts = NULL;
	w->nghosts = 0;
}
