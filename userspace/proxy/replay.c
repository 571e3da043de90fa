/*
 * replay.c - transaction replay on 6450 (transaction_replay,
 * transaction_replay_max_size): owns the session's log of the transaction
 * open on the writer, the checksum of each answer the client had, and the
 * replay of that log on the next writer when the writer connection is lost.
 *
 * - Recording (rp_answered): from the BEGIN (or START TRANSACTION) answered
 *   on the writer to the end of the transaction, each COM_QUERY statement
 *   and the checksum of its answer. A statement that cannot be replayed
 *   faithfully (rp_stmt_ok: a prepared statement's EXECUTE, a session
 *   statement, a routine, a multi-statement, ...) or a log past
 *   transaction_replay_max_size marks the transaction not replayable; it
 *   goes on as before, only its loss is not repaired.
 * - The checksum (rp_sum_packet) is FNV-1a 64 over what is the same on any
 *   server that holds the same data: for an OK its affected rows only (not
 *   the last insert id, status flags, warnings, info text or session-state
 *   part, which differ per connection or server); for an ERR its code; for
 *   a result set the column count and every row's bytes (not the column
 *   definitions, nor the EOF/OK that ends it).
 * - Replay: the writer connection lost (killed, closed, cut off on a
 *   demotion: rp_lost) or its server demoted (rp_demoted) while the
 *   session is in such a transaction and nothing that commits was in
 *   flight: the session's next command (or the one in flight, which never
 *   got an answer) waits for the next writer as a switchover does, and
 *   before it the new connection runs the history, then the log
 *   (rp_prologue), each answer compared (rp_internal_end). All equal: the
 *   command goes (rp_replayed). Otherwise the client gets ERR 1927 naming
 *   why and the session ends (rp_fail), as it did before replay existed.
 */
#define _GNU_SOURCE
#include "proxy/engine_int.h"

#include <stdio.h>
#include <string.h>

/* a session whose replays keep losing the new writer gives up */
#define RP_MAX_TRIES 3
/* how much of a statement's text its ERR quotes */
#define RP_QUOTE 80

static const char *const outcome_names[RP_OUTCOME_COUNT] = {
    [RP_OK] = "ok",
    [RP_MISMATCH] = "mismatch",
    [RP_TOO_LARGE] = "too_large",
    [RP_COMMIT_IN_FLIGHT] = "commit_in_flight",
    [RP_NOT_REPLAYABLE] = "not_replayable",
    [RP_NO_WRITER] = "no_writer",
};

const char *rp_outcome_name(enum rp_outcome o)
{
	return o < RP_OUTCOME_COUNT ? outcome_names[o] : "?";
}

static const char *outcome_words(enum rp_outcome o)
{
	switch (o) {
	case RP_MISMATCH:
		return "mismatch: a statement gave another result on the new writer";
	case RP_TOO_LARGE:
		return "too_large: the transaction passed transaction_replay_max_size";
	case RP_COMMIT_IN_FLIGHT:
		return "commit_in_flight: a COMMIT, ROLLBACK or implicit commit was in flight";
	case RP_NOT_REPLAYABLE:
		return "not_replayable: the transaction ran a statement the proxy does not replay";
	case RP_NO_WRITER:
		return "no_writer: no new writer took the replay within switchover_buffer_ms";
	default:
		return "ok";
	}
}

/* ---- the checksum ---- */

uint64_t rp_sum_bytes(uint64_t h, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

static uint64_t sum_tag(uint64_t h, uint8_t tag)
{
	return rp_sum_bytes(h, &tag, 1);
}

static uint64_t sum_u64(uint64_t h, uint64_t v)
{
	uint8_t le[8];

	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	return rp_sum_bytes(h, le, sizeof(le));
}

uint64_t rp_sum_packet(uint64_t h, enum resp_state before, enum resp_state after,
                       const struct resp_tracker *rt, const uint8_t *p, size_t n)
{
	if (n == 0)
		return h;
	if (before == RS_FIRST || before == RS_INFILE) {
		if (p[0] == 0x00 && rt->ok_now)
			return sum_u64(sum_tag(h, 'O'), rt->last_ok.affected);
		if (p[0] == 0xff && n >= 3)
			return rp_sum_bytes(sum_tag(h, 'E'), p + 1, 2);
		if (p[0] == 0xfb)
			return sum_tag(h, 'I');
		return rp_sum_bytes(sum_tag(h, 'C'), p, n); /* the column count */
	}
	if (before == RS_ROWS && after == RS_ROWS)
		return rp_sum_bytes(sum_tag(h, 'R'), p, n);
	if (before == RS_ROWS && p[0] == 0xff && n >= 3 && rt->saw_err)
		return rp_sum_bytes(sum_tag(h, 'E'), p + 1, 2);
	return h;
}

static bool hashing(const struct bconn *b)
{
	const struct client *c = b->c;

	if (!b->writer || !c || c->ghost)
		return false;
	if (b->internal > 0)
		return b->rp_check && b->rp_skip == 0;
	return c->rp_on || (c->cur_classified && c->cur_tok == CLS_BEGIN);
}

void rp_feed(struct bconn *b, enum resp_state before, enum resp_state after, const uint8_t *p,
             size_t n, uint32_t frag_len)
{
	if (!hashing(b))
		return;
	b->rp_sum = rp_sum_packet(b->rp_sum, before, after, &b->rt, p, n);
	b->rp_frag = before == RS_ROWS && after == RS_ROWS && n < frag_len;
}

void rp_feed_frag(struct bconn *b, const uint8_t *p, size_t n)
{
	if (b->rp_frag && hashing(b))
		b->rp_sum = rp_sum_bytes(b->rp_sum, p, n);
}

/* ---- recording ---- */

void rp_reset(struct client *c)
{
	buf_free(&c->rp_log);
	c->rp_n = 0;
	c->rp_on = false;
	c->rp_bad = RP_OK;
}

static bool enabled(const struct client *c)
{
	return atomic_load(&c->w->e->rp_enabled);
}

/* The statement in c->cmd can run again on another connection with the
 * same effect, given the same data. */
static bool rp_stmt_ok(const struct client *c)
{
	const uint32_t bad_flags = CLS_F_MULTI | CLS_F_ROUTINE | CLS_F_IMPLICIT_COMMIT |
	                           CLS_F_UNREPLAYABLE | CLS_F_USER_VAR_WRITE | CLS_F_USE |
	                           CLS_F_TEMP_TABLE | CLS_F_NAMED_LOCK | CLS_F_AUTOCOMMIT_OFF |
	                           CLS_F_AUTOCOMMIT_ON | CLS_F_UNTERMINATED | CLS_F_PREV_STATE;

	if (buf_used(&c->cmd) == 0 || c->cmd.d[c->cmd.off] != COM_QUERY || c->cur_ps ||
	    !c->cur_classified || c->cur_hist || (c->cur_flags & bad_flags))
		return false;
	if (c->cur_tok != CLS_READ && c->cur_tok != CLS_WRITE && c->cur_tok != CLS_BEGIN)
		return false;
	switch (c->cur_reason) {
	case CLS_R_CALL:
	case CLS_R_UNKNOWN_FUNCTION:
	case CLS_R_NOT_UNDERSTOOD:
	case CLS_R_ADMIN:
	case CLS_R_WRITE_FUNCTION:
	case CLS_R_MULTI:
	case CLS_R_UNTERMINATED:
		return false;
	default:
		return true;
	}
}

/* A command that changes nothing of the transaction: not recorded. */
static bool rp_cmd_neutral(const struct client *c)
{
	uint8_t cmd = buf_used(&c->cmd) ? c->cmd.d[c->cmd.off] : 0;

	return cmd == COM_PING || cmd == COM_STMT_PREPARE || cmd == COM_STMT_CLOSE ||
	       cmd == COM_STMT_RESET || cmd == COM_STMT_SEND_LONG_DATA;
}

static void mark_bad(struct client *c, enum rp_outcome why)
{
	if (c->rp_bad == RP_OK)
		log_debug("proxy: the transaction of a session of %s cannot be replayed: %s",
		          c->user, outcome_words(why));
	buf_free(&c->rp_log);
	c->rp_n = 0;
	c->rp_bad = (uint8_t)why;
}

static void rp_record(struct client *c, uint64_t sum)
{
	const uint8_t *p = c->cmd.d + c->cmd.off;
	uint32_t n = (uint32_t)buf_used(&c->cmd);
	uint64_t max = atomic_load(&c->w->e->rp_max);
	uint8_t len[4] = {(uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24)};
	uint8_t s[8];

	if (buf_used(&c->rp_log) + sizeof(len) + n + sizeof(s) > max) {
		mark_bad(c, RP_TOO_LARGE);
		return;
	}
	for (int i = 0; i < 8; i++)
		s[i] = (uint8_t)(sum >> (8 * i));
	if (buf_append(&c->rp_log, len, sizeof(len)) < 0 || buf_append(&c->rp_log, p, n) < 0 ||
	    buf_append(&c->rp_log, s, sizeof(s)) < 0) {
		mark_bad(c, RP_TOO_LARGE); /* out of memory: as if past the bound */
		return;
	}
	c->rp_n++;
}

void rp_answered(struct client *c, struct bconn *b, bool opened)
{
	uint64_t sum = b->rp_sum;

	b->rp_sum = RP_SUM0;
	b->rp_frag = false;
	if (!c->in_trans || !enabled(c)) {
		if (c->rp_on || c->rp_n)
			rp_reset(c);
		return;
	}
	if (!b->writer)
		return;
	if (opened) {
		rp_reset(c);
		c->rp_on = true;
	}
	if (!c->rp_on) {
		/* a transaction begun before replay was on, or by autocommit=0 */
		c->rp_on = true;
		mark_bad(c, RP_NOT_REPLAYABLE);
		return;
	}
	if (c->rp_bad != RP_OK || rp_cmd_neutral(c))
		return;
	if (!rp_stmt_ok(c) || (opened && c->cur_tok != CLS_BEGIN)) {
		mark_bad(c, RP_NOT_REPLAYABLE);
		return;
	}
	rp_record(c, sum);
}

/* ---- losing the writer ---- */

enum rp_outcome rp_why_not(const struct client *c, const struct bconn *b, bool in_flight)
{
	if (!enabled(c) || !c->in_trans || c->autocommit_off || c->pin_writer || c->ro_trans ||
	    !b || b->keep || b->has_cursor || !c->rp_on)
		return RP_NOT_REPLAYABLE;
	if (c->rp_bad != RP_OK)
		return (enum rp_outcome)c->rp_bad;
	if (c->rp_n == 0)
		return RP_NOT_REPLAYABLE;
	if (!in_flight)
		return RP_OK;
	/* the command sent there never answered: it runs again after the
	 * replay, unless it may have committed (or was half passed on) */
	if (c->fwd_started)
		return RP_NOT_REPLAYABLE;
	if (c->cur_classified && (c->cur_tok == CLS_END || (c->cur_flags & CLS_F_IMPLICIT_COMMIT)))
		return RP_COMMIT_IN_FLIGHT;
	if (!c->cur_classified || (c->cur_flags & (CLS_F_MULTI | CLS_F_ROUTINE)) ||
	    c->cur_reason == CLS_R_CALL || c->cur_reason == CLS_R_UNKNOWN_FUNCTION ||
	    c->cur_reason == CLS_R_NOT_UNDERSTOOD || c->cur_reason == CLS_R_ADMIN)
		return RP_NOT_REPLAYABLE;
	return RP_OK;
}

static void rp_message(char *msg, size_t cap, const char *name, enum rp_outcome why,
                       const char *detail)
{
	snprintf(msg, cap,
	         "Connection was killed (mysteer: this session's transaction lost its writer "
	         "connection and was not replayed (writer %s): %s%s%s; reconnect to go on)",
	         name, outcome_words(why), detail ? ": " : "", detail ? detail : "");
}

/* The session ends with ERR 1927 naming why: as the answer to its command
 * in flight (active), or at once. b is closed, so nothing more of the
 * transaction runs there. */
static void rp_fail(struct client *c, struct bconn *b, enum rp_outcome why, const char *detail)
{
	char msg[512];
	bool active = c->st == C_BUSY;

	rp_message(msg, sizeof(msg), b->name, why, detail);
	log_info("proxy: a transaction of %s from %s is not replayed: %s%s%s", c->user, c->host,
	         outcome_words(why), detail ? ": " : "", detail ? detail : "");
	proxy_metrics_replay(why);
	bconn_free(b);
	rp_reset(c);
	c->rp_pending = false;
	c->rp_tries = 0;
	if (!active) {
		client_shed(c, 1927, "70100", msg);
		return;
	}
	wait_dequeue(c);
	sw_dequeue(c);
	client_cmd_fail_state(c, 1927, "70100", msg);
	c->closing = true;
	if (client_flush(c) < 0 || c->closing)
		client_close(c);
}

/* The transaction waits for the next writer: b goes (closed, so what ran
 * there is rolled back), the log stays. */
static void rp_arm(struct client *c, struct bconn *b, const char *what)
{
	log_info("proxy: %s %s: the transaction of a session of %s (%u statements) is replayed "
	         "on the next writer",
	         b->name, what, c->user, c->rp_n);
	c->rp_pending = true;
	c->sw_replay_begin = false; /* the log begins with its BEGIN */
	b->rp_check = false;
	bconn_free(b);
}

bool rp_lost(struct bconn *b)
{
	struct client *c = b->c;
	bool active;
	enum rp_outcome why;

	if (!c || c->ghost || c->dead || !b->writer || !enabled(c) || !c->in_trans ||
	    (c->wconn != b && c->cur != b))
		return false;
	/* during a replay the command is not sent yet */
	active = c->cur == b && c->st == C_BUSY;
	why = rp_why_not(c, b, active && !b->rp_check);
	if (why == RP_OK && ++c->rp_tries > RP_MAX_TRIES)
		why = RP_NO_WRITER;
	if (why != RP_OK) {
		rp_fail(c, b, why, NULL);
		return true;
	}
	rp_arm(c, b, "was lost");
	if (!active)
		return true;
	c->st = C_BUSY;
	route_cmd(c);
	client_resume(c);
	return true;
}

bool rp_demoted(struct client *c, struct bconn *b, const char **why)
{
	enum rp_outcome o;

	*why = NULL;
	if (!enabled(c) || !c->in_trans)
		return false;
	o = rp_why_not(c, b, false);
	if (o != RP_OK) {
		proxy_metrics_replay(o);
		*why = outcome_words(o);
		return false;
	}
	rp_arm(c, b, "is no longer the writer");
	return true;
}

/* ---- replaying ---- */

int rp_prologue(struct client *c, struct bconn *b)
{
	const uint8_t *p;
	size_t n = buf_used(&c->rp_log), off = 0;

	if (!c->rp_pending || !b->writer || n == 0)
		return 0;
	p = c->rp_log.d + c->rp_log.off;
	b->rp_skip = b->internal;
	while (off + 4 <= n) {
		uint32_t len =
		    p[off] | p[off + 1] << 8 | p[off + 2] << 16 | (uint32_t)p[off + 3] << 24;
		if (buf_put_packet(&b->out, 0, p + off + 4, len) < 0)
			return -1;
		b->internal++;
		off += 4 + (size_t)len + 8;
	}
	b->rp_check = true;
	b->rp_idx = 0;
	b->rp_off = 0;
	b->rp_sum = RP_SUM0;
	b->rp_frag = false;
	bconn_expect(c, b, bconn_next_kind(b), false);
	return 1;
}

static void quote_entry(const uint8_t *p, uint32_t len, char *out, size_t cap)
{
	size_t k = 0;

	for (uint32_t i = 1; i < len && k + 4 < cap && k < RP_QUOTE; i++)
		out[k++] = p[i] >= 0x20 && p[i] < 0x7f ? (char)p[i] : ' ';
	if (len > RP_QUOTE + 1 && k + 4 < cap) {
		memcpy(out + k, "...", 3);
		k += 3;
	}
	out[k] = 0;
}

bool rp_internal_end(struct client *c, struct bconn *b)
{
	const uint8_t *p;
	uint64_t got = b->rp_sum, want = 0;
	uint32_t len;
	char detail[256], quote[RP_QUOTE + 8];

	b->rp_sum = RP_SUM0;
	b->rp_frag = false;
	if (b->rp_skip > 0) {
		b->rp_skip--;
		return true;
	}
	if (b->rp_off + 4 > buf_used(&c->rp_log))
		return true; /* not reached: one answer a statement */
	p = c->rp_log.d + c->rp_log.off + b->rp_off;
	len = p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
	for (int i = 0; i < 8; i++)
		want |= (uint64_t)p[4 + len + (size_t)i] << (8 * i);
	if (got == want) {
		b->rp_idx++;
		b->rp_off += 4 + (size_t)len + 8;
		return true;
	}
	quote_entry(p + 4, len, quote, sizeof(quote));
	snprintf(detail, sizeof(detail), "statement %u of %u (%s)", b->rp_idx + 1, c->rp_n, quote);
	rp_fail(c, b, RP_MISMATCH, detail);
	return false;
}

bool rp_replayed(struct client *c, struct bconn *b)
{
	if (!b->rp_check || b->internal > 0)
		return false;
	b->rp_check = false;
	c->rp_pending = false;
	c->rp_tries = 0;
	c->cur = NULL;
	proxy_metrics_replay(RP_OK);
	log_info("proxy: the transaction of a session of %s (%u statements) was replayed on %s: "
	         "every result matched",
	         c->user, c->rp_n, b->name);
	if (route_send_cmd(c, b) < 0)
		bconn_fail(b, "write failed");
	return true;
}

void rp_no_writer(struct client *c, const char *msg)
{
	char m[512];

	snprintf(m, sizeof(m),
	         "Connection was killed (mysteer: the writer connection was lost in a "
	         "transaction, which was not replayed: %s (%s); reconnect to go on)",
	         outcome_words(RP_NO_WRITER), msg);
	log_info("proxy: a transaction of %s from %s is not replayed: %s (%s)", c->user, c->host,
	         outcome_words(RP_NO_WRITER), msg);
	proxy_metrics_replay(RP_NO_WRITER);
	rp_reset(c);
	c->rp_pending = false;
	c->rp_tries = 0;
	client_cmd_fail_state(c, 1927, "70100", m);
	c->closing = true;
}
