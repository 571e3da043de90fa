/*
 * answer.c - answers from the backends. Responses are streamed: each backend
 * fragment is passed to the client as it arrives, and the response tracker of
 * proto.c says when the answer ends. On the way the proxy reads what it needs
 * (a PREPARE's statement id, the writer's last GTID, session state changes),
 * hides its own session tracking from clients that did not ask for it, and at
 * the end updates the session (on_answer_done). Separate from backend.c: the
 * protocol of an answer, not the socket.
 */
#define _GNU_SOURCE
#include "proxy/engine_int.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static void on_answer_done(struct client *c, struct bconn *b);

/* The first packet of a PREPARE's answer names the backend's statement id:
 * cache it on the connection, and show the client its own id. */
static void prepare_ok(struct bconn *b, uint8_t *payload, size_t n)
{
	struct client *c = b->c;
	struct pstmt *ps = b->frag_drop ? NULL : c->cur_ps;
	struct skey *k = b->frag_drop ? b->prep_key : ps ? ps->key : NULL;

	if (!k || n < 5 || payload[0] != 0x00)
		return;
	if (stmt_cache_add(b, k, b->rt.stmt_id) < 0)
		log_warn("proxy: out of memory caching a statement on %s", b->name);
	if (ps) {
		ps->nparams = b->rt.prep_params;
		put_le32(payload + 1, ps->id);
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
void answer_tracking_replaced(struct bconn *b, const uint8_t *p, size_t n)
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

/*
 * An OK packet (whole, header included, at p) in the form the client reads:
 * without the proxy's own tracking entries, and without any session-state
 * part at all for a client that did not negotiate CLIENT_SESSION_TRACK
 * (the backend connection has it for the proxy's sake, bconn_login).
 * Rewritten in place; returns the payload length to forward.
 */
static size_t client_ok_form(const struct bconn *b, uint8_t *p, size_t n, uint8_t seq)
{
	int r;

	if ((b->c->caps & CAP_SESSION_TRACK) || !(b->caps & CAP_SESSION_TRACK))
		return b->rt.last_ok.state ? hide_tracking(b, p, n, seq) : n;
	r = ok_untrack(p + PKT_HDR, p + PKT_HDR, n);
	if (r < 0)
		return n; /* resp_feed parsed it: not reached */
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

/*
 * A column definition of a MySQL server to a client that reads MariaDB's
 * extended metadata (b->add_ext_meta): forwarded with an empty one. True
 * when it was forwarded so; false: the packet goes as it is (not a column
 * definition, or not whole).
 */
static bool coldef_fix(struct bconn *b, enum resp_state before, enum resp_state st,
                       const uint8_t *p, size_t take, struct pkt_frag f)
{
	uint8_t pkt[PKT_HDR + 2048];
	int n;

	if (!b->add_ext_meta || b->frag_drop || take != f.len ||
	    !(before == RS_COLS || before == RS_PREP_PARAMS || before == RS_PREP_COLS ||
	      (before == RS_FIELDS && st == RS_FIELDS)))
		return false;
	n = coldef_add_ext_meta(p + PKT_HDR, take, pkt + PKT_HDR, sizeof(pkt) - PKT_HDR);
	if (n < 0)
		return false;
	pkt_put_hdr(pkt, (uint32_t)n, f.seq);
	forward(b, pkt, PKT_HDR + (size_t)n);
	return true;
}

/* An OK of the client's state in place of the backend's answer. */
static void forward_ok(struct bconn *b, uint8_t seq)
{
	struct client *c = b->c;
	uint8_t pkt[PKT_HDR + 32];
	uint16_t st = (c->autocommit_off ? 0 : SST_AUTOCOMMIT) | (c->in_trans ? SST_IN_TRANS : 0);
	int n = ok_build(pkt + PKT_HDR, sizeof(pkt) - PKT_HDR, 0, 0, 0, st, 0);

	if (n <= 0)
		return;
	pkt_put_hdr(pkt, (uint32_t)n, seq);
	forward(b, pkt, PKT_HDR + (size_t)n);
}

/* Streams the fragments in b->in to the client, whole small ones and pieces of
 * large ones, until the answer ends or the client's buffer is full. */
void answer_stream(struct bconn *b)
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
			if (b->writer)
				rp_feed_frag(b, p, take);
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
		    (take == 0 || resp_needs_whole(&b->rt, p + PKT_HDR, take, f.len) ||
		     (b->add_ext_meta && b->rt.state != RS_ROWS && f.len < 2048))) {
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
		if (b->writer)
			rp_feed(b, before, st, p + PKT_HDR, take, f.len);
		/* the writer refused the client's statement as read-only (fenced
		 * for a switchover): the statement waits for the next writer
		 * rather than fail, when nothing of it ran (switchover.c) */
		if (first && st == RS_DONE && b->internal == 0 && b->writer && take == f.len &&
		    take > 0 && p[PKT_HDR] == 0xff && sw_refused(b, p + PKT_HDR, take)) {
			buf_consume(&b->in, PKT_HDR + take);
			sw_retake(b);
			return;
		}
		ryw_answer_packet(c, b, before, st, p + PKT_HDR, take);
		if (b->rt.last_ok.state && !b->frag_drop && ok_state_changed(&b->rt.last_ok) != 0)
			b->state_changed = true;
		if (b->rt.ok_now && b->internal == 0)
			b->answer_ok = true;
		if (b->lid_fetch && before == RS_ROWS && st == RS_ROWS)
			mux_lid_row(b, p + PKT_HDR, take);
		size_t fwd = take;
		if (b->rt.ok_now && !b->frag_drop && take == f.len && f.len < PKT_MAX_FRAG)
			fwd = client_ok_form(b, p, take, f.seq);
		if (first && st == RS_DONE && !b->frag_drop &&
		    ops_kill_answer_gone(c, p, PKT_HDR + take))
			forward_ok(b, f.seq);
		else if (!coldef_fix(b, before, st, p, take, f))
			forward(b, p, PKT_HDR + fwd);
		buf_consume(&b->in, PKT_HDR + take);
		b->frag_left = f.len - (uint32_t)take;
		if (st == RS_INFILE && !b->frag_drop) {
			/* the client sends the file now (infile_pump) */
			c->infile = true;
			c->infile_left = 0;
			c->infile_cont = false;
		}
		if (st != RS_DONE)
			continue;
		if (b->internal > 0) {
			/* the LAST_INSERT_ID() asked of an idle connection: the
			 * first internal answer to end (lid_fetch_start) */
			bool release = b->lid_fetch && mux_lid_fetched(c, b);
			if (b->rt.saw_err && !b->rp_check)
				log_warn("proxy: replaying session state on %s failed", b->name);
			if (b->rp_check && !rp_internal_end(c, b))
				return; /* the replay failed: the session is gone */
			if (b->internal == 1)
				b->prep_key = NULL;
			b->internal--;
			resp_init(&b->rt, bconn_next_kind(b), b->caps);
			if (b->rp_check && rp_replayed(c, b))
				return;
			if (release && buf_used(&b->in) == 0) {
				mux_release(c, b);
				return;
			}
			if (ryw_internal_done(c, b))
				return;
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

/* What a statement that keeps its connection (mux_keeps_state) left there, in
 * words for the ERR of a demoted writer. */
static const char *keep_reason(const struct client *c)
{
	const uint8_t *p = c->cmd.d + c->cmd.off;
	size_t n = buf_used(&c->cmd), i = 1;

	if (c->cur_reason == CLS_R_ADMIN && n > 0 && p[0] == COM_QUERY) {
		while (i < n && isspace(p[i]))
			i++;
		if (n - i >= 4 && !strncasecmp((const char *)p + i, "lock", 4))
			return "LOCK TABLES";
		return "state of an administrative statement (HANDLER, XA, ...)";
	}
	if (c->cur_reason == CLS_R_CALL || (c->cur_flags & CLS_F_ROUTINE) ||
	    c->cur_reason == CLS_R_UNKNOWN_FUNCTION)
		return "state a stored routine may have made";
	if (c->cur_flags & CLS_F_SET_TRANSACTION)
		return "SET TRANSACTION for its next transaction";
	return "state of a statement the proxy did not understand";
}

static void on_answer_done(struct client *c, struct bconn *b)
{
	proxy_metrics_answered(c, b);
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
	/* the PREPARE of a FOUND_ROWS() ran where the read before it did: the
	 * session keeps that connection for the EXECUTE (cmd_prepare). And a
	 * read of the previous statement's diagnostics (SHOW WARNINGS,
	 * @@warning_count, GET DIAGNOSTICS) leaves them as they were: the next
	 * one may read them again there (mariadb-test sends SHOW WARNINGS
	 * itself after a statement that warned, before the test's own
	 * @@warning_count). */
	/* the proxy's KILL QUERY (ops.c) leaves nothing on its connection:
	 * back to the pool at once (on a reader it is not the session's) */
	if (c->route == R_TARGET)
		clean = true;
	bool hold =
	    (c->cur_kind == RESP_PREPARE && c->cur_ps && ps_reads_prev_state(c->cur_ps)) ||
	    (c->cur_classified && c->cur_tok == CLS_READ && (c->cur_flags & CLS_F_PREV_STATE));

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
			stmt_cache_clear_for_state(c, b);
			bconn_update(b);
		}
	}
	/* a PREPARE's answer carries no status flags that could be trusted */
	bool opened = false;
	if (b->writer && ok && c->cur_kind == RESP_GENERIC) {
		/* The server knows best whether a transaction is open. */
		opened = !c->in_trans && (st & SST_IN_TRANS);
		c->in_trans = (st & SST_IN_TRANS) != 0;
		c->autocommit_off = !(st & SST_AUTOCOMMIT);
	}
	sw_answered(c, b, ok, opened);
	rp_answered(c, b, opened);
	if (mux_state_pins(c, b))
		route_pin_writer(c, "session state a statement or routine made there");
	/* An EXECUTE that opened a cursor: its rows wait on this connection for
	 * COM_STMT_FETCH (cmd_fetch), so the session keeps it. Any other answer
	 * to an EXECUTE means no cursor of that statement (the server closes
	 * the previous one when it executes again). */
	if (c->cur_ps && c->cur_kind == RESP_GENERIC) {
		c->cur_ps->cursor_b = ok && (st & SST_CURSOR_EXISTS) ? b : NULL;
		b->has_cursor |= c->cur_ps->cursor_b != NULL;
		if (c->cur_ps->cursor_b && !b->keep) {
			log_debug("proxy: a cursor keeps a connection of %s to %s", c->user,
			          b->name);
			b->keep = true;
			b->keep_why = "an open cursor";
			clean = false;
		}
	}
	mux_lid_note(c, b);
	if (mux_keeps_state(c, b)) {
		if (!b->keep)
			log_debug("proxy: a session of %s keeps its connection to %s", c->user,
			          b->name);
		if (!b->keep || !b->keep_why)
			b->keep_why = keep_reason(c);
		b->keep = true;
		clean = false;
	}
	if (ok && c->cur_kind == RESP_GENERIC)
		b->trans_open = (st & SST_IN_TRANS) || !(st & SST_AUTOCOMMIT);
	/* a session statement the history records (and would replay): its
	 * effect is the history's, which pool_park can match; a plain write
	 * or transaction statement leaves nothing once its transaction ends
	 * (pool_park resets a connection whose transaction is open) */
	if (!clean && !mux_leaves_no_state(c, b)) {
		if (c->cur_hist && ok && b->rt.warnings == 0)
			b->hist_dirty = true;
		else
			b->dirty = true;
	}
	if (c->ro_trans && !c->trx_conn && ok)
		c->trx_conn = b;
	/* The replica's connection of a READ ONLY transaction reports a
	 * transaction open that is not read-only: something the classifier
	 * did not see ended it and began another there (route_decide sends
	 * those it sees to the writer). Nothing more of the session may run
	 * there: it ends, and the replica rolls back what it began. */
	if (c->trx_conn == b && ok && c->cur_kind == RESP_GENERIC && (st & SST_IN_TRANS) &&
	    !(st & SST_IN_TRANS_READONLY)) {
		log_warn("proxy: a session of %s opened a read-write transaction on the reader "
		         "%s: the session is closed",
		         c->user, b->name);
		c->closing = true;
	}
	if (c->trx_conn == b) {
		c->ro_trans = ok ? (st & SST_IN_TRANS) != 0 : c->ro_trans;
		if (!c->ro_trans)
			c->trx_conn = NULL;
	} else if (c->ro_trans && !ok && !c->trx_conn) {
		c->ro_trans = false; /* START TRANSACTION READ ONLY failed */
	}
	ryw_write_done(c, b, ok);
	if (c->cur_hist && !ok) {
		hist_pop(c);
		b->hist_applied = c->nhist;
	} else if (c->cur_hist) {
		hist_commit(c);
		b->hist_applied = c->nhist;
	}
	/* a USE or COM_INIT_DB the server refused left the schema as it was */
	db_change_end(c, ok);
	if (c->cur_ps && c->cur_kind == RESP_PREPARE && !ok)
		stmt_free(c, c->cur_ps);
	else if (c->cur_ps)
		stmt_drop_longdata(c, c->cur_ps);
	c->cur_ps = NULL;
	c->last = b;
	c->has_parked_last = false;
	c->cur_hist = false;
	client_cmd_done(c);
	buf_trim(&b->in);
	mux_answered(c, b, clean && !hold);
	if (client_flush(c) < 0 || c->closing) {
		client_close(c);
		return;
	}
	client_process(c);
}
