/*
 * route.c - routing: every statement is classified (the classifier's token
 * and flags) and sent to the writer, the session's reader, the connection used
 * last or the READ ONLY transaction's. A connection first replays the session
 * history it has not seen (history.c), in order, before it runs anything
 * else, so a pooled connection becomes the session's own (route_send_cmd).
 * Read-your-writes is ryw.c's, called from here (ryw_keeps_writer,
 * ryw_prologue). Where a statement goes, apart from how a connection is got
 * (pool.c) and what a client sent (client.c).
 */
#define _GNU_SOURCE
#include "proxy/engine_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int readers_of(const struct proxy_engine *e, uint32_t id)
{
	return id < PROXY_MAX_IDS ? readers_count(atomic_load(&e->be_readers[id])) : 0;
}

/* Whether the session has a reader and its id still names the backend it
 * was counted on: the id may have gone to a new backend since
 * (proxy_engine_counters_reset). */
static bool sticky_current(const struct client *c)
{
	if (!c->has_sticky_reader)
		return false;
	return c->sticky_reader >= PROXY_MAX_IDS ||
	       readers_gen(atomic_load(&c->w->e->be_readers[c->sticky_reader])) == c->sticky_gen;
}

void route_reader_release(struct client *c)
{
	if (!c->has_sticky_reader)
		return;
	c->has_sticky_reader = false;
	if (c->sticky_reader >= PROXY_MAX_IDS)
		return;
	_Atomic uint64_t *word = &c->w->e->be_readers[c->sticky_reader];
	uint64_t v = atomic_load(word);
	while (readers_gen(v) == c->sticky_gen && readers_count(v) > 0 &&
	       !atomic_compare_exchange_weak(word, &v, v - 1))
		;
}

/* The session now reads from id: be_readers follows, for least_conn and
 * `mysteerctl status`. */
static void reader_assign(struct client *c, uint32_t id)
{
	route_reader_release(c);
	c->sticky_gen = 0;
	if (id < PROXY_MAX_IDS)
		c->sticky_gen = readers_gen(atomic_fetch_add(&c->w->e->be_readers[id], 1));
	c->sticky_reader = id;
	c->has_sticky_reader = true;
}

/*
 * least_conn: the candidate where one more session makes the fewest per
 * unit of weight, (readers + 1) / weight, ties broken at random. A session
 * keeps its reader for its life, so a weighted random pick over a handful
 * of long-lived sessions (an application's connection pool) often leaves
 * one replica with most of them; counting sessions spreads them as the
 * weights say.
 */
static size_t least_loaded(struct client *c, const struct topology *t, const int *idx, size_t n)
{
	size_t best = 0;
	uint64_t best_load = 0, best_weight = 1;
	unsigned ties = 1; /* candidates as good as best so far: each kept with 1/ties */

	for (size_t i = 0; i < n; i++) {
		const struct topo_backend *b = &t->backends[idx[i]];
		uint64_t load = (uint64_t)readers_of(c->w->e, b->id) + 1,
		         weight = (uint64_t)b->weight;
		if (i > 0) {
			uint64_t mine = load * best_weight, theirs = best_load * weight;
			if (mine > theirs || (mine == theirs && rand_r(&c->w->rnd) % ++ties != 0))
				continue;
			if (mine < theirs)
				ties = 1;
		}
		best = i;
		best_load = load;
		best_weight = weight;
	}
	return best;
}

static const struct topo_backend *pick_reader(struct client *c, const struct topology *t)
{
	int idx[64], total = 0, r;
	size_t n = 0;

	for (size_t i = 0; i < t->nbackends && n < 64; i++) {
		const struct topo_backend *b = &t->backends[i];
		if (!topo_reader_usable(b))
			continue;
		if (c->has_exclude && b->id == c->exclude_id)
			continue;
		idx[n++] = (int)i;
		total += b->weight;
	}
	if (n == 0)
		return NULL;
	bool sticky = sticky_current(c);
	for (size_t i = 0; sticky && i < n; i++)
		if (t->backends[idx[i]].id == c->sticky_reader)
			return &t->backends[idx[i]];
	size_t pick = n - 1;
	if (atomic_load(&c->w->e->least_conn)) {
		pick = least_loaded(c, t, idx, n);
	} else {
		r = (int)(rand_r(&c->w->rnd) % (unsigned)total);
		for (size_t i = 0; i < n; i++) {
			r -= t->backends[idx[i]].weight;
			if (r < 0) {
				pick = i;
				break;
			}
		}
	}
	reader_assign(c, t->backends[idx[pick]].id);
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
			return topo_reader_usable(b) && !(c->has_exclude && b->id == c->exclude_id)
			           ? b
			           : NULL;
	}
	return NULL;
}

static bool still_serves(const struct topology *t, uint32_t id, enum be_role role)
{
	for (size_t i = 0; i < t->nbackends; i++)
		if (t->backends[i].id == id)
			return t->backends[i].role == role && topo_backend_usable(&t->backends[i]);
	return false;
}

/* Drops held connections to backends that lost their role, where the session
 * may move (not inside a transaction, nor with state only that server has).
 * A writer that refused a statement as read-only (sw_fence) counts as one
 * that lost it, before the topology says so. */
static void follow_topology(struct client *c, const struct topology *t)
{
	const struct topo_backend *w = NULL;

	if (c->wconn)
		w = sw_writer(c->w->e, t);
	if (c->wconn && !c->in_trans && !c->pin_writer && !c->autocommit_off &&
	    (!still_serves(t, c->wconn->backend_id, ROLE_WRITER) || !w ||
	     w->id != c->wconn->backend_id))
		bconn_free(c->wconn);
	if (c->rconn && c->trx_conn != c->rconn &&
	    !still_serves(t, c->rconn->backend_id, ROLE_READER))
		bconn_free(c->rconn);
}

void route_pin_writer(struct client *c, const char *why)
{
	if (!c->pin_writer) {
		log_debug("proxy: a session of %s stays on the writer from now on: %s", c->user,
		          why);
		c->pin_why = why;
	}
	c->pin_writer = true;
}

const char *route_writer_held_for(const struct client *c, const struct bconn *b)
{
	if (c->autocommit_off)
		return "a transaction with autocommit off";
	if (c->in_trans)
		return "an open transaction";
	if (b->has_cursor)
		return "an open cursor";
	if (c->pin_writer)
		return c->pin_why ? c->pin_why : "session state only the writer has";
	if (b->keep)
		return b->keep_why ? b->keep_why : "session state only that connection has";
	return NULL;
}

bool route_demoted(struct client *c, const struct topology *t, bool in_cmd)
{
	struct bconn *b = c->wconn;
	const char *why, *rp_why;
	char msg[512];

	if (!b || !t || c->ghost || c->shedding || c->dead)
		return false;
	/* a writer drained keeps its sessions: only another role counts */
	for (size_t i = 0; i < t->nbackends; i++)
		if (t->backends[i].id == b->backend_id && t->backends[i].role == ROLE_WRITER)
			return false;
	why = route_writer_held_for(c, b);
	if (!why)
		return false;
	/* a transaction that holds nothing but its BEGIN starts again on the
	 * next writer (switchover_buffer_ms) */
	if (c->sw_only_begin && c->in_trans && !c->autocommit_off && !c->pin_writer && !b->keep &&
	    !b->has_cursor && atomic_load(&c->w->e->sw_ms) > 0) {
		log_debug("proxy: %s is no longer the writer: a session of %s begins its "
		          "transaction again on the next one",
		          b->name, c->user);
		bconn_free(b);
		c->sw_replay_begin = true;
		return false;
	}
	/* a transaction with statements: replayed on the next writer */
	if (rp_demoted(c, b, &rp_why))
		return false;
	log_info("proxy: %s is no longer the writer: a session of %s from %s that held %s "
	         "there is closed",
	         b->name, c->user, c->host, why);
	snprintf(msg, sizeof(msg),
	         "Connection was killed (mysteer: %s is no longer the writer, and this session "
	         "held %s there%s%s; reconnect to go on with the new writer)",
	         b->name, why, rp_why ? "; transaction replay: " : "", rp_why ? rp_why : "");
	bconn_free(b);
	if (in_cmd) {
		/* route_cmd: the command is refused, then the session ends */
		wait_dequeue(c);
		sw_dequeue(c);
		client_cmd_fail_state(c, 1927, "70100", msg);
		c->closing = true;
	} else {
		client_shed(c, 1927, "70100", msg);
	}
	return true;
}

static void no_writer_msg(const struct topology *t, char *msg, size_t cap)
{
	size_t off;

	if (!t) {
		snprintf(msg, cap, "mysteer: no writer: no topology published yet");
		return;
	}
	if (t->fence[0]) {
		snprintf(msg, cap, "mysteer: no writer: writes fenced on this host: %s", t->fence);
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
	be = t ? sw_writer(c->w->e, t) : NULL;
	if (!be) {
		/* a switchover: the statement waits for the next writer */
		if (sw_may_wait(c)) {
			c->sw_must_wait = true;
			return NULL;
		}
		no_writer_msg(t, msg, cap);
		return NULL;
	}
	c->wconn = pool_conn_get(c, be, true);
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
		c->rconn = pool_conn_get(c, be, false);
	if (c->rconn)
		return c->rconn;
	if (c->must_wait)
		return NULL; /* the read waits for the reader it was given */
	if (c->has_exclude && c->wconn && c->wconn->backend_id == c->exclude_id)
		bconn_free(c->wconn);
	return get_writer(c, t, msg, cap); /* no live reader: the writer stands in */
}

/*
 * A connection of the session to backend target_id (the proxy's KILL QUERY,
 * ops.c): the session's writer or reader connection when it is there, else
 * the writer's, else one of that backend taken as the session's reader
 * connection for this command (mux_next gave back the one it held, unless
 * the session's state is on it).
 */
static struct bconn *get_target(struct client *c, const struct topology *t, char *msg, size_t cap)
{
	const struct topo_backend *be = NULL;
	const struct topo_backend *w = t ? topo_usable_writer(t) : NULL;

	if (c->wconn && c->wconn->backend_id == c->target_id)
		return c->wconn;
	if (c->rconn && c->rconn->backend_id == c->target_id)
		return c->rconn;
	if (w && w->id == c->target_id)
		return get_writer(c, t, msg, cap);
	for (size_t i = 0; t && i < t->nbackends; i++)
		if (t->backends[i].id == c->target_id && topo_backend_usable(&t->backends[i]))
			be = &t->backends[i];
	if (!be) {
		snprintf(msg, cap, "mysteer: the backend of that session's statement is gone");
		return NULL;
	}
	if (c->rconn) {
		snprintf(msg, cap,
		         "mysteer: this session holds a reader connection (a transaction): KILL "
		         "of a statement on another reader cannot run from it now");
		return NULL;
	}
	c->rconn = pool_conn_get(c, be, false);
	if (!c->rconn && !c->must_wait)
		snprintf(msg, cap, "mysteer: cannot connect to %s", be->name);
	return c->rconn;
}

/* Queues a statement of the proxy's own: its answer is not the client's. */
int route_queue_internal(struct bconn *b, const char *sql)
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
 *   mux_state_pins(). Needs CLIENT_SESSION_TRACK on the connection.
 * - read_your_writes = gtid: last_gtid in session_track_system_variables, so
 *   the writer's OK packets carry the session's last GTID.
 */
static int track_prologue(const struct client *c, struct bconn *b)
{
	/* before its login the connection's caps are not known yet: session
	 * tracking is asked for always, and had where the server has it
	 * (bconn_login) */
	uint32_t caps = b->st == B_READY ? b->caps : c->caps | CAP_SESSION_TRACK;
	bool state = !b->tracking_state && (caps & CAP_SESSION_TRACK);
	bool gtid = ryw_track_wanted(c, b);
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
	return route_queue_internal(b, q);
}

/* Queues the session history this connection has not seen, then the command. */
int route_send_cmd(struct client *c, struct bconn *b)
{
	size_t upto = c->cur_hist ? c->nhist - 1 : c->nhist;
	const uint8_t *p = c->cmd.d + c->cmd.off;
	size_t n = buf_used(&c->cmd);
	/* a FETCH reads the rows of a cursor open on b and needs nothing of
	 * the session: the history is replayed before the next other command
	 * (stmt_cache_clear_for_state keeps the cursor's statement then) */
	bool fetch = n > 0 && p[0] == COM_STMT_FETCH;
	uint32_t xid;

	/* A replica catches up with the session's last write before anything
	 * of the session runs there, its history too: a `USE db` replayed
	 * before the replica has the schema fails, and the read would then run
	 * in another schema. The command comes back here once it has waited. */
	int r = ryw_prologue(c, b);
	if (r != 0)
		return r < 0 ? -1 : bconn_flush(b);
	b->prep_key = NULL;
	/* the history changes how the server may parse: the cached statements
	 * were prepared without it (a clean connection has none replayed) */
	if (!fetch && b->hist_applied < upto && b->nbst > 0)
		stmt_cache_clear_for_state(c, b);
	while (!fetch && b->hist_applied < upto) {
		struct hist *h = &c->hist[b->hist_applied++];
		if (buf_put_packet(&b->out, 0, h->p, h->n) < 0)
			return -1;
		b->internal++;
		b->hist_dirty = true;
		answer_tracking_replaced(b, h->p, h->n);
	}
	if (!fetch && (track_prologue(c, b) < 0 || mux_lid_prologue(c, b) < 0))
		return -1;
	/* the session's transaction, which held only its BEGIN, begins again
	 * here (its old writer connection went: route_demoted, sw_take_back).
	 * The client's answer is the command's own. */
	if (!fetch && b->writer && c->sw_replay_begin && buf_used(&c->sw_begin) > 0) {
		if (buf_put_packet(&b->out, 0, c->sw_begin.d + c->sw_begin.off,
		                   buf_used(&c->sw_begin)) < 0)
			return -1;
		b->internal++;
		c->sw_replay_begin = false;
	}
	/* the session's transaction, whose writer connection was lost, runs
	 * again here first: the command goes once every result matched */
	if (!fetch) {
		int r = rp_prologue(c, b);
		if (r != 0)
			return r < 0 ? -1 : bconn_flush(b);
	}
	if (c->cur_ps && p[0] == COM_STMT_EXECUTE) {
		struct bstmt *e;
		if (stmt_queue_prereqs(c, b, &xid, &e) < 0 ||
		    stmt_build_execute(c, e, xid, &p, &n) < 0)
			return -1;
	} else if (c->cur_ps && p[0] == COM_STMT_PREPARE && !stmt_cache_find(b, c->cur_ps->key)) {
		stmt_cache_make_room(b);
	}
	if (buf_put_packet(&b->out, 0, p, n) < 0)
		return -1;
	if (c->cur_hist) {
		answer_tracking_replaced(b, p, n);
		b->hist_applied = c->nhist;
	}
	b->sent_pending = true;
	b->sent_us = 0;
	b->state_changed = false;
	b->rp_sum = RP_SUM0;
	b->rp_frag = false;
	b->answer_ok = false;
	b->state_tracked = b->tracking_state;
	bconn_expect(c, b, bconn_next_kind(b), true);
	ops_sess_running(c, b);
	return bconn_flush(b);
}

/* Sends c->cmd where c->route says. On failure the client has its ERR and
 * the command is over (c->st is C_IDLE again). */
void route_cmd(struct client *c)
{
	const struct topology *t = topo_current();
	struct bconn *b = NULL;
	char msg[512] = "mysteer: no backend available";

	c->must_wait = false;
	c->sw_must_wait = false;
	if (t && route_demoted(c, t, true)) {
		topo_put(t);
		return;
	}
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
	case R_TARGET:
		b = get_target(c, t, msg, sizeof(msg));
		break;
	}
	if (t)
		topo_put(t);
	if (!b && c->must_wait) {
		sw_dequeue(c);
		wait_enqueue(c);
		return;
	}
	if (!b && c->sw_must_wait) {
		wait_dequeue(c);
		sw_enqueue(c);
		return;
	}
	wait_dequeue(c);
	sw_dequeue(c);
	if (!b && c->rp_pending && c->wconn == NULL) {
		rp_no_writer(c, msg);
		return;
	}
	if (!b) {
		client_cmd_fail(c, 1105, msg);
		return;
	}
	if (route_send_cmd(c, b) < 0)
		bconn_fail(b, "write failed");
}

/* Sets c->route (and the session flags) for a COM_QUERY. */
void route_classify(struct client *c, const uint8_t *sql, size_t len, struct cls_result *res)
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
void route_decide(struct client *c, enum cls_token tok, uint32_t flags, enum cls_reason reason,
                  bool is_ps)
{
	proxy_metrics_classified(c, tok);
	c->cur_write = false;
	c->cur_classified = true;
	c->cur_tok = tok;
	c->cur_flags = flags;
	/* SET @a = ... is replayed from the history; SELECT @a := ... cannot be.
	 * After FLUSH STATUS the session's counters are the writer connection's;
	 * after SET GLOBAL the writer alone has the new value (it is not
	 * replicated), and the session reads what it set. */
	if (flags & CLS_F_TEMP_TABLE)
		route_pin_writer(c, "a temporary table");
	if (flags & CLS_F_NAMED_LOCK)
		route_pin_writer(c, "a named lock");
	if (flags & CLS_F_SESSION_STATUS)
		route_pin_writer(c, "its session status counters (FLUSH STATUS)");
	if ((flags & CLS_F_USER_VAR_WRITE) && tok != CLS_SESSION)
		route_pin_writer(c, "a user variable assigned by a query");
	if (reason == CLS_R_SET_GLOBAL)
		route_pin_writer(c, "a global variable it set (SET GLOBAL)");
	/* Under LOCK TABLES the server answers only for the locked tables, on
	 * the connection that holds the locks; a replica would answer without
	 * them (and without the session's writes under a WRITE lock). */
	if (flags & CLS_F_TABLE_LOCK)
		route_pin_writer(c, "LOCK TABLES");
	/* Inside START TRANSACTION READ ONLY, BEGIN (or START TRANSACTION
	 * [READ WRITE]) and DDL, LOCK TABLES and the other statements that
	 * commit implicitly end that transaction and go on outside it: on the
	 * server that would be the replica's connection, where the write that
	 * follows must not run (a user with READ_ONLY ADMIN could write
	 * there). The replica's connection goes (a read-only transaction
	 * rolled back leaves what a commit would), and the statement is routed
	 * as outside a transaction: to the writer. So do a multi-statement, a
	 * CALL (a procedure may commit and start a transaction) and anything
	 * not understood: plain DML the replica refuses inside READ ONLY, as
	 * the server would. */
	if (c->ro_trans &&
	    (tok == CLS_BEGIN || (flags & (CLS_F_IMPLICIT_COMMIT | CLS_F_MULTI)) ||
	     (tok == CLS_WRITE && (reason == CLS_R_CALL || reason == CLS_R_NOT_UNDERSTOOD ||
	                           reason == CLS_R_MULTI || reason == CLS_R_UNTERMINATED)))) {
		log_debug("proxy: a statement of %s ends its READ ONLY transaction: on to the "
		          "writer",
		          c->user);
		if (c->trx_conn)
			bconn_free(c->trx_conn);
		c->ro_trans = false;
	}
	c->route = R_WRITER;
	switch (tok) {
	case CLS_SESSION:
		if ((flags & CLS_F_UNREPLAYABLE) || is_ps) {
			route_pin_writer(c, "a session setting the proxy cannot replay");
			return;
		}
		if ((flags & CLS_F_SET_TRANSACTION) && !c->ro_trans)
			return; /* applies to the next transaction: the writer's */
		switch (hist_add(c, c->cmd.d + c->cmd.off, buf_used(&c->cmd))) {
		case 1:
			return; /* pinned: runs on the writer */
		case -1:
			c->closing = true;
			break;
		}
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
		if (reason == CLS_R_PREV_RESULT && (c->last || pool_reclaim_last(c))) {
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
	if (c->in_trans || c->autocommit_off || c->pin_writer || (flags & CLS_F_HINT_WRITER))
		return;
	if (ryw_keeps_writer(c))
		return;
	c->route = R_READER;
}

void route_decide_query(struct client *c, const uint8_t *sql, size_t len)
{
	struct cls_result res;

	route_classify(c, sql, len, &res);
	if ((res.flags & CLS_F_USE) && res.db_len < sizeof(c->db) &&
	    (size_t)res.db_off + res.db_len <= len) {
		db_change_begin(c);
		memcpy(c->db, sql + res.db_off, res.db_len);
		c->db[res.db_len] = 0;
	}
	route_decide(c, res.token, res.flags, res.reason, false);
	c->cur_reason = res.reason;
}
