/*
 * ryw.c - read-your-writes ([proxy] read_your_writes, read_your_writes_ms):
 * a session reads its own writes on a replica. It owns:
 * - the settings, as a reload applies them (ryw_apply);
 * - what the session knows of its last write: its GTID, read from the
 *   writer's OK packets (last_gtid, tracked on writer connections by the
 *   proxy's own session tracking), or that none came (gtid_blind), and when
 *   the window after it ends (ryw_until_ms);
 * - read_your_writes = gtid: before a read runs on a replica, anything of the
 *   session included, the replica waits for that GTID (MASTER_GTID_WAIT, at
 *   most read_your_writes_ms); a replica that did not catch up in time hands
 *   the read to the writer;
 * - read_your_writes = window (and gtid without a GTID): reads go to the
 *   writer for read_your_writes_ms after a write.
 * The route, the answer and the pool call in here once each; the figures
 * are metrics.c's (proxy_metrics_ryw).
 */
#define _GNU_SOURCE
#include "proxy/engine_int.h"

#include <stdio.h>
#include <string.h>

void ryw_apply(struct proxy_engine *e, const struct config *cfg)
{
	atomic_store(&e->ryw_mode, (int)cfg->read_your_writes);
	atomic_store(&e->ryw_ms, cfg->read_your_writes_ms);
}

void ryw_session_reset(struct client *c)
{
	c->last_gtid[0] = 0;
	c->gtid_blind = false;
	c->ryw_until_ms = 0;
}

void ryw_conn_reset(struct bconn *b)
{
	b->tracking_gtid = false;
	b->waited_gtid[0] = 0;
}

bool ryw_track_wanted(const struct client *c, const struct bconn *b)
{
	return !b->tracking_gtid && c->w->e->ryw_mode == RYW_GTID;
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

int ryw_prologue(struct client *c, struct bconn *b)
{
	struct proxy_engine *e = c->w->e;
	char q[200];

	if (e->ryw_mode != RYW_GTID || b->writer || c->route != R_READER ||
	    !gtid_text_ok(c->last_gtid) || !strcmp(b->waited_gtid, c->last_gtid))
		return 0;
	snprintf(q, sizeof(q), "SELECT MASTER_GTID_WAIT('%s', %d.%03d)", c->last_gtid,
	         e->ryw_ms / 1000, e->ryw_ms % 1000);
	if (route_queue_internal(b, q) < 0)
		return -1;
	b->gtid_wait = true;
	b->gtid_ok = false;
	bconn_expect(c, b, RESP_GENERIC, false);
	return 1;
}

void ryw_answer_packet(struct client *c, struct bconn *b, enum resp_state before,
                       enum resp_state st, const uint8_t *payload, size_t take)
{
	if (b->writer && b->rt.last_ok.state &&
	    ok_find_last_gtid(&b->rt.last_ok, c->last_gtid, sizeof(c->last_gtid)) < 0)
		c->last_gtid[0] = 0;
	/* MASTER_GTID_WAIT's one column: 0 when the replica caught up */
	if (b->gtid_wait && before == RS_ROWS && st == RS_ROWS && take >= 2)
		b->gtid_ok = payload[0] == 1 && payload[1] == '0';
}

/* The replica caught up with the session's last write (the command goes on)
 * or did not within read_your_writes_ms (the writer serves the read). */
static void gtid_waited(struct client *c, struct bconn *b)
{
	b->gtid_wait = false;
	c->cur = NULL;
	proxy_metrics_ryw(b->gtid_ok ? RYW_METRIC_GTID_WAIT : RYW_METRIC_GTID_TIMEOUT);
	if (b->gtid_ok) {
		snprintf(b->waited_gtid, sizeof(b->waited_gtid), "%s", c->last_gtid);
		if (route_send_cmd(c, b) < 0)
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
	client_resume(c);
}

bool ryw_internal_done(struct client *c, struct bconn *b)
{
	if (!b->gtid_wait || b->internal != 0)
		return false;
	gtid_waited(c, b);
	return true;
}

void ryw_write_done(struct client *c, const struct bconn *b, bool ok)
{
	struct proxy_engine *e = c->w->e;

	if (!c->cur_write || e->ryw_mode == RYW_OFF)
		return;
	c->ryw_until_ms = now_ms() + (uint64_t)e->ryw_ms;
	/* A write that failed may still have written (the rows before the
	 * failing one, in a table without transactions) and be on its way to
	 * the replicas, but its ERR names no GTID; nor does a write answered
	 * with a result set alone (ANALYZE TABLE): the window rule. */
	c->gtid_blind = !ok || !b->answer_ok || !(b->caps & CAP_SESSION_TRACK);
}

bool ryw_keeps_writer(const struct client *c)
{
	struct proxy_engine *e = c->w->e;

	if ((e->ryw_mode == RYW_WINDOW || (e->ryw_mode == RYW_GTID && c->gtid_blind)) &&
	    now_ms() < c->ryw_until_ms) {
		proxy_metrics_ryw(RYW_METRIC_WINDOW);
		return true;
	}
	return false;
}
