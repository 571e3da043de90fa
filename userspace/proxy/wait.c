/*
 * wait.c - sessions waiting for a connection of a backend at its
 * pool_max_per_backend cap: the worker's queue (wait_enqueue, wait_dequeue),
 * first come first served per backend over all workers (a ticket per wait,
 * each worker publishing its oldest one per backend: wait_older_elsewhere),
 * serving it when a connection or a slot comes free (wait_run), the
 * POOL_WAIT_MS bound (wait_expire), and idle connections closed for older
 * waiters of other workers (wait_yield). Apart from pool.c: only the slow
 * path at the cap comes here.
 */
#define _GNU_SOURCE
#include "common/dlist.h"
#include "proxy/engine_int.h"

#include <stdio.h>
#include <string.h>

/*
 * Publishes the ticket of this worker's oldest waiter for backend id (the
 * queue is in ticket order: the first one of id), WAIT_NONE for none. When
 * it grows (that waiter left, served or not) while other workers have
 * waiters of id, they are woken: one of theirs may be the oldest now, and
 * may find free the slot this one deferred to it.
 */
static void oldest_publish(struct worker *w, uint32_t id)
{
	uint64_t before = atomic_load(&w->oldest[id]), t = WAIT_NONE;

	for (const struct client *c = w->wait_head; c; c = c->wait_next)
		if (c->wait_id == id) {
			t = c->wait_ticket;
			break;
		}
	if (t == before)
		return;
	atomic_store(&w->oldest[id], t);
	if (t > before && !w->stop && atomic_load(&w->e->be_waiting[id]) > w->wait_n[id])
		pool_wake_others(w);
}

/*
 * Another worker has a session waiting for backend id with a ticket older
 * than this one (WAIT_NONE: older than a statement that does not wait yet):
 * a connection or slot of id that comes free here is theirs. One atomic
 * load when nobody else waits for id. A wait that took its ticket but has
 * not published it yet is missed: it is served after a younger one, once.
 */
bool wait_older_elsewhere(struct worker *w, uint32_t id, uint64_t ticket)
{
	struct proxy_engine *e = w->e;

	if (id >= PROXY_MAX_IDS || atomic_load(&e->be_waiting[id]) <= w->wait_n[id])
		return false;
	for (int i = 0; i < e->nworkers; i++)
		if (&e->workers[i] != w && atomic_load(&e->workers[i].oldest[id]) < ticket)
			return true;
	return false;
}

/* The session no longer waits for a connection (served, failed, timed out
 * or gone). */
void wait_dequeue(struct client *c)
{
	struct worker *w = c->w;

	if (!c->waiting)
		return;
	DLIST_UNLINK(w->wait_head, w->wait_tail, c, wait_prev, wait_next);
	w->wait_n[c->wait_id]--;
	w->nwaiting--;
	atomic_fetch_sub(&w->e->be_waiting[c->wait_id], 1);
	atomic_fetch_sub(&w->e->waiting_total, 1);
	c->waiting = false;
	if (c->wait_ticket == atomic_load(&w->oldest[c->wait_id]))
		oldest_publish(w, c->wait_id);
}

/*
 * The session waits for a connection of c->want_id, at pool_max_per_backend,
 * in its worker's queue with a ticket of the whole proxy: its command stays
 * in c->cmd (C_BUSY: nothing more is read from it meanwhile), and route_cmd
 * runs again when a connection of that backend is parked or closed
 * (wait_run), until POOL_WAIT_MS has passed (wait_expire); it takes one
 * only when no other worker has an older ticket waiting for that backend
 * (pool_conn_get). A session already waiting keeps its place and its ticket.
 */
void wait_enqueue(struct client *c)
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
		uint32_t was = c->wait_id;
		w->wait_n[was]--;
		atomic_fetch_sub(&e->be_waiting[was], 1);
		c->wait_id = id;
		if (c->wait_ticket == atomic_load(&w->oldest[was]))
			oldest_publish(w, was);
	} else {
		c->waiting = true;
		c->wait_ticket = atomic_fetch_add(&e->wait_tickets, 1);
		c->wait_start = now_ms();
		c->wait_deadline = c->wait_start + e->wait_ms;
		DLIST_PUSH_BACK(w->wait_head, w->wait_tail, c, wait_prev, wait_next);
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
	/* this worker's only writer of it: no scan needed to lower it */
	if (c->wait_ticket < atomic_load(&w->oldest[id]))
		atomic_store(&w->oldest[id], c->wait_ticket);
	/* other workers' idle connections of it make room (wait_yield); and
	 * this worker tries once more after the batch: a statement queued
	 * behind another worker's waiter may find that one served and the
	 * slot free (its wake came before this wait counted) */
	w->kick = true;
	pool_wake_others(w);
}

/* A connection or a slot came free: the waiters try again, in order; the
 * first one of a backend that still finds none keeps the later ones of that
 * backend waiting too. */
void wait_run(struct worker *w)
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
void wait_expire(struct worker *w, uint64_t now)
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
		client_cmd_fail(c, 1040, msg);
		client_resume(c);
	}
}

/* KILL QUERY of a session whose statement waits for a connection (ops.c):
 * it never ran, and ends as a statement the server interrupted. */
void wait_kill(struct client *c)
{
	if (c->sw_waiting) {
		/* a statement waiting for a writer (switchover.c) */
		log_info("proxy: a statement of %s waiting for a writer killed (KILL QUERY)",
		         c->user);
		sw_dequeue(c);
		client_cmd_fail_state(c, 1317, "70100", "Query execution was interrupted");
		client_resume(c);
		return;
	}
	if (!c->waiting)
		return;
	log_info("proxy: a statement of %s waiting for %s killed (KILL QUERY)", c->user,
	         c->wait_name);
	wait_dequeue(c);
	client_cmd_fail_state(c, 1317, "70100", "Query execution was interrupted");
	client_resume(c);
}

/* Idle connections of a backend that sessions of other workers wait for
 * are closed, as many as those wait for: pools are per worker, so only
 * their slots can serve them. This worker's own waiters ran first
 * (wait_run): an idle one left here is one they deferred to an older
 * waiter elsewhere, or did not need. */
void wait_yield(struct worker *w)
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
