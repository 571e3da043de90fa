/*
 * switchover.c - statements that need the writer while there is none wait
 * for the next one (switchover_buffer_ms), as a planned switchover or a
 * failover makes one: the old writer fenced read_only, or down, and another
 * promoted a moment later. Reads go on meanwhile.
 *
 * - A statement routed to the writer when the topology has no usable writer
 *   waits in its worker's list (its command stays in c->cmd, nothing more is
 *   read from the client, no thread blocks) and is routed again when a
 *   topology is published (sw_topology wakes the workers that have waiters),
 *   at each sweep, and ends with the ERR it gets today once
 *   switchover_buffer_ms has passed.
 * - The writer refuses a statement as read-only (ERR 1290: fenced before the
 *   controller's next probe saw it), or cannot be reached before the
 *   statement was sent: nothing of it ran, so when the session holds nothing
 *   on that connection it is not passed on; that writer is fenced (taken as
 *   none) for this topology generation, at most SW_FENCE_MS, and the
 *   statement waits like the others (sw_take_back).
 * - A transaction that holds nothing but its BEGIN (no statement ran in it
 *   yet) is not lost with its writer: it begins again on the next one
 *   before its next statement (route_demoted, route_send_cmd).
 * An autocommit write whose answer never came is never sent again: it may
 * have run (backend.c answers it with ERR 1158).
 */
#define _GNU_SOURCE
#include "common/dlist.h"
#include "proxy/engine_int.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* A fenced writer is tried again after this even if the topology still
 * names it (a refusal that was not a switchover, a connect that failed
 * once): at worst one more statement is refused and fences it again. */
#define SW_FENCE_MS 500
/* the largest BEGIN kept to begin a transaction again */
#define SW_BEGIN_MAX 1024

static uint64_t fence_word(uint64_t gen, uint32_t id)
{
	return gen << 16 | (id & 0xffff);
}

const struct topo_backend *sw_writer(struct proxy_engine *e, const struct topology *t)
{
	const struct topo_backend *be = topo_usable_writer(t);

	if (be && atomic_load(&e->sw_fence_word) == fence_word(t->generation, be->id) &&
	    now_ms() - atomic_load(&e->sw_fence_ms) < SW_FENCE_MS && atomic_load(&e->sw_ms) > 0)
		return NULL;
	return be;
}

bool sw_may_wait(const struct client *c)
{
	if (c->ghost || atomic_load(&c->w->e->sw_ms) <= 0)
		return false;
	return !c->sw_waiting || now_ms() < c->sw_deadline;
}

/* The writer named by the current topology, id, is taken as none for this
 * generation (SW_FENCE_MS at most). */
static void sw_fence(struct proxy_engine *e, uint32_t id, const char *name, const char *why)
{
	const struct topology *t = topo_current();
	uint64_t gen = t ? t->generation : 0, word = fence_word(gen, id);

	if (t)
		topo_put(t);
	atomic_store(&e->sw_fence_ms, now_ms());
	if (atomic_exchange(&e->sw_fence_word, word) != word)
		log_info("proxy: the writer %s %s: statements that need the writer wait for the "
		         "next one (switchover_buffer_ms = %d)",
		         name, why, atomic_load(&e->sw_ms));
}

void sw_enqueue(struct client *c)
{
	struct worker *w = c->w;

	c->st = C_BUSY;
	c->cur = NULL;
	if (c->sw_waiting)
		return;
	c->sw_waiting = true;
	c->sw_start = now_ms();
	c->sw_deadline = c->sw_start + (uint64_t)atomic_load(&w->e->sw_ms);
	DLIST_PUSH_BACK(w->sw_head, w->sw_tail, c, sw_prev, sw_next);
	atomic_fetch_add(&w->sw_n, 1);
	atomic_fetch_add(&w->e->sw_waiting_now, 1);
	proxy_metrics_switchover(SW_METRIC_WAIT);
	log_debug("proxy: a statement of %s waits for a writer", c->user);
}

void sw_dequeue(struct client *c)
{
	struct worker *w = c->w;

	if (!c->sw_waiting)
		return;
	DLIST_UNLINK(w->sw_head, w->sw_tail, c, sw_prev, sw_next);
	c->sw_waiting = false;
	atomic_fetch_sub(&w->sw_n, 1);
	atomic_fetch_sub(&w->e->sw_waiting_now, 1);
}

/* After a topology that replaced a writer (sw_topology): every statement in
 * flight on the old one is cut off now, not at the next sweep. */
static void sw_cut_all(struct worker *w)
{
	const struct topology *t = topo_current();

	if (!t)
		return;
	for (struct client *c = w->clients, *next; c; c = next) {
		next = c->next;
		if (c->st == C_BUSY)
			sw_cut_demoted(c, t);
	}
	topo_put(t);
}

void sw_run(struct worker *w)
{
	/* route_cmd may queue again at the tail: each waiter is tried once */
	struct client *last;

	if (atomic_exchange(&w->sw_cut, false))
		sw_cut_all(w);
	last = w->sw_tail;

	for (struct client *c = w->sw_head, *next; c; c = next) {
		bool end = c == last;
		uint64_t start = c->sw_start;

		next = c->sw_next;
		route_cmd(c);
		if (!c->sw_waiting) {
			log_debug("proxy: a statement of %s waited %llu ms for a writer", c->user,
			          (unsigned long long)(now_ms() - start));
			client_resume(c);
		}
		if (end)
			break;
	}
}

void sw_expire(struct worker *w, uint64_t now)
{
	for (struct client *c = w->sw_head, *next; c; c = next) {
		next = c->sw_next;
		if (now < c->sw_deadline)
			continue;
		/* once more, now unable to wait: the ERR it would have had */
		log_info("proxy: a statement of %s waited %llu ms for a writer: none came "
		         "(switchover_buffer_ms)",
		         c->user, (unsigned long long)(now - c->sw_start));
		proxy_metrics_switchover(SW_METRIC_TIMEOUT);
		route_cmd(c);
		if (c->sw_waiting) {
			/* not reached: sw_may_wait is false past the deadline */
			sw_dequeue(c);
			client_cmd_fail(c, 1105, "mysteer: no writer");
		}
		client_resume(c);
	}
}

/* Whether the command in flight on the writer connection b may be taken
 * back and sent to another writer: nothing of it ran (the caller knows: the
 * first packet of its own answer is the refusal, or b never logged in, so
 * the proxy's own statements queued before it did not run either),
 * it is one statement that cannot have changed anything before it failed
 * (no routine, no multi-statement), and the session holds nothing on b but
 * a transaction with only its BEGIN. */
static bool movable(const struct client *c, const struct bconn *b)
{
	if (!c || c->ghost || c->cur != b || c->fwd_started || !b->writer || !c->cur_classified ||
	    c->cur_hist || c->shedding || c->closing || atomic_load(&c->w->e->sw_ms) <= 0 ||
	    b->backend_id >= 0xffff)
		return false;
	if ((c->cur_flags & (CLS_F_MULTI | CLS_F_ROUTINE)) || c->cur_reason == CLS_R_CALL ||
	    c->cur_reason == CLS_R_UNKNOWN_FUNCTION || c->cur_reason == CLS_R_NOT_UNDERSTOOD)
		return false;
	if (!route_writer_held_for(c, b))
		return true;
	/* a transaction replay's new connection holds nothing yet; an old one
	 * goes with its transaction, which is replayed on the next writer */
	if (c->rp_pending || rp_why_not(c, b, false) == RP_OK)
		return true;
	return c->in_trans && c->sw_only_begin && !c->autocommit_off && !c->pin_writer &&
	       !b->keep && !b->has_cursor;
}

/* b goes, the command waits for the next writer (or is sent to it now). */
static void retake(struct bconn *b, const char *why)
{
	struct client *c = b->c;

	sw_fence(c->w->e, b->backend_id, b->name, why);
	proxy_metrics_switchover(SW_METRIC_RETAKE);
	if (c->in_trans && !c->rp_pending && rp_why_not(c, b, false) == RP_OK)
		c->rp_pending = true; /* the log begins with the BEGIN */
	else if (c->in_trans && !c->rp_pending)
		c->sw_replay_begin = true;
	bconn_free(b);
	c->st = C_BUSY;
	route_cmd(c);
	client_resume(c);
}

bool sw_refused(const struct bconn *b, const uint8_t *p, size_t n)
{
	struct err_pkt e;

	/* ER_OPTION_PREVENTS_STATEMENT for --read-only: refused before it ran */
	return movable(b->c, b) && err_parse(p, n, &e) == 0 && e.code == 1290 &&
	       (strcasestr(e.msg, "read-only") || strcasestr(e.msg, "read_only"));
}

void sw_retake(struct bconn *b)
{
	retake(b, "refused a statement as read-only");
}

bool sw_unreached(struct bconn *b)
{
	if (!movable(b->c, b))
		return false;
	retake(b, "cannot be reached");
	return true;
}

void sw_answered(struct client *c, struct bconn *b, bool ok, bool opened)
{
	const uint8_t *p = c->cmd.d + c->cmd.off;
	size_t n = buf_used(&c->cmd);

	if (!c->in_trans) {
		c->sw_only_begin = false;
		return;
	}
	if (opened && ok && b->writer && c->cur_classified && c->cur_tok == CLS_BEGIN &&
	    !(c->cur_flags & CLS_F_MULTI) && !c->cur_ps && n > 0 && n <= SW_BEGIN_MAX &&
	    p[0] == COM_QUERY) {
		buf_consume(&c->sw_begin, buf_used(&c->sw_begin));
		c->sw_only_begin = buf_append(&c->sw_begin, p, n) == 0;
		return;
	}
	c->sw_only_begin = false;
}

void sw_topology(const struct topology *t, void *arg)
{
	struct proxy_engine *e = arg;
	uint64_t one = 1;
	uint64_t fp = 14695981039346656037ull;
	bool demoted;

	/* a writer replaced: statements in flight there are cut off at once
	 * (sw_cut_demoted), before a frozen old primary resumes and answers;
	 * once per change of the demoted set, not at every publish */
	for (size_t i = 0; i < t->nbackends; i++)
		if (t->backends[i].demoted && t->backends[i].role != ROLE_WRITER)
			fp = (fp ^ (t->backends[i].id + 1)) * 1099511628211ull;
	demoted = fp != e->sw_demoted_fp;
	e->sw_demoted_fp = fp;
	if (!topo_usable_writer(t) || (!demoted && atomic_load(&e->sw_waiting_now) <= 0))
		return;
	for (int i = 0; i < e->nworkers; i++) {
		struct worker *w = &e->workers[i];
		if (demoted)
			atomic_store(&w->sw_cut, true);
		else if (atomic_load(&w->sw_n) <= 0)
			continue;
		atomic_store(&w->sw_kick, true);
		if (write(w->wakefd, &one, sizeof(one)) < 0)
			log_debug("proxy: waking a worker: %s", strerror(errno));
	}
}

/*
 * A statement in flight on a writer that another server has replaced (the
 * topology marks it demoted): a frozen or partitioned old primary may
 * resume and run it, and its OK would acknowledge a write that the new
 * primary never has. The connection is closed and the client gets ERR 1158
 * naming the uncertainty (the write may still run there), never that OK;
 * a statement not sent yet (its connection still logging in) waits for the
 * new writer instead (sw_unreached).
 */
bool sw_cut_demoted(struct client *c, const struct topology *t)
{
	struct bconn *b = c->cur;

	if (c->ghost || c->dead || !b || b->dead || !b->writer || !b->awaiting ||
	    atomic_load(&c->w->e->sw_ms) <= 0)
		return false;
	for (size_t i = 0; i < t->nbackends; i++) {
		const struct topo_backend *be = &t->backends[i];
		if (be->id != b->backend_id)
			continue;
		if (!be->demoted || be->role == ROLE_WRITER)
			return false;
		log_info("proxy: %s is no longer the writer: a statement of %s in flight there is "
		         "cut off (its outcome is unknown)",
		         b->name, c->user);
		bconn_fail(b, "it is no longer the writer and the statement was in flight there: "
		              "it may still run there");
		return true;
	}
	return false;
}
