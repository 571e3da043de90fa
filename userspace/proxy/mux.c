/*
 * mux.c - multiplexing: a session holds at most one writer and one reader
 * connection, and only while it needs them. A connection goes back to the
 * worker's pool after a statement unless the session's state lives on it (a
 * transaction, temporary tables, ...; may_release()), and the next statement
 * takes one from the pool. These are the rules of when; pool.c does the
 * parking. Kept apart so that the policy reads in one place.
 */
#define _GNU_SOURCE
#include "proxy/engine_int.h"

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
bool keeps_state(const struct client *c, const struct bconn *b)
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
bool state_pins(const struct client *c, const struct bconn *b)
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
