/*
 * ops.c - the operations clients expect of a server, done by the proxy
 * because only it knows its sessions: CONNECTION_ID() answers the id the
 * proxy gave the client in its handshake (not the backend connection's,
 * which changes from statement to statement under multiplexing), and
 * KILL [CONNECTION | QUERY] N takes N as such an id.
 *
 * The sessions of all workers are in one registry (e->sess, under
 * e->sess_mu), by connection id: a KILL on one worker finds a session of
 * another. What another thread may read of a session is its registry entry
 * only: the id, the user it logged in as (reg_user) and, as one atomic
 * word, the backend and server thread id its statement runs on now
 * (running). The entry leaves the registry, under the lock, before the
 * session is freed.
 *
 * KILL QUERY N: the killer's own session sends KILL QUERY <thread id> to
 * the backend where N's statement runs, on a connection of its own (another
 * than N's, which is busy). KILL [CONNECTION] N: N's worker is told (a flag
 * and its eventfd) and ends the session, its busy backend connection closed
 * (never parked dirty), and the statement it ran is killed as above.
 */
#define _GNU_SOURCE
#include "proxy/engine_int.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* ---- the registry ---- */

static size_t sess_bucket(uint32_t id)
{
	return (size_t)(id * 2654435761u) % SESS_BUCKETS;
}

void ops_sess_register(struct client *c)
{
	struct proxy_engine *e = c->w->e;
	size_t h = sess_bucket(c->conn_id);

	if (c->registered)
		return;
	pthread_mutex_lock(&e->sess_mu);
	snprintf(c->reg_user, sizeof(c->reg_user), "%s", c->user);
	c->reg_next = e->sess[h];
	e->sess[h] = c;
	c->registered = true;
	pthread_mutex_unlock(&e->sess_mu);
}

/* The session's user changed (COM_CHANGE_USER): KILL checks the new one. */
void ops_sess_set_user(struct client *c)
{
	struct proxy_engine *e = c->w->e;

	pthread_mutex_lock(&e->sess_mu);
	snprintf(c->reg_user, sizeof(c->reg_user), "%s", c->user);
	pthread_mutex_unlock(&e->sess_mu);
}

void ops_sess_unregister(struct client *c)
{
	struct proxy_engine *e = c->w->e;
	struct client **pp;

	if (!c->registered)
		return;
	pthread_mutex_lock(&e->sess_mu);
	for (pp = &e->sess[sess_bucket(c->conn_id)]; *pp; pp = &(*pp)->reg_next)
		if (*pp == c) {
			*pp = c->reg_next;
			break;
		}
	c->registered = false;
	pthread_mutex_unlock(&e->sess_mu);
}

/* The client's command now runs on b (0 thread id: b is still logging in;
 * bconn_login calls again when the server said its id). */
void ops_sess_running(struct client *c, const struct bconn *b)
{
	uint64_t v = 0;

	if (b && b->thread_id)
		v = (uint64_t)b->backend_id << 32 | b->thread_id;
	atomic_store_explicit(&c->running, v, memory_order_release);
}

/* A KILL [CONNECTION] of another thread: the worker of the session ends it
 * (its eventfd woke it up). */
void ops_sess_kills(struct worker *w)
{
	struct client *c, *next;

	if (!atomic_exchange(&w->kills, false))
		return;
	for (c = w->clients; c; c = next) {
		next = c->next;
		if (c->dead)
			continue;
		if (atomic_exchange(&c->kill_query, false) && !atomic_load(&c->kill_conn)) {
			wait_kill(c);
			continue;
		}
		if (!atomic_load(&c->kill_conn))
			continue;
		log_info("proxy: session %u of %s from %s killed (KILL CONNECTION)", c->conn_id,
		         c->user, c->host);
		/* a statement in flight gets the server's ERR, unless its answer
		 * has begun; its backend connection closes (never parked with
		 * the statement running, pool_park) */
		if (c->st == C_BUSY && !c->fwd_started) {
			uint8_t pkt[128];
			int n = err_build(pkt, sizeof(pkt), 1927, "70100", "Connection was killed");
			if (n > 0 && buf_put_packet(&c->out, 1, pkt, (size_t)n) >= 0 &&
			    client_flush(c) < 0)
				log_debug("proxy: telling %s: %s", c->host, strerror(errno));
		}
		if (c->cur && !c->cur->dead && c->cur->c == c)
			bconn_free(c->cur);
		c->cur = NULL;
		client_close(c);
	}
}

/* ---- the statement text ---- */

static bool ci_contains(const uint8_t *p, size_t n, const char *w)
{
	size_t wl = strlen(w);

	for (size_t i = 0; i + wl <= n; i++)
		if ((p[i] | 0x20) == (uint8_t)w[0] && !strncasecmp((const char *)p + i, w, wl))
			return true;
	return false;
}

static bool word_byte(uint8_t c)
{
	return isalnum(c) || c == '_' || c == '$' || c >= 0x80;
}

static bool word_is(const uint8_t *p, size_t n, const char *w)
{
	return n == strlen(w) && !strncasecmp((const char *)p, w, n);
}

/* Where a statement clause keyword ends a select list. */
static bool ends_select_item(const uint8_t *p, size_t n)
{
	static const char *const kw[] = {"from",   "into",  "where", "group", "order",
	                                 "having", "limit", "union", "for",   "window"};

	for (size_t k = 0; k < sizeof(kw) / sizeof(kw[0]); k++)
		if (word_is(p, n, kw[k]))
			return true;
	return false;
}

/* Whether a select item ends at k: the end, ',', ';' or a clause keyword. */
static bool item_ends_at(const uint8_t *p, size_t n, size_t k)
{
	size_t m = k;

	if (k == n || p[k] == ',' || p[k] == ';')
		return true;
	while (m < n && word_byte(p[m]))
		m++;
	return m > k && ends_select_item(p + k, m - k);
}

/* A quoted string or identifier from its opening quote at p[i]: the index
 * after its end. */
static size_t skip_quote(const uint8_t *p, size_t n, size_t i)
{
	uint8_t q = p[i++];

	while (i < n) {
		if (p[i] == '\\' && q != '`') {
			i += 2;
			continue;
		}
		if (p[i] == q) {
			if (i + 1 < n && p[i + 1] == q) {
				i += 2;
				continue;
			}
			return i + 1;
		}
		i++;
	}
	return n;
}

/* Spaces and plain comments from i; the index of what follows. */
static size_t skip_blank(const uint8_t *p, size_t n, size_t i)
{
	for (;;) {
		while (i < n && isspace(p[i]))
			i++;
		if (i + 1 < n && p[i] == '/' && p[i + 1] == '*' &&
		    !(i + 2 < n && (p[i + 2] == '!' || p[i + 2] == 'M'))) {
			const uint8_t *e = memmem(p + i + 2, n - i - 2, "*/", 2);
			i = e ? (size_t)(e - p) + 2 : n;
			continue;
		}
		if (i < n && (p[i] == '#' ||
		              (i + 2 < n && p[i] == '-' && p[i + 1] == '-' && isspace(p[i + 2])))) {
			const uint8_t *e = memchr(p + i, '\n', n - i);
			i = e ? (size_t)(e - p) + 1 : n;
			continue;
		}
		return i;
	}
}

struct scan {
	size_t nstmts;   /* statements with anything in them */
	bool kill;       /* one of them begins with KILL */
	size_t kill_off; /* where that KILL begins */
	size_t ncalls;   /* CONNECTION_ID() calls rewritten */
};

/*
 * What replaces a CONNECTION_ID() call: an expression of the server's own
 * type for it, INT(10) UNSIGNED NOT NULL, so that a table made from it gets
 * the column a server would make; in a KILL, whose parser wants it, the
 * number alone.
 */
static void id_text(char *num, size_t size, uint32_t id, bool in_kill)
{
	if (in_kill)
		snprintf(num, size, "%" PRIu32, id);
	else
		snprintf(num, size, "CAST(%010" PRIu32 " AS UNSIGNED)", id);
}

/*
 * Walks the SQL as the server's lexer would split it (strings, quoted
 * identifiers, comments, executable comments as code), and writes to out
 * (when not NULL) the text with each CONNECTION_ID() call replaced by the
 * session's id; a call that is a whole item of a top-level select list
 * keeps its column name with an alias. -1 out of memory.
 */
static int sql_scan(const uint8_t *p, size_t n, uint32_t id, struct buf *out, struct scan *s)
{
	size_t i = 0, copied = 0, depth = 0;
	bool stmt_start = true, in_select = false;
	/* the token before: ',' or the word SELECT / DISTINCT / ALL (a select
	 * item may begin), '.' (a qualified name), else 0 */
	char prev = 0;
	char num[40];

	memset(s, 0, sizeof(*s));
	while (i < n) {
		uint8_t c = p[i];
		size_t start = i;

		if (isspace(c)) {
			i++;
			continue;
		}
		if (c == '\'' || c == '"' || c == '`') {
			i = skip_quote(p, n, i);
			prev = 0;
			stmt_start = false;
			continue;
		}
		if (c == '#' || (c == '-' && i + 2 < n && p[i + 1] == '-' && isspace(p[i + 2])) ||
		    (c == '-' && i + 2 == n && p[i + 1] == '-')) {
			const uint8_t *e = memchr(p + i, '\n', n - i);
			i = e ? (size_t)(e - p) + 1 : n;
			continue;
		}
		if (c == '/' && i + 1 < n && p[i + 1] == '*') {
			/* executable comments (slash-star-bang, slash-star-M-bang) are code */
			if (i + 2 < n && (p[i + 2] == '!' ||
			                  (p[i + 2] == 'M' && i + 3 < n && p[i + 3] == '!'))) {
				i += p[i + 2] == '!' ? 3 : 4;
				while (i < n && isdigit(p[i]))
					i++;
				continue;
			}
			const uint8_t *e = memmem(p + i + 2, n - i - 2, "*/", 2);
			i = e ? (size_t)(e - p) + 2 : n;
			continue;
		}
		if (c == '*' && i + 1 < n && p[i + 1] == '/') {
			i += 2; /* the end of an executable comment */
			continue;
		}
		if (c == '@') { /* @var, @@var: no function call */
			while (i < n && p[i] == '@')
				i++;
			if (i < n && (p[i] == '\'' || p[i] == '"' || p[i] == '`'))
				i = skip_quote(p, n, i);
			while (i < n && (word_byte(p[i]) || p[i] == '.'))
				i++;
			prev = 0;
			stmt_start = false;
			continue;
		}
		if (!word_byte(c)) {
			i++;
			if (c == ';' && depth == 0) {
				stmt_start = true;
				in_select = false;
			} else {
				stmt_start = false;
			}
			if (c == '(')
				depth++;
			else if (c == ')' && depth > 0)
				depth--;
			prev = c == ',' ? ',' : c == '.' ? '.' : 0;
			continue;
		}
		while (i < n && word_byte(p[i]))
			i++;
		if (stmt_start) {
			s->nstmts++;
			if (word_is(p + start, i - start, "kill") && !s->kill) {
				s->kill = true;
				s->kill_off = start;
			}
		}
		stmt_start = false;
		if (depth == 0 && word_is(p + start, i - start, "select"))
			in_select = true;
		else if (depth == 0 && ends_select_item(p + start, i - start))
			in_select = false;
		if (prev != '.' && word_is(p + start, i - start, "connection_id")) {
			size_t j = skip_blank(p, n, i), end;
			if (j < n && p[j] == '(') {
				j = skip_blank(p, n, j + 1);
				if (j < n && p[j] == ')') {
					bool item = false;
					size_t k;

					end = j + 1;
					k = skip_blank(p, n, end);
					if (in_select && depth == 0 &&
					    (prev == ',' || prev == 's') && item_ends_at(p, n, k))
						item = true;
					s->ncalls++;
					if (out) {
						id_text(num, sizeof(num), id, s->kill);
						if (buf_append(out, p + copied, start - copied) <
						        0 ||
						    buf_append(out, num, strlen(num)) < 0)
							return -1;
						/* the server names the column after the call
						 * as written; it has no backquote */
						if (item &&
						    (buf_append(out, " AS `", 5) < 0 ||
						     buf_append(out, p + start, end - start) < 0 ||
						     buf_append(out, "`", 1) < 0))
							return -1;
						copied = end;
					}
					i = end;
					prev = 0;
					continue;
				}
			}
		}
		/* 's': a select item may begin after this word */
		prev = word_is(p + start, i - start, "select") ||
		               word_is(p + start, i - start, "distinct") ||
		               word_is(p + start, i - start, "all")
		           ? 's'
		           : 0;
	}
	if (out && copied < n && s->ncalls > 0 && buf_append(out, p + copied, n - copied) < 0)
		return -1;
	return 0;
}

/* ---- KILL ---- */

enum kill_kind { KILL_CONNECTION, KILL_QUERY };

/* KILL [HARD | SOFT] [CONNECTION | QUERY] <number> [;]: 0 and its parts,
 * -1 for another form (KILL USER, KILL QUERY ID, an expression). */
static int kill_parse(const uint8_t *p, size_t n, enum kill_kind *kind, uint64_t *id)
{
	size_t i = 4, s; /* after KILL */
	uint64_t v = 0;

	*kind = KILL_CONNECTION;
	for (int step = 0; step < 2; step++) {
		i = skip_blank(p, n, i);
		s = i;
		while (i < n && isalpha(p[i]))
			i++;
		if (step == 0 && (word_is(p + s, i - s, "hard") || word_is(p + s, i - s, "soft")))
			continue;
		if (word_is(p + s, i - s, "connection"))
			break;
		if (word_is(p + s, i - s, "query")) {
			*kind = KILL_QUERY;
			break;
		}
		i = s;
		break;
	}
	i = skip_blank(p, n, i);
	s = i;
	while (i < n && isdigit(p[i]) && i - s < 19)
		v = v * 10 + (uint64_t)(p[i++] - '0');
	if (i == s || (i < n && word_byte(p[i])))
		return -1;
	i = skip_blank(p, n, i);
	if (i < n && p[i] == ';')
		i = skip_blank(p, n, i + 1);
	if (i != n)
		return -1;
	*id = v;
	return 0;
}

static void answer_err(struct client *c, uint16_t code, const char *state, const char *msg)
{
	uint8_t pkt[600];
	int n = err_build(pkt, sizeof(pkt), code, state, msg);

	if (n > 0 && buf_put_packet(&c->out, 1, pkt, (size_t)n) < 0)
		c->closing = true;
}

static void answer_ok(struct client *c)
{
	uint8_t pkt[32];
	uint16_t st = (c->autocommit_off ? 0 : SST_AUTOCOMMIT) | (c->in_trans ? SST_IN_TRANS : 0);
	int n = ok_build(pkt, sizeof(pkt), 0, 0, 0, st, 0);

	if (n > 0 && buf_put_packet(&c->out, 1, pkt, (size_t)n) < 0)
		c->closing = true;
}

/* Whether user is named in list, a comma-separated [proxy] kill_any_user. */
static bool in_list(const char *list, const char *user)
{
	size_t ul = strlen(user);

	while (*list) {
		const char *e;
		size_t n;

		while (*list == ' ' || *list == '\t' || *list == ',')
			list++;
		e = list;
		while (*e && *e != ',')
			e++;
		n = (size_t)(e - list);
		while (n > 0 && (list[n - 1] == ' ' || list[n - 1] == '\t'))
			n--;
		if (n > 0 && n == ul && !memcmp(list, user, n))
			return true;
		list = e;
	}
	return false;
}

/*
 * The KILL of session id by c. 1: answered here; 0: c->cmd now holds the
 * KILL QUERY for the backend, which route_cmd sends there (R_TARGET).
 */
static int kill_session(struct client *c, enum kill_kind kind, uint64_t id)
{
	struct proxy_engine *e = c->w->e;
	struct client *v = NULL;
	struct worker *vw = NULL;
	uint64_t run = 0;
	char msg[300], sql[64];
	bool allowed = false;

	if (id <= UINT32_MAX) {
		pthread_mutex_lock(&e->sess_mu);
		for (v = e->sess[sess_bucket((uint32_t)id)]; v; v = v->reg_next)
			if (v->conn_id == id)
				break;
		if (v) {
			allowed = !strcmp(v->reg_user, c->user) || in_list(e->kill_any, c->user);
			run = atomic_load_explicit(&v->running, memory_order_acquire);
			vw = v->w;
			if (allowed && v != c && (kind == KILL_CONNECTION || !run)) {
				/* its worker ends the session, or the statement
				 * that waits for a connection (wait_kill) */
				atomic_store(
				    kind == KILL_CONNECTION ? &v->kill_conn : &v->kill_query, true);
				atomic_store(&vw->kills, true);
			}
		}
		pthread_mutex_unlock(&e->sess_mu);
	}
	if (!v) {
		snprintf(msg, sizeof(msg), "Unknown thread id: %" PRIu64, id);
		answer_err(c, 1094, "HY000", msg);
		return 1;
	}
	if (!allowed) {
		log_info("proxy: KILL of session %" PRIu64 " by %s refused: another user's", id,
		         c->user);
		snprintf(msg, sizeof(msg), "You are not owner of thread %" PRIu64, id);
		answer_err(c, 1095, "HY000", msg);
		return 1;
	}
	if (v == c) {
		if (kind == KILL_CONNECTION) {
			log_info("proxy: session %u of %s killed itself", c->conn_id, c->user);
			answer_err(c, 1927, "70100", "Connection was killed");
			c->closing = true;
		} else {
			answer_err(c, 1317, "70100", "Query execution was interrupted");
		}
		return 1;
	}
	if (kind == KILL_CONNECTION || !run) {
		uint64_t one = 1;
		if (write(vw->wakefd, &one, sizeof(one)) < 0)
			log_warn("proxy: waking a worker for a KILL: %s", strerror(errno));
	}
	log_info("proxy: KILL %s %" PRIu64 " by %s: %s",
	         kind == KILL_QUERY ? "QUERY" : "CONNECTION", id, c->user,
	         run ? "its statement is killed on its backend" : "no statement runs");
	if (!run) {
		answer_ok(c);
		return 1;
	}
	/* the statement dies on its backend in both cases: closing the session's
	 * connection alone would leave it running there */
	c->target_id = (uint32_t)(run >> 32);
	snprintf(sql, sizeof(sql), "%cKILL QUERY %" PRIu32, COM_QUERY, (uint32_t)run);
	buf_consume(&c->cmd, buf_used(&c->cmd));
	if (buf_append(&c->cmd, sql, strlen(sql)) < 0) {
		c->closing = true;
		return 1;
	}
	c->route = R_TARGET;
	c->kill_soft = true;
	return 0;
}

/*
 * A COM_QUERY or COM_STMT_PREPARE in c->cmd, before it is classified:
 * CONNECTION_ID() calls replaced by the session's id (in c->cmd), and a
 * KILL handled. 0: go on with c->cmd; 1: answered here (or routed: the
 * caller is done with it).
 */
int ops_statement(struct client *c)
{
	const uint8_t *p = c->cmd.d + c->cmd.off;
	size_t n = buf_used(&c->cmd);
	bool prepare = p[0] == COM_STMT_PREPARE;
	struct buf out = {0};
	struct scan s;
	enum kill_kind kind;
	uint64_t id;

	c->kill_soft = false;
	if (!ci_contains(p + 1, n - 1, "connection_id") && !ci_contains(p + 1, n - 1, "kill"))
		return 0;
	if (buf_append(&out, p, 1) < 0 || sql_scan(p + 1, n - 1, c->conn_id, &out, &s) < 0) {
		buf_free(&out);
		c->closing = true;
		return 1;
	}
	if (s.ncalls > 0) {
		buf_consume(&c->cmd, buf_used(&c->cmd));
		if (buf_append(&c->cmd, out.d, out.len) < 0) {
			buf_free(&out);
			c->closing = true;
			return 1;
		}
		log_debug("proxy: CONNECTION_ID() of session %u in a statement of %s: %u",
		          c->conn_id, c->user, c->conn_id);
	}
	buf_free(&out);
	if (!s.kill)
		return 0;
	p = c->cmd.d + c->cmd.off + 1;
	n = buf_used(&c->cmd) - 1;
	/* a KILL never reaches a backend as the client wrote it: its id is the
	 * proxy's, not a thread of any server */
	if (prepare) {
		answer_err(c, 1295, "HY000",
		           "This command is not supported in the prepared statement protocol yet "
		           "(mysteer: send KILL as a plain query)");
		return 1;
	}
	if (s.nstmts > 1 || kill_parse(p + s.kill_off, n - s.kill_off, &kind, &id) < 0) {
		answer_err(c, 1235, "42000",
		           "This version of MariaDB doesn't yet support 'this form of KILL through "
		           "mysteer' (KILL [CONNECTION | QUERY] <id>, alone in its statement, "
		           "with id a CONNECTION_ID() of 6450)");
		return 1;
	}
	if (kill_session(c, kind, id) > 0)
		return 1;
	/* the backend's KILL QUERY: as any command, to c->route (R_TARGET) */
	c->cur_kind = RESP_GENERIC;
	mux_next(c);
	route_cmd(c);
	return 1;
}

/* The answer to the proxy's KILL QUERY on the backend (c->kill_soft): the
 * thread may have ended since (its statement and session gone there), which
 * for the client is a KILL done. p: a whole ERR packet, header included. */
bool ops_kill_answer_gone(struct client *c, const uint8_t *p, size_t n)
{
	struct err_pkt er;

	return c->kill_soft && n > PKT_HDR && p[PKT_HDR] == 0xff &&
	       err_parse(p + PKT_HDR, n - PKT_HDR, &er) == 0 && er.code == 1094;
}
