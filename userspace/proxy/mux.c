/*
 * mux.c - multiplexing: a session holds at most one writer and one reader
 * connection, and only while it needs them. A connection goes back to the
 * worker's pool after a statement unless the session's state lives on it (a
 * transaction, temporary tables, ...; may_release()), and the next statement
 * takes one from the pool. These are the rules of when; pool.c does the
 * parking. Kept apart so that the policy reads in one place.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>

#include "proxy/engine_int.h"

/*
 * Whether the session may hand this connection back to the pool between
 * statements. Not while the connection holds what the session history cannot
 * rebuild elsewhere: a transaction or autocommit off (as the connection itself
 * last reported, so a reader counts too), a READ ONLY transaction, and on the
 * writer: temporary tables, named locks, variables assigned by query or an
 * unreplayable SET (route_pin_writer). The LAST_INSERT_ID() of an insert is
 * learnt first and then replayed where needed (lid_*, below).
 * Prepared statements keep nothing: the next connection has the statement
 * in its cache or prepares it with the EXECUTE (stmt_queue_prereqs).
 */
static bool may_release(const struct client *c, const struct bconn *b)
{
	if (b->keep || b->trans_open || c->trx_conn == b || c->ro_trans)
		return false;
	return b != c->wconn || !(c->in_trans || c->autocommit_off || c->pin_writer);
}

/*
 * A CALL whose whole effect on the session the writer reports: a procedure
 * whose body the routine table found free of named locks, sequences, dynamic
 * SQL and calls of other routines (CLS_F_ROUTINE_TRACKED, set by
 * userspace/proxy/routines.c), on a connection with the proxy's state-change
 * tracking on, answered without error (a routine may fail half way), alone
 * (not in a multi-statement). What it changed, mux_state_pins() sees; a
 * transaction it left open, the status flags; its LAST_INSERT_ID(), lid_*.
 * So it need not keep its connection.
 */
static bool tracked_call(const struct client *c, const struct bconn *b)
{
	return c->cur_reason == CLS_R_CALL && (c->cur_flags & CLS_F_ROUTINE_TRACKED) &&
	       !(c->cur_flags & CLS_F_MULTI) && b->writer && b->state_tracked && !b->rt.saw_err;
}

/*
 * Whether the statement just answered may have left state on its connection
 * that the history cannot rebuild and that no flag of the session tracks: a
 * procedure (unless tracked_call) or a function the classifier does not know
 * (temporary tables, variables, locks inside), LOCK TABLES, HANDLER, XA and
 * other admin statements, SET TRANSACTION (for the next transaction on this
 * connection), and statements the classifier did not understand. Such a
 * connection stays with the session. Even after an error: a routine may fail
 * half way.
 */
bool mux_keeps_state(const struct client *c, const struct bconn *b)
{
	if (!c->cur_classified)
		return false;
	if (tracked_call(c, b))
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
bool mux_state_pins(const struct client *c, const struct bconn *b)
{
	bool routine;

	if (!b->writer || !c->cur_classified || c->cur_hist || c->cur_tok == CLS_SESSION)
		return false;
	if (b->state_changed)
		return true;
	routine = c->cur_reason == CLS_R_CALL || c->cur_reason == CLS_R_UNKNOWN_FUNCTION;
	return routine && (!b->state_tracked || b->rt.saw_err);
}

/*
 * Whether the statement just answered on a writer connection leaves nothing
 * there that a reset would clear, once its transaction has ended: a plain
 * read or DML statement, or BEGIN/COMMIT/ROLLBACK/SAVEPOINT, that succeeded
 * without warnings (the next session's SHOW WARNINGS must not see them), on
 * a connection with the proxy's state-change tracking on, and the server
 * reported no change (a trigger's user variable or temporary table). Its
 * LAST_INSERT_ID() is followed apart (lid_touched). Such a connection goes
 * back to the pool without COM_RESET_CONNECTION, keeping its prepared
 * statements; an open transaction is still reset (pool_park).
 */
bool mux_leaves_no_state(const struct client *c, const struct bconn *b)
{
	if (!b->writer || b->rt.saw_err || b->rt.warnings || !c->cur_classified || c->cur_hist ||
	    !b->state_tracked || b->state_changed || (c->cur_flags & STATEFUL_FLAGS))
		return false;
	switch (c->cur_reason) {
	case CLS_R_SELECT:
	case CLS_R_DML:
	case CLS_R_LOCKING_READ:
	case CLS_R_TRANSACTION:
	case CLS_R_PREV_RESULT:
		break;
	default:
		return false;
	}
	return c->cur_tok == CLS_READ || c->cur_tok == CLS_WRITE || c->cur_tok == CLS_BEGIN ||
	       c->cur_tok == CLS_END;
}

/*
 * LAST_INSERT_ID() belongs to the connection and may be asked any time later
 * in the session, not only by the next statement. Rather than keeping the
 * writer connection an insert ran on to the end of the session, the proxy
 * asks that connection for the value when the session would give it back
 * (one SELECT, while the session's next statement runs elsewhere), keeps it
 * in the session (c->lid), and replays it with SET last_insert_id on the
 * writer connection the session takes next (mux_lid_prologue). The OK packet's
 * insert id is not enough: after an insert of an explicit value into an
 * AUTO_INCREMENT column it is that value, while LAST_INSERT_ID() keeps the
 * last generated one.
 */

/* After a statement on b: whether it may have changed LAST_INSERT_ID(). An
 * insert id in the OK (an insert, or LAST_INSERT_ID(expr) in an UPDATE), a
 * statement that calls connection-dependent functions (LAST_INSERT_ID(expr)
 * in a SELECT), or a CALL (an insert inside does not show in its OK), even
 * when it failed part way. */
void mux_lid_note(const struct client *c, struct bconn *b)
{
	if (!b->writer)
		return;
	/* what LAST_INSERT_ID() is now, for when b is lost before it is read:
	 * the OK's insert id; unknown after a function or routine set it */
	if (!b->rt.saw_err && b->rt.last_ok.insert_id) {
		b->lid_ok = b->rt.last_ok.insert_id;
		b->lid_ok_set = true;
	} else if (c->cur_classified &&
	           (c->cur_reason == CLS_R_WRITE_FUNCTION || c->cur_reason == CLS_R_CALL)) {
		b->lid_ok_set = false;
	}
	if ((!b->rt.saw_err && b->rt.last_ok.insert_id) ||
	    (c->cur_classified &&
	     (c->cur_reason == CLS_R_WRITE_FUNCTION || c->cur_reason == CLS_R_CALL ||
	      (c->cur_flags & CLS_F_PREV_STATE))))
		b->lid_held = b->lid_touched = true;
}

/* Asks b for its LAST_INSERT_ID(); b stays with the session until the
 * answer (mux_lid_fetched). Only on an idle connection: the answer must be the
 * first one to come. */
static void lid_fetch_start(struct client *c, struct bconn *b)
{
	if (b->lid_fetch || b->awaiting || b->internal || c->cur == b)
		return;
	if (route_queue_internal(b, "SELECT LAST_INSERT_ID()") < 0) {
		b->keep = true;
		b->keep_why = "its LAST_INSERT_ID()";
		return;
	}
	b->lid_fetch = true;
	b->lid_seen_ok = false;
	resp_init(&b->rt, RESP_GENERIC, b->caps);
	/* a failed socket is reported by its read side, which fails b */
	if (bconn_flush(b) < 0)
		log_debug("proxy: asking %s for LAST_INSERT_ID() failed", b->name);
}

/* A row of the answer to that SELECT: one column, the decimal value. */
void mux_lid_row(struct bconn *b, const uint8_t *p, size_t n)
{
	uint64_t v = 0;
	size_t len;

	if (n < 2 || p[0] == 0 || p[0] > 20 || (size_t)p[0] + 1 > n)
		return;
	len = p[0];
	for (size_t i = 1; i <= len; i++) {
		unsigned d = (unsigned)(p[i] - '0');
		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return;
		v = v * 10 + d;
	}
	b->lid_seen = v;
	b->lid_seen_ok = true;
}

/* The SELECT's answer ended (b->rt still describes it). The session knows
 * the value now; true when b may go back to the pool at once (nothing of
 * the session's is in flight on it). When the value could not be read, the
 * session keeps b, as before this existed. */
bool mux_lid_fetched(struct client *c, struct bconn *b)
{
	b->lid_fetch = false;
	if (!b->lid_seen_ok || b->rt.saw_err) {
		log_debug("proxy: could not read LAST_INSERT_ID() on %s: the session keeps it",
		          b->name);
		b->keep = true;
		b->keep_why = "its LAST_INSERT_ID()";
		return false;
	}
	if (b->lid_seen != c->lid) {
		c->lid = b->lid_seen;
		if (++c->lid_gen == 0)
			c->lid_gen = 1;
	}
	b->lid_gen = c->lid_gen;
	b->lid_held = b->lid_ok_set = false;
	/* idle but for the SELECT itself, whose answer is consumed */
	return !b->awaiting && b->internal == 1 && c->cur != b;
}

/* Before a command on a writer connection that does not have the session's
 * LAST_INSERT_ID() (one from the pool), or on any connection parked
 * without a reset holding another session's (lid_foreign): set it there,
 * in the same batch. */
int mux_lid_prologue(const struct client *c, struct bconn *b)
{
	char q[64];

	if (b->lid_held || b->lid_fetch ||
	    (!b->lid_foreign && (!b->writer || b->lid_gen == c->lid_gen)))
		return 0;
	snprintf(q, sizeof(q), "SET last_insert_id = %" PRIu64, c->lid);
	if (route_queue_internal(b, q) < 0)
		return -1;
	b->lid_gen = c->lid_gen;
	b->lid_foreign = b->lid_ok_set = false;
	b->lid_touched = c->lid != 0;
	return 0;
}

/* Between statements: back to the pool (reset there, so it is clean for the
 * next session), unless the session's state forbids it. */
void mux_release(struct client *c, struct bconn *b)
{
	bool was_last = c->last == b;
	uint64_t takes = b->takes;

	if (!may_release(c, b))
		return;
	if (b->lid_held) {
		lid_fetch_start(c, b);
		return;
	}
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
void mux_next(struct client *c)
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
void mux_answered(struct client *c, struct bconn *b, bool clean)
{
	if (clean && !b->dead && b->c == c)
		mux_release(c, b);
}
