/*
 * client.c - a client session from accept to close: the handshake and the
 * login (mysql_native_password, caching_sha2_password), the commands it
 * sends (COM_QUERY and the prepared statement commands included), its
 * output buffer, and the end of each command in flight (an answer or an
 * ERR). Also the bounds a client cannot pass: its output queue, its
 * buffers within max_client_buffer_bytes, its packet and idle timeouts, the
 * connections not logged in yet (the oldest makes room), and the end of a
 * session at a bound (client_shed). Routing is route.c's, the backends'
 * connections backend.c's.
 */
#define _GNU_SOURCE
#include "common/dlist.h"
#include "proxy/engine_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proxy/tls.h"

/* ---- output ---- */

/* Whether to take the client's next command now: not while its output
 * queue holds OUT_CMD_MAX (it reads its answers first). */
static bool client_takes(const struct client *c)
{
	return c->st != C_BUSY && !c->shedding && !c->infile && buf_used(&c->out) < OUT_CMD_MAX;
}

/* Whether to read from the client now: not while the commands it pipelined
 * wait (behind a command that runs, or behind answers it has not read) and
 * already fill IN_HIGH_WATER, nor while its output queue holds OUT_CMD_MAX.
 * TCP holds the rest, as it would in front of a server. */
static bool client_reads(const struct client *c)
{
	if (c->shedding)
		return true; /* to drop it (shed_event) */
	if (buf_used(&c->out) >= OUT_CMD_MAX)
		return false;
	/* a LOAD DATA LOCAL file: as fast as the backend takes it */
	if (c->infile && c->st == C_BUSY && c->cur && buf_used(&c->cur->out) >= OUT_HIGH_WATER)
		return false;
	return c->st != C_BUSY || buf_used(&c->in) < IN_HIGH_WATER;
}

static void client_update(struct client *c)
{
	uint32_t ev =
	    (client_reads(c) ? EPOLLIN | EPOLLRDHUP : 0) | (buf_used(&c->out) ? EPOLLOUT : 0);

	if (c->tls_accepting)
		ev = c->tls_want | EPOLLRDHUP;
	else
		ev |= c->tls_want;

	ep_mod(c->w, c->fd, &c->events, ev, c);
}

/* The client's socket, in plain text or through its TLS connection, as
 * recv(2) and send(2) (tls_as_socket_io). */
static ssize_t client_recv(struct client *c, void *p, size_t n)
{
	if (!c->tls)
		return recv(c->fd, p, n, 0);
	return tls_as_socket_io(tls_read(c->tls, p, n), EPOLLIN, &c->tls_want);
}

static ssize_t client_send_raw(struct client *c, const void *p, size_t n)
{
	if (!c->tls)
		return send(c->fd, p, n, MSG_NOSIGNAL);
	return tls_as_socket_io(tls_write(c->tls, p, n), EPOLLOUT, &c->tls_want);
}

/* Writes what is queued; -1 when the client is gone. */
int client_flush(struct client *c)
{
	/* nothing goes out in the middle of a TLS handshake */
	while (buf_used(&c->out) > 0 && !c->tls_accepting) {
		ssize_t n = client_send_raw(c, c->out.d + c->out.off, buf_used(&c->out));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0)
			return -1;
		buf_consume(&c->out, (size_t)n);
	}
	buf_trim(&c->out);
	client_update(c);
	return 0;
}

/* ---- buffers within max_client_buffer_bytes ---- */

static size_t buf_charge(size_t cap)
{
	return cap > CLIENT_BUF_FREE ? cap : 0;
}

static size_t client_charge(const struct client *c)
{
	return buf_charge(c->in.cap) + buf_charge(c->cmd.cap);
}

/* Takes n bytes of max_client_buffer_bytes; false when they are not left. */
static bool client_buf_take(struct proxy_engine *e, size_t n)
{
	uint64_t max = atomic_load(&e->max_client_buf), v = atomic_load(&e->client_buf);

	do {
		if (v + n > max)
			return false;
	} while (!atomic_compare_exchange_weak(&e->client_buf, &v, v + n));
	return true;
}

/* The count follows what the client's buffers hold now (after they shrank,
 * or before they are freed with c->in and c->cmd emptied). */
void client_buf_sync(struct client *c)
{
	size_t now = client_charge(c);

	if (now > c->buf_charged)
		atomic_fetch_add(&c->w->e->client_buf, now - c->buf_charged);
	else
		atomic_fetch_sub(&c->w->e->client_buf, c->buf_charged - now);
	c->buf_charged = now;
}

/* buf_reserve of c->in or c->cmd within max_client_buffer_bytes: 0 done,
 * 1 refused (the bound), -1 out of memory. */
static int client_buf_reserve(struct client *c, struct buf *b, size_t more)
{
	size_t before = buf_charge(b->cap), after = buf_charge(buf_cap_for(b, more));

	if (after > before) {
		if (!client_buf_take(c->w->e, after - before))
			return 1;
		c->buf_charged += after - before;
	}
	if (buf_reserve(b, more) < 0) {
		client_buf_sync(c);
		return -1;
	}
	return 0;
}

/* The sequence id of the server's next packet in the client's state. */
static uint8_t reply_seq(const struct client *c)
{
	/* the SSLRequest took one sequence id before the handshake response */
	uint8_t tls = c->tls ? 1 : 0;

	if (c->st == C_SHA2 || (c->st == C_SWITCH && c->chu_prev))
		return c->auth_seq;
	return c->st == C_HANDSHAKE ? 2 + tls : c->st == C_SWITCH ? 4 + tls : 1;
}

static void buffers_full(struct client *c)
{
	char msg[200];

	snprintf(msg, sizeof(msg),
	         "Out of memory: the proxy's buffers for large packets of all clients are full "
	         "(max_client_buffer_bytes = %llu)",
	         (unsigned long long)atomic_load(&c->w->e->max_client_buf));
	log_info("proxy: a large packet of %s from %s refused: max_client_buffer_bytes reached",
	         c->user[0] ? c->user : "(not logged in)", c->host);
	client_shed(c, 1041, "HY000", msg);
}

static void client_send(struct client *c, uint8_t seq, const uint8_t *p, size_t n)
{
	if (buf_put_packet(&c->out, seq, p, n) < 0)
		c->closing = true;
}

static void client_err(struct client *c, uint8_t seq, uint16_t code, const char *state,
                       const char *msg)
{
	uint8_t pkt[700];
	int n = err_build(pkt, sizeof(pkt), code, state, msg);

	if (n > 0)
		client_send(c, seq, pkt, (size_t)n);
}

static void client_ok(struct client *c, uint8_t seq)
{
	uint8_t pkt[32];
	uint16_t st = (c->autocommit_off ? 0 : SST_AUTOCOMMIT) | (c->in_trans ? SST_IN_TRANS : 0);
	int n = ok_build(pkt, sizeof(pkt), 0, 0, 0, st, 0);

	if (n > 0)
		client_send(c, seq, pkt, (size_t)n);
}

/* ---- the command in flight ---- */

/* The command is over (answered or refused): take the next one. */
void client_cmd_done(struct client *c)
{
	c->cur = NULL;
	ops_sess_running(c, NULL);
	c->st = C_IDLE;
	c->has_exclude = false;
	c->retries = 0;
	c->cur_hist = false;
	c->active_ms = now_ms();
	buf_consume(&c->cmd, buf_used(&c->cmd));
	buf_trim(&c->cmd);
	client_buf_sync(c);
}

void client_cmd_fail(struct client *c, uint16_t code, const char *msg)
{
	client_cmd_fail_state(c, code, "HY000", msg);
}

void client_cmd_fail_state(struct client *c, uint16_t code, const char *sqlstate, const char *msg)
{
	/* the statement never ran: a PREPARE's statement goes (the client got no
	 * id), an EXECUTE's long data too, as after an answer */
	if (c->cur_ps && c->cur_kind == RESP_PREPARE)
		stmt_free(c, c->cur_ps);
	else if (c->cur_ps)
		stmt_drop_longdata(c, c->cur_ps);
	c->cur_ps = NULL;
	db_change_end(c, false); /* the statement never ran */
	if (c->cur_hist && c->nhist > 0) {
		hist_pop(c);
		if (c->wconn && c->wconn->hist_applied > c->nhist)
			c->wconn->hist_applied = c->nhist;
		if (c->rconn && c->rconn->hist_applied > c->nhist)
			c->rconn->hist_applied = c->nhist;
	}
	client_err(c, 1, code, sqlstate, msg);
	client_cmd_done(c);
}

/* ---- client commands ---- */

static void unknown_stmt(struct client *c, uint32_t id, const char *cmd)
{
	char msg[128];

	snprintf(msg, sizeof(msg), "Unknown prepared statement handler (%u) given to %s", id, cmd);
	client_err(c, 1, 1243, "HY000", msg);
}

static int cmd_prepare(struct client *c, const uint8_t *p, size_t n)
{
	uint32_t max = c->w->e->ps_per_session;
	struct cls_result res;
	struct pstmt *ps;
	char msg[128];

	/* Each statement keeps its SQL here: without a cap a client could fill
	 * the proxy's memory. Answered as the server would at its own limit. */
	if (c->nstmts >= max) {
		snprintf(msg, sizeof(msg),
		         "Can't create more than max_prepared_stmt_count statements "
		         "(current value: %u)",
		         max);
		client_err(c, 1, 1461, "42000", msg);
		return -1;
	}
	/* its text is kept for the session: within max_session_bytes */
	if (!hist_bytes_fit(c, n - 1)) {
		snprintf(msg, sizeof(msg),
		         "Out of memory: the session's prepared statements and history would pass "
		         "max_session_bytes = %llu",
		         (unsigned long long)atomic_load(&c->w->e->max_session_bytes));
		client_err(c, 1, 1041, "HY000", msg);
		return -1;
	}
	ps = stmt_new(c, p + 1, n - 1);
	if (!ps) {
		c->closing = true;
		return -1;
	}
	route_classify(c, p + 1, n - 1, &res);
	ps->tok = res.token;
	ps->flags = res.flags;
	ps->reason = res.reason;
	c->cur_ps = ps;
	c->cur_kind = RESP_PREPARE;
	/* Prepared where it will most likely run; other backends prepare lazily. */
	c->route = res.token == CLS_READ && !c->in_trans && !c->autocommit_off && !c->pin_writer
	               ? R_READER
	               : R_WRITER;
	if (c->ro_trans)
		c->route = R_TRX;
	/* FOUND_ROWS(), ROW_COUNT(), SHOW WARNINGS...: prepared on the
	 * connection of the statement before, so that the session keeps it for
	 * the EXECUTE (a prepare leaves that state as it was) */
	else if (ps_reads_prev_state(ps) && (c->last || pool_reclaim_last(c)))
		c->route = R_LAST;
	return 0;
}

static int cmd_execute(struct client *c, const uint8_t *p, size_t n)
{
	struct pstmt *ps = n >= 10 ? stmt_find(c, get_le32(p + 1)) : NULL;
	size_t off;

	if (!ps) {
		unknown_stmt(c, n >= 5 ? get_le32(p + 1) : 0, "mysqld_stmt_execute");
		return -1;
	}
	if (ps->longdata_over) { /* the server's answer in that case */
		ps->longdata_over = false;
		client_err(c, 1, 1105, "HY000",
		           "Parameter of prepared statement which is set through "
		           "mysql_send_long_data() is longer than 'max_packet_size' bytes");
		return -1;
	}
	off = 10 + ((size_t)ps->nparams + 7) / 8;
	if (ps->nparams > 0 && n > off && p[off] == 1) {
		if (n < off + 1 + 2u * ps->nparams) {
			client_err(c, 1, 1210, "HY000",
			           "Incorrect arguments to mysqld_stmt_execute");
			return -1;
		}
		if (!ps->types && !(ps->types = malloc(2u * ps->nparams))) {
			c->closing = true;
			return -1;
		}
		memcpy(ps->types, p + off + 1, 2u * ps->nparams);
	}
	c->cur_ps = ps;
	route_decide(c, ps->tok, ps->flags, ps->reason, true);
	c->cur_reason = ps->reason; /* a prepared CALL keeps its connection as a CALL does */
	return 0;
}

/*
 * COM_STMT_FETCH: rows of the cursor the statement's last EXECUTE opened go
 * to the connection that holds it (kept by the session since), with that
 * connection's statement id; never elsewhere, so a lost connection or a
 * statement its cache closed is "no open cursor", as the server would say.
 */
static void cmd_fetch(struct client *c, const uint8_t *p, size_t n)
{
	struct pstmt *ps = n >= 9 ? stmt_find(c, get_le32(p + 1)) : NULL;
	struct bstmt *e;
	char msg[96];

	if (!ps) {
		unknown_stmt(c, n >= 5 ? get_le32(p + 1) : 0, "mysqld_stmt_fetch");
		return;
	}
	/* stmt_forget_conn clears cursor_b when its connection goes */
	e = ps->cursor_b ? stmt_cache_find(ps->cursor_b, ps->key) : NULL;
	if (!e) {
		snprintf(msg, sizeof(msg), "The statement (%u) has no open cursor", ps->id);
		client_err(c, 1, 1421, "HY000", msg);
		return;
	}
	put_le32(c->cmd.d + c->cmd.off + 1, e->xid);
	c->cur_kind = RESP_ROWS;
	c->route = R_LAST;
	if (route_send_cmd(c, ps->cursor_b) < 0)
		bconn_fail(ps->cursor_b, "write failed");
}

static void cmd_long_data(struct client *c, const uint8_t *p, size_t n)
{
	struct pstmt *ps = n >= 7 ? stmt_find(c, get_le32(p + 1)) : NULL;
	uint8_t len[4];

	if (!ps || ps->longdata_over)
		return; /* the server answers nothing either; EXECUTE will fail */
	/* Kept here until the EXECUTE: bounded for the whole session (all its
	 * statements) like the server's own max_long_data_size, or a client
	 * could grow it without end. */
	if (c->ld_bytes + 4 + n > c->w->e->max_packet) {
		ps->longdata_over = true;
		stmt_drop_longdata(c, ps);
		return;
	}
	size_t before = buf_used(&ps->longdata);
	put_le32(len, (uint32_t)n);
	if (buf_append(&ps->longdata, len, 4) < 0 || buf_append(&ps->longdata, p, n) < 0)
		c->closing = true;
	c->ld_bytes += buf_used(&ps->longdata) - before;
}

/* The client's statement goes; the server-side ones of its text go with the
 * worker's last client statement of it (skey_put). No answer. */
static void cmd_stmt_close(struct client *c, const uint8_t *p, size_t n)
{
	struct pstmt *ps = n >= 5 ? stmt_find(c, get_le32(p + 1)) : NULL;

	if (ps)
		stmt_free(c, ps);
}

static void cmd_stmt_reset(struct client *c, const uint8_t *p, size_t n)
{
	struct pstmt *ps = n >= 5 ? stmt_find(c, get_le32(p + 1)) : NULL;

	if (!ps) {
		unknown_stmt(c, n >= 5 ? get_le32(p + 1) : 0, "mysqld_stmt_reset");
		return;
	}
	/* Long data lives here until EXECUTE: nothing on a backend needs
	 * resetting but a cursor, which is closed for the client (a FETCH gets
	 * "no open cursor"); the server's closes with the next EXECUTE or the
	 * connection's reset. */
	stmt_drop_longdata(c, ps);
	ps->longdata_over = false;
	ps->cursor_b = NULL;
	client_ok(c, 1);
}

/*
 * COM_RESET_CONNECTION, and COM_CHANGE_USER before it authenticates: the
 * session's backend connections close (fresh ones are the most faithful
 * reset: the server rolls back the transaction and drops the temporary
 * tables, variables and statements), its history, transaction state and
 * prepared statements go, as a server's reset.
 */
static void session_reset(struct client *c)
{
	if (c->wconn)
		bconn_free(c->wconn);
	if (c->rconn)
		bconn_free(c->rconn);
	hist_clear(c);
	c->in_trans = c->ro_trans = c->autocommit_off = c->pin_writer = false;
	c->sw_only_begin = c->sw_replay_begin = false;
	rp_reset(c);
	c->rp_pending = false;
	c->pin_why = NULL;
	/* as a server's reset: the prepared statements go, with their long
	 * data and cursors, and the last GTID it tracked */
	while (c->stmts)
		stmt_free(c, c->stmts);
	ryw_session_reset(c);
	c->lid = 0;
	c->lid_gen = 0;
}

static void cmd_change_user(struct client *c, const uint8_t *p, size_t n);

static void client_command(struct client *c, const uint8_t *p, size_t n)
{
	buf_consume(&c->cmd, buf_used(&c->cmd));
	c->cur_hist = false;
	c->has_hist_dup = false;
	c->db_pending = false;
	c->cur_write = false;
	c->cur_classified = false;
	c->cur_flags = 0;
	c->cur_reason = CLS_R_NONE;
	c->cur_ps = NULL;
	c->route = R_LAST;
	c->cur_kind = RESP_GENERIC;
	c->kill_soft = false;
	if (n == 0) {
		client_err(c, 1, 1047, "08S01", "Unknown command");
		return;
	}
	switch (client_buf_reserve(c, &c->cmd, n)) {
	case 1:
		buffers_full(c);
		return;
	case -1:
		c->closing = true;
		return;
	}
	memcpy(c->cmd.d + c->cmd.len, p, n);
	c->cmd.len += n;
	/* CONNECTION_ID() is the proxy's id, and KILL takes one (ops.c): the
	 * statement goes on as c->cmd has it now */
	if (n > 1 && (p[0] == COM_QUERY || p[0] == COM_STMT_PREPARE)) {
		if (ops_statement(c) != 0)
			return;
		p = c->cmd.d + c->cmd.off;
		n = buf_used(&c->cmd);
	}
	switch (p[0]) {
	case COM_QUIT:
		c->closing = true;
		return;
	case COM_PING:
		client_ok(c, 1);
		return;
	case COM_QUERY:
		route_decide_query(c, p + 1, n - 1);
		break;
	case COM_INIT_DB:
		if (n - 1 < sizeof(c->db)) {
			db_change_begin(c);
			memcpy(c->db, p + 1, n - 1);
			c->db[n - 1] = 0;
		}
		if (hist_add(c, p, n) < 0) /* 1: it runs on the writer (c->route) */
			c->closing = true;
		break;
	case COM_FIELD_LIST:
		c->cur_kind = RESP_FIELD_LIST;
		break;
	case COM_STATISTICS:
		c->cur_kind = RESP_ONE_PACKET;
		break;
	case COM_SET_OPTION:
		if (hist_add(c, p, n) < 0) /* 1: it runs on the writer (c->route) */
			c->closing = true;
		break;
	case COM_RESET_CONNECTION:
		session_reset(c);
		snprintf(c->db, sizeof(c->db), "%s", c->db0);
		client_ok(c, 1);
		return;
	case COM_CHANGE_USER:
		cmd_change_user(c, p, n);
		return;
	case COM_STMT_PREPARE:
		if (cmd_prepare(c, p, n) < 0)
			return;
		break;
	case COM_STMT_EXECUTE:
		if (cmd_execute(c, p, n) < 0)
			return;
		break;
	case COM_STMT_SEND_LONG_DATA:
		cmd_long_data(c, p, n);
		return; /* no answer is expected */
	case COM_STMT_CLOSE:
		cmd_stmt_close(c, p, n);
		return; /* no answer is expected */
	case COM_STMT_RESET:
		cmd_stmt_reset(c, p, n);
		return;
	case COM_STMT_FETCH:
		cmd_fetch(c, p, n);
		return;
	default:
		client_err(c, 1, 1047, "08S01", "Unknown command");
		return;
	}
	if (c->closing)
		return;
	mux_next(c);
	route_cmd(c);
}

/* ---- handshake and auth ---- */

static void send_handshake(struct client *c)
{
	struct handshake h = {0};
	uint8_t pkt[256];
	int n;

	snprintf(h.server_version, sizeof(h.server_version), "%s", SERVER_VERSION);
	/* one counter for the workers: unique over the engine (KILL, ops.c);
	 * 0 is no id, skipped when the counter wraps */
	do
		c->conn_id = atomic_fetch_add(&c->w->e->next_conn_id, 1);
	while (c->conn_id == 0);
	h.conn_id = c->conn_id;
	memcpy(h.scramble, c->scramble, SCRAMBLE_LEN);
	h.scramble_len = SCRAMBLE_LEN;
	h.caps = PROXY_CAPS | (engine_tls_on(c->w->e) ? CAP_SSL : 0) |
	         (atomic_load(&c->w->e->local_infile) ? CAP_LOCAL_FILES : 0);
	h.ext_caps = PROXY_EXT_CAPS;
	h.charset = CHARSET_UTF8MB4;
	h.status = SST_AUTOCOMMIT;
	snprintf(h.plugin, sizeof(h.plugin), "%s",
	         atomic_load(&c->w->e->sha2_default) ? SHA2_PLUGIN : NATIVE_PLUGIN);
	n = hs_build(pkt, sizeof(pkt), &h);
	if (n > 0)
		client_send(c, 0, pkt, (size_t)n);
}

/* The identity a COM_CHANGE_USER changes, kept to be taken back. */
struct chu_prev {
	char user[128];
	uint8_t stage1[SHA1_LEN];
	bool empty_pw, sha2;
	char db0[256], db[256];
	uint8_t charset;
};

void client_chu_free(struct client *c)
{
	if (!c->chu_prev)
		return;
	explicit_bzero(c->chu_prev, sizeof(*c->chu_prev));
	free(c->chu_prev);
	c->chu_prev = NULL;
}

/* A refused COM_CHANGE_USER: the session goes on as the user it was (reset,
 * as MariaDB's server leaves it). */
static void chu_restore(struct client *c)
{
	struct chu_prev *p = c->chu_prev;

	snprintf(c->user, sizeof(c->user), "%s", p->user);
	memcpy(c->stage1, p->stage1, SHA1_LEN);
	c->empty_pw = p->empty_pw;
	c->sha2 = p->sha2;
	snprintf(c->db0, sizeof(c->db0), "%s", p->db0);
	snprintf(c->db, sizeof(c->db), "%s", p->db);
	c->charset = p->charset;
	client_chu_free(c);
	c->st = C_IDLE;
	c->deadline_ms = 0;
	c->active_ms = now_ms();
}

static void deny(struct client *c, uint8_t seq, bool with_password)
{
	char msg[400];

	snprintf(msg, sizeof(msg), "Access denied for user '%s'@'%s' (using password: %s)", c->user,
	         c->host, with_password ? "YES" : "NO");
	log_info("proxy: access denied for user '%s'@'%s'%s", c->user, c->host,
	         c->chu_prev ? " (COM_CHANGE_USER: the session stays the previous user's)" : "");
	client_err(c, seq, 1045, "28000", msg);
	if (!c->chu_prev)
		proxy_metrics_client(CLIENT_REFUSED_DENIED);
	if (c->chu_prev)
		chu_restore(c);
	else
		c->closing = true;
}

/* ---- connections not logged in yet ---- */

static void preauth_unlink(struct client *c)
{
	struct worker *w = c->w;

	if (!c->preauth)
		return;
	DLIST_UNLINK(w->pre_head, w->pre_tail, c, pre_prev, pre_next);
	c->preauth = false;
	w->npre--;
}

static void preauth_link(struct client *c)
{
	struct worker *w = c->w;

	c->preauth = true;
	DLIST_PUSH_BACK(w->pre_head, w->pre_tail, c, pre_prev, pre_next);
	w->npre++;
}

/*
 * The oldest connection of the worker that has not logged in goes, to make
 * room for a new one: silent sockets (or slow handshakes) then cannot hold
 * every place and lock real clients out. It is told, as a server at
 * max_connections would tell it. False when there is none.
 */
static bool preauth_evict(struct worker *w)
{
	struct client *c = w->pre_head;

	if (!c)
		return false;
	log_debug("proxy: the oldest connection not logged in (from %s) makes room", c->host);
	proxy_metrics_client(CLIENT_REFUSED_EVICTED);
	client_err(c, reply_seq(c), 1040, "08004",
	           "Too many connections (mysteer: the oldest connection not logged in made "
	           "room for a new one)");
	if (client_flush(c) < 0)
		log_debug("proxy: telling %s: %s", c->host, strerror(errno));
	client_close(c);
	return true;
}

/* Logged in (how: the plugin and its path, for the log): c->stage1 and
 * c->empty_pw say how its backends are logged in to. */
static void login_ok(struct client *c, uint8_t seq, const char *how)
{
	log_debug("proxy: '%s'@'%s' logged in: %s%s%s", c->user, c->host, how,
	          c->tls ? " (TLS)" : "", c->chu_prev ? " (COM_CHANGE_USER)" : "");
	if (c->chu_prev) {
		client_chu_free(c);
		ops_sess_set_user(c);
	}
	c->st = C_IDLE;
	c->deadline_ms = 0;
	c->active_ms = now_ms();
	preauth_unlink(c);
	ops_sess_register(c);
	/* warm connections log in like the last client of this user, so that
	 * the next one of its kind can take them */
	for (size_t i = 0; i < c->w->nghosts; i++)
		if (!strcmp(c->w->ghosts[i].user, c->user)) {
			c->w->ghosts[i].caps = c->caps;
			c->w->ghosts[i].ext_caps = c->ext_caps;
			c->w->ghosts[i].charset = c->charset;
		}
	client_ok(c, seq);
}

/* mysql_native_password: reply (n bytes) to the scramble. */
static void check_password(struct client *c, const uint8_t *reply, size_t n, uint8_t seq)
{
	if (!users_check(engine_worker_users(c->w), c->user, c->scramble, reply, n, c->stage1)) {
		deny(c, seq, n > 0);
		return;
	}
	c->empty_pw = n == 0; /* users_check: only an empty password takes that */
	login_ok(c, seq, c->sha2 ? SHA2_PLUGIN ", empty password" : NATIVE_PLUGIN);
}

/* An AuthMoreData packet of one status byte. */
static void more_data(struct client *c, uint8_t seq, uint8_t status)
{
	uint8_t pkt[2];
	int n = more_data_build(pkt, sizeof(pkt), &status, 1);

	if (n > 0)
		client_send(c, seq, pkt, (size_t)n);
}

/*
 * caching_sha2_password, the client's reply to the scramble: an empty one
 * for an empty password (as mysql_native_password's), fast authentication
 * when the user's digest is cached and matches, else the password itself
 * is asked for (full authentication, C_SHA2).
 */
static void sha2_first(struct client *c, const uint8_t *reply, size_t n, uint8_t seq)
{
	if (n == 0 || (n == 1 && reply[0] == 0)) {
		check_password(c, NULL, 0, seq);
		return;
	}
	if (users_sha2_fast(engine_worker_users(c->w), c->user, c->scramble, reply, n, c->stage1)) {
		more_data(c, seq, SHA2_FAST_OK);
		c->empty_pw = false;
		login_ok(c, (uint8_t)(seq + 1), SHA2_PLUGIN ", fast authentication");
		return;
	}
	more_data(c, seq, SHA2_FULL_AUTH);
	c->st = C_SHA2;
	c->auth_seq = (uint8_t)(seq + 2);
}

/*
 * caching_sha2_password's full authentication: over TLS the password comes
 * in clear (NUL-terminated); without, the client asks for the RSA public key
 * (once) or sends (password NUL) XOR scramble, encrypted with it (RSA OAEP).
 * A password in clear without TLS is not taken, as a server does not.
 */
static void sha2_full(struct client *c, const uint8_t *p, size_t n, uint8_t seq)
{
	uint8_t pw[1024];
	size_t len;
	bool ok;

	if (c->tls) {
		len = n < sizeof(pw) ? n : sizeof(pw);
		memcpy(pw, p, len);
	} else if (n == 1 && p[0] == SHA2_PUBKEY_REQUEST && !c->rsa_sent) {
		uint8_t *pkt;
		int l = engine_rsa_pem_packet(c->w->e, &pkt);

		if (l < 0) {
			free(pkt);
			log_info(
			    "proxy: '%s'@'%s' asked for the RSA public key: caching_sha2_password "
			    "without TLS needs [proxy] rsa_private_key and rsa_public_key",
			    c->user, c->host);
			deny(c, (uint8_t)(seq + 1), true);
			return;
		}
		client_send(c, (uint8_t)(seq + 1), pkt, (size_t)l);
		free(pkt);
		c->rsa_sent = true;
		c->auth_seq = (uint8_t)(seq + 3);
		return;
	} else {
		struct evp_pkey_st *k = engine_rsa_key(c->w->e);
		int l = k ? sha2_rsa_decrypt(k, p, n, pw, sizeof(pw)) : -1;

		EVP_PKEY_free(k);
		if (l < 0) {
			log_info("proxy: '%s'@'%s': caching_sha2_password without TLS: %s", c->user,
			         c->host,
			         k ? "not a password encrypted with the proxy's RSA public key"
			           : "no RSA keys ([proxy] rsa_private_key, rsa_public_key)");
			deny(c, (uint8_t)(seq + 1), true);
			return;
		}
		len = (size_t)l;
		sha2_xor(pw, len, c->scramble);
	}
	len = strnlen((const char *)pw, len);
	ok = users_sha2_full(engine_worker_users(c->w), c->user, (const char *)pw, len, c->stage1);
	explicit_bzero(pw, sizeof(pw));
	if (!ok) {
		deny(c, (uint8_t)(seq + 1), true);
		return;
	}
	c->empty_pw = len == 0;
	login_ok(c, (uint8_t)(seq + 1),
	         c->tls ? SHA2_PLUGIN ", full authentication"
	                : SHA2_PLUGIN ", full authentication with RSA");
}

/* The client's reply to the scramble with the plugin of c->sha2. */
static void auth_reply(struct client *c, const uint8_t *reply, size_t n, uint8_t seq)
{
	if (c->sha2)
		sha2_first(c, reply, n, seq);
	else
		check_password(c, reply, n, seq);
}

/*
 * The client asked for TLS (SSLRequest): its handshake runs from the
 * client's events (tls_step) before anything else is read. Whatever came
 * after the SSLRequest is TLS, so nothing past it was read (tls_preread).
 */
static bool tls_begin(struct client *c)
{
	c->tls = engine_tls_new(c->w->e, c->fd);
	if (!c->tls)
		return false;
	c->tls_accepting = true;
	c->tls_want = EPOLLIN;
	return true;
}

/* AuthSwitchRequest to plugin, with the session's scramble. */
static void auth_switch(struct client *c, const char *plugin, uint8_t seq)
{
	uint8_t pkt[128];
	int len = auth_switch_build(pkt, sizeof(pkt), plugin, c->scramble, SCRAMBLE_LEN);

	if (len > 0)
		client_send(c, seq, pkt, (size_t)len);
	c->st = C_SWITCH;
	c->auth_seq = (uint8_t)(seq + 2);
}

/* Whether the user called c->user logs in with caching_sha2_password (the
 * client can be switched to it, caps): default_auth_plugin says so, but a
 * user with only a password_hash logs in with mysql_native_password. */
static bool use_sha2(struct client *c, uint32_t caps)
{
	return (caps & CAP_PLUGIN_AUTH) && atomic_load(&c->w->e->sha2_default) &&
	       users_sha2_able(engine_worker_users(c->w), c->user);
}

/*
 * COM_CHANGE_USER, as MariaDB's server does it: the session is reset first
 * (session_reset: its backend connections close, so the next statement
 * takes a connection of the new user's pools), then the new user is
 * authenticated as at login, with the session's scramble (an
 * AuthSwitchRequest when the client used another plugin than the user's).
 * Refused: ERR 1045, and the session goes on, reset, as the user it was
 * (chu_restore), as MariaDB 10.11 leaves it (proxy_chuser.sh compares).
 */
static void cmd_change_user(struct client *c, const uint8_t *p, size_t n)
{
	struct change_user cu;
	struct chu_prev *prev;
	const char *want;

	if (chu_parse(p, n, c->caps, &cu) < 0) {
		log_info("proxy: a malformed COM_CHANGE_USER of %s from %s", c->user, c->host);
		client_err(c, 1, 1835, "HY000", "Malformed communication packet");
		return;
	}
	prev = calloc(1, sizeof(*prev));
	if (!prev) {
		client_err(c, 1, 1041, "HY000", "Out of memory");
		return;
	}
	snprintf(prev->user, sizeof(prev->user), "%s", c->user);
	memcpy(prev->stage1, c->stage1, SHA1_LEN);
	prev->empty_pw = c->empty_pw;
	prev->sha2 = c->sha2;
	snprintf(prev->db0, sizeof(prev->db0), "%s", c->db0);
	snprintf(prev->db, sizeof(prev->db), "%s", c->db);
	prev->charset = c->charset;
	session_reset(c);
	c->chu_prev = prev;
	c->has_parked_last = false; /* a connection of the previous user's pool */
	snprintf(c->user, sizeof(c->user), "%s", cu.user);
	snprintf(c->db0, sizeof(c->db0), "%s", cu.db);
	snprintf(c->db, sizeof(c->db), "%s", cu.db);
	if (cu.has_charset && cu.charset < 256)
		c->charset = (uint8_t)cu.charset;
	c->rsa_sent = false;
	c->deadline_ms = now_ms() + (uint64_t)c->w->e->handshake_timeout_ms;
	c->sha2 = use_sha2(c, c->caps);
	want = c->sha2 ? SHA2_PLUGIN : NATIVE_PLUGIN;
	/* The client's plugin first reads a scramble and sent nothing
	 * (libmariadb's and libmysqlclient's caching_sha2_password do so in
	 * mysql_change_user): it gets one in an AuthSwitchRequest, as a MySQL
	 * server's caching_sha2_password sends it. */
	if ((c->caps & CAP_PLUGIN_AUTH) &&
	    (strcmp(cu.plugin[0] ? cu.plugin : NATIVE_PLUGIN, want) ||
	     (c->sha2 && cu.auth_len == 0))) {
		log_debug("proxy: COM_CHANGE_USER to '%s' from %s with %s: switched to %s", c->user,
		          c->host, cu.plugin, want);
		auth_switch(c, want, 1);
		return;
	}
	c->st = C_SWITCH; /* until auth_reply decides */
	auth_reply(c, cu.auth, cu.auth_len, 1);
}

static void client_auth(struct client *c, const uint8_t *p, size_t n, uint8_t seq)
{
	struct hs_response r;
	const char *want;

	if (c->st == C_SHA2) {
		sha2_full(c, p, n, seq);
		return;
	}
	if (c->st == C_SWITCH) {
		auth_reply(c, p, n, (uint8_t)(seq + 1));
		return;
	}
	if (hsr_parse(p, n, &r) < 0) {
		client_err(c, (uint8_t)(seq + 1), 1043, "08S01", "Bad handshake");
		c->closing = true;
		return;
	}
	if (r.ssl_request) {
		if (!c->tls && tls_begin(c))
			return;
		client_err(c, (uint8_t)(seq + 1), 1043, "08S01",
		           c->tls ? "Bad handshake"
		                  : "mysteer: TLS is not configured on this port");
		c->closing = true;
		return;
	}
	if (!c->tls && atomic_load(&c->w->e->require_tls)) {
		log_info("proxy: a plain-text login from %s refused: require_secure_transport = on",
		         c->host);
		proxy_metrics_client(CLIENT_REFUSED_INSECURE);
		client_err(c, (uint8_t)(seq + 1), 3159, "HY000",
		           "Connections using insecure transport are prohibited while "
		           "--require_secure_transport=ON.");
		c->closing = true;
		return;
	}
	snprintf(c->user, sizeof(c->user), "%s", r.user);
	c->caps =
	    r.caps & (PROXY_CAPS | (atomic_load(&c->w->e->local_infile) ? CAP_LOCAL_FILES : 0));
	c->ext_caps = r.ext_caps & PROXY_EXT_CAPS;
	c->charset = r.charset;
	if (r.has_db) {
		snprintf(c->db0, sizeof(c->db0), "%s", r.db);
		snprintf(c->db, sizeof(c->db), "%s", r.db);
	}
	/*
	 * The plugin of default_auth_plugin, as a server's accounts have one:
	 * a client that answered with another one is switched to it; but a
	 * user with only a password_hash logs in with mysql_native_password,
	 * and so does a client without plugin auth (it cannot be switched).
	 */
	c->sha2 = use_sha2(c, r.caps);
	want = c->sha2 ? SHA2_PLUGIN : NATIVE_PLUGIN;
	if ((r.caps & CAP_PLUGIN_AUTH) && strcmp(r.plugin[0] ? r.plugin : NATIVE_PLUGIN, want)) {
		log_debug("proxy: '%s'@'%s' answered with %s: switched to %s", c->user, c->host,
		          r.plugin, want);
		auth_switch(c, want, (uint8_t)(seq + 1));
		return;
	}
	auth_reply(c, r.auth, r.auth_len, (uint8_t)(seq + 1));
}

/*
 * LOAD DATA LOCAL INFILE: the file's packets the client sends go on to the
 * backend connection of the statement as they come, a piece of a packet
 * as soon as it is read (nothing is held whole: the memory a file takes is
 * the client's input buffer and the connection's OUT_HIGH_WATER), until
 * the empty packet that ends the file. When the statement is over already
 * (the server answered early, or its connection failed) the rest is read
 * and dropped.
 */
static void infile_pump(struct client *c)
{
	struct bconn *b = c->st == C_BUSY ? c->cur : NULL;
	bool wrote = false;

	while (c->infile && buf_used(&c->in) > 0) {
		const uint8_t *p = c->in.d + c->in.off;
		size_t avail = buf_used(&c->in), take;

		if (b && buf_used(&b->out) >= OUT_HIGH_WATER)
			break;
		if (c->infile_left == 0) {
			uint32_t len;

			if (avail < PKT_HDR)
				break;
			len = p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16;
			take = PKT_HDR;
			if (len == 0 && !c->infile_cont)
				c->infile = false;
			c->infile_cont = len == PKT_MAX_FRAG;
			c->infile_left = len;
		} else {
			take = avail < c->infile_left ? avail : c->infile_left;
			c->infile_left -= (uint32_t)take;
		}
		if (b && buf_append(&b->out, p, take) < 0) {
			c->closing = true;
			return;
		}
		wrote |= b != NULL;
		buf_consume(&c->in, take);
	}
	if (wrote && bconn_flush(b) < 0)
		bconn_fail(b, "write failed");
}

/* Handles the whole packets in c->in while the client may send commands.
 * True when it stopped for the answers queued (OUT_CMD_MAX). */
static bool take_packets(struct client *c)
{
	struct proxy_engine *e = c->w->e;

	while (!c->closing && !c->dead && client_takes(c)) {
		size_t total, payload;
		uint8_t seq, *p;
		/* before login, only a handshake response or an auth switch
		 * reply can come: an anonymous client does not get
		 * max_packet_size bytes buffered */
		size_t max = c->st == C_IDLE ? e->max_packet : PREAUTH_MAX_PACKET;
		int r;

		/* nothing buffered: c->in.d may be NULL (buf_trim freed it) */
		if (!buf_used(&c->in)) {
			c->pkt_since_ms = 0;
			return false;
		}
		p = c->in.d + c->in.off;
		r = pkt_whole(p, buf_used(&c->in), max, &total, &payload, &seq);
		if (r == 0) {
			/* the packet it is sending is not whole yet: since when */
			if (!c->pkt_since_ms)
				c->pkt_since_ms = now_ms();
			return false;
		}
		c->pkt_since_ms = 0;
		if (r < 0) {
			log_info("proxy: a packet of %s from %s is past max_packet_size",
			         c->user[0] ? c->user : "(not logged in)", c->host);
			client_shed(c, 1153, "08S01",
			            "Got a packet bigger than 'max_allowed_packet' bytes");
			return false;
		}
		pkt_join(p, p, payload);
		if (c->st == C_IDLE)
			client_command(c, p, payload);
		else
			client_auth(c, p, payload, seq);
		if (!c->dead && !c->shedding)
			buf_consume(&c->in, total);
	}
	return !c->closing && !c->dead && c->st != C_BUSY && !c->shedding;
}

/* Handles the whole packets the client sent, while it may: when the
 * answers it did not read yet fill OUT_CMD_MAX, the rest waits until the
 * socket takes them (at once, or at its EPOLLOUT). */
void client_process(struct client *c)
{
	bool paused;

	if (c->in_process || c->dead)
		return;
	c->in_process = true;
	if (c->infile) {
		infile_pump(c);
		if (c->dead) {
			c->in_process = false;
			return;
		}
	}
	do {
		paused = take_packets(c);
		if (c->dead || c->shedding)
			break;
		if (client_flush(c) < 0)
			c->closing = true;
	} while (paused && !c->closing && client_takes(c));
	c->in_process = false;
	if (c->dead || c->shedding)
		return;
	if (!c->infile) /* a file's packets come on: the buffer serves the next read */
		buf_trim(&c->in);
	/* a command answered here (COM_PING, an ERR) is over: its copy goes */
	if (c->st != C_BUSY) {
		buf_consume(&c->cmd, buf_used(&c->cmd));
		buf_trim(&c->cmd);
	}
	client_buf_sync(c);
	if (client_flush(c) < 0 || c->closing)
		client_close(c);
}

/* The ERR goes out, then the end of the stream (a FIN, not a reset). */
static void shed_flush(struct client *c)
{
	if (client_flush(c) < 0) {
		c->closing = true;
		return;
	}
	if (buf_used(&c->out) == 0 && !c->shut_wr) {
		c->shut_wr = true;
		if (shutdown(c->fd, SHUT_WR) < 0)
			c->closing = true;
	}
}

/*
 * Ends the session at a bound it hit: the ERR a server would send, then no
 * more of what it sends is taken. Its input is read and dropped for
 * SHED_MS at most (so that a client still sending reads the ERR, not a
 * reset), then the connection closes; at once if it is in a command.
 */
void client_shed(struct client *c, uint16_t code, const char *state, const char *msg)
{
	if (c->dead || c->shedding)
		return;
	client_err(c, reply_seq(c), code, state, msg);
	if (c->st == C_BUSY) {
		c->closing = true;
		return;
	}
	c->shedding = true;
	c->deadline_ms = now_ms() + SHED_MS;
	buf_free(&c->in);
	client_buf_sync(c);
	shed_flush(c);
}

/* A shed client: what it sends is dropped until it closes. */
static void shed_event(struct client *c, uint32_t events)
{
	uint8_t junk[16384];

	if (events & EPOLLOUT)
		shed_flush(c);
	if (c->closing) {
		client_close(c);
		return;
	}
	for (;;) {
		ssize_t n = recv(c->fd, junk, sizeof(junk), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			client_close(c);
			return;
		}
	}
}

/* The sweep's checks of one client: its handshake, a packet that does not
 * come whole, a logged-in session that sends nothing, the end of a shed. */
void client_timeouts(struct client *c, uint64_t now)
{
	struct proxy_engine *e = c->w->e;
	int packet_ms = atomic_load(&e->client_packet_ms), idle_s = atomic_load(&e->client_idle_s);
	char msg[200];

	if (c->shedding || c->st == C_HANDSHAKE || c->st == C_SWITCH || c->st == C_SHA2) {
		if (now > c->deadline_ms) {
			if (!c->shedding)
				log_debug("proxy: handshake timeout from %s", c->host);
			client_close(c);
		}
		return;
	}
	if (c->st != C_IDLE)
		return;
	/* not while its answers fill the queue: then the proxy does not read it */
	if (c->pkt_since_ms && buf_used(&c->out) < OUT_CMD_MAX &&
	    now - c->pkt_since_ms > (uint64_t)packet_ms) {
		log_debug("proxy: a packet of %s from %s did not come whole in %d ms", c->user,
		          c->host, packet_ms);
		snprintf(msg, sizeof(msg),
		         "Got timeout reading communication packets (mysteer: a packet did not "
		         "come whole within client_packet_timeout_ms = %d)",
		         packet_ms);
		client_shed(c, 1159, "08S01", msg);
	} else if (!c->pkt_since_ms && now - c->active_ms > (uint64_t)idle_s * 1000) {
		log_debug("proxy: a session of %s from %s idle for %d s closes", c->user, c->host,
		          idle_s);
		snprintf(msg, sizeof(msg),
		         "Got timeout reading communication packets (mysteer: idle longer than "
		         "client_idle_timeout_s = %d)",
		         idle_s);
		client_shed(c, 1159, "08S01", msg);
	}
	if (c->closing)
		client_close(c);
}

/* The TLS handshake goes on as far as the socket lets it; true when it is
 * done (the handshake response is read next), false when it waits or the
 * client was closed. */
static bool tls_step(struct client *c)
{
	int r = tls_accept(c->tls);

	if (r == TLS_WANT_READ || r == TLS_WANT_WRITE) {
		c->tls_want = r == TLS_WANT_READ ? EPOLLIN : EPOLLOUT;
		client_update(c);
		return false;
	}
	if (r < 0) {
		log_info("proxy: TLS handshake with %s failed", c->host);
		client_close(c);
		return false;
	}
	c->tls_accepting = false;
	c->tls_want = 0;
	log_debug("proxy: TLS with %s: %s %s", c->host, tls_version(c->tls), tls_cipher(c->tls));
	return true;
}

/*
 * How much to read now: before login on a port that offers TLS, one packet
 * at a time (its header, then its payload), since the bytes after an
 * SSLRequest are the TLS handshake, which must be left to OpenSSL.
 */
static size_t read_room(const struct client *c)
{
	size_t room = c->in.cap - c->in.len, have = buf_used(&c->in), need;

	if (c->tls || c->st != C_HANDSHAKE || !engine_tls_on(c->w->e))
		return room;
	if (have < PKT_HDR)
		need = PKT_HDR - have;
	else
		need = PKT_HDR +
		       (c->in.d[c->in.off] | (size_t)c->in.d[c->in.off + 1] << 8 |
		        (size_t)c->in.d[c->in.off + 2] << 16) -
		       have;
	return need < room ? need : room;
}

void client_event(struct client *c, uint32_t events)
{
	if (c->shedding) {
		shed_event(c, events);
		return;
	}
	if (c->tls_accepting) {
		if (events & (EPOLLERR | EPOLLHUP)) {
			client_close(c);
			return;
		}
		if (!tls_step(c))
			return;
		/* the handshake response may have come with its last flight */
		events = EPOLLIN;
	}
	/* a TLS read waited for the socket to take a write, or back */
	if (c->tls_want) {
		if ((c->tls_want & EPOLLOUT) && (events & EPOLLOUT))
			events |= EPOLLIN;
		if ((c->tls_want & EPOLLIN) && (events & EPOLLIN))
			events |= EPOLLOUT;
	}
	if (events & EPOLLOUT) {
		if (client_flush(c) < 0) {
			client_close(c);
			return;
		}
		/* A backend paused for this client's buffer may go on. */
		if (c->cur && !c->cur->dead && buf_used(&c->out) < OUT_HIGH_WATER) {
			bconn_pump(c->cur);
			if (c->dead)
				return;
		}
		/* Commands held back while the answers piled up may go on. */
		if (buf_used(&c->in) > 0 && client_takes(c)) {
			client_process(c);
			if (c->dead)
				return;
		}
	}
	if (!(events & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP)))
		return;
	if (!client_reads(c)) {
		/* reading paused: an error or hangup (always reported) would
		 * come back at once; the client is gone anyway */
		if (events & (EPOLLERR | EPOLLHUP))
			client_close(c);
		else
			client_update(c);
		return;
	}
	for (;;) {
		int r = client_buf_reserve(c, &c->in, 16384);
		if (r != 0) {
			if (r > 0)
				buffers_full(c);
			if (r < 0 || c->closing)
				client_close(c);
			return;
		}
		size_t room = read_room(c);
		if (room == 0)
			break;
		ssize_t n = client_recv(c, c->in.d + c->in.len, room);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			client_close(c);
			return;
		}
		c->in.len += (size_t)n;
		c->active_ms = now_ms();
		/* whole packets are handled before more is read: a client
		 * sending without pause is not read into memory unbounded */
		if (c->in.len < c->in.cap || !client_reads(c) || buf_used(&c->in) >= IN_HIGH_WATER)
			break;
	}
	client_process(c);
	if (!c->dead)
		client_update(c);
}

/* ---- accept and close ---- */

static void refuse(int fd, uint16_t code, const char *msg)
{
	uint8_t pkt[256];
	int n = err_build(pkt + PKT_HDR, sizeof(pkt) - PKT_HDR, code, "08004", msg);

	if (n > 0) {
		pkt_put_hdr(pkt, (uint32_t)n, 0);
		if (send(fd, pkt, (size_t)n + PKT_HDR, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			log_debug("proxy: refusing a client: %s", strerror(errno));
	}
	close(fd);
}

/* Out of file descriptors: the oldest connection not logged in makes room
 * (then true: accept again), else the listener pauses until the next sweep,
 * since it would report the same backlog at once again. */
static bool out_of_fds(struct worker *w)
{
	if (preauth_evict(w))
		return true;
	if (!w->accept_paused) {
		log_warn("proxy: accept: %s: new connections wait", strerror(EMFILE));
		w->accept_paused = true;
		for (int i = 0; i < w->nls; i++)
			if (epoll_ctl(w->ep, EPOLL_CTL_DEL, w->ls[i].fd, NULL) < 0)
				log_warn("proxy: pausing the listener: %s", strerror(errno));
	}
	return false;
}

void client_resume(struct client *c)
{
	if (c->dead || c->st != C_IDLE)
		return;
	if (client_flush(c) < 0 || c->closing)
		client_close(c);
	else
		client_process(c);
}

void client_accept_resume(struct worker *w)
{
	if (!w->accept_paused)
		return;
	w->accept_paused = false;
	for (int i = 0; i < w->nls; i++)
		if (ep_add(w, w->ls[i].fd, EPOLLIN, &w->ls[i]) < 0)
			log_warn("proxy: resuming the listener: %s", strerror(errno));
}

/* A connection beyond max_client_connections, or beyond the worker's share
 * of connections not logged in: the oldest of those makes room, else it is
 * refused. True when it may be served. */
static bool admit(struct worker *w, int fd)
{
	struct proxy_engine *e = w->e;

	if (w->npre >= w->pre_max)
		preauth_evict(w);
	for (;;) {
		if (atomic_fetch_add(&e->nclients, 1) < e->max_clients)
			return true;
		atomic_fetch_sub(&e->nclients, 1);
		if (!preauth_evict(w)) {
			proxy_metrics_client(CLIENT_REFUSED_FULL);
			refuse(fd, 1040, "Too many connections");
			return false;
		}
	}
}

/*
 * One client per call: the listener is level-triggered, so a backlog is
 * reported again by the next epoll_wait, while accepting on until EAGAIN
 * cost a failing accept4 on most wakeups (connection storms are one
 * connection per wakeup). TCP_NODELAY comes from the listener.
 */
void client_accept(struct worker *w, struct listener *l)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd;

	do
		fd = accept4(l->fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
	while (fd < 0 &&
	       (errno == EINTR || ((errno == EMFILE || errno == ENFILE) && out_of_fds(w))));
	if (fd < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EMFILE && errno != ENFILE)
			log_warn("proxy: accept: %s", strerror(errno));
		return;
	}
	client_adopt(w, fd, &ss);
}

struct client *client_adopt(struct worker *w, int fd, const struct sockaddr_storage *ss)
{
	struct proxy_engine *e = w->e;
	struct client *c;

	if (!admit(w, fd))
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c) {
		atomic_fetch_sub(&e->nclients, 1);
		proxy_metrics_client(CLIENT_REFUSED_NO_MEMORY);
		refuse(fd, 1041, "Out of memory");
		return NULL;
	}
	proxy_metrics_client(CLIENT_ACCEPTED);
	c->type = EV_CLIENT;
	c->w = w;
	c->fd = fd;
	c->st = C_HANDSHAKE;
	if (ss->ss_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, c->host,
		          sizeof(c->host));
	else
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, c->host,
		          sizeof(c->host));
	if (!strncmp(c->host, "::ffff:", 7))
		memmove(c->host, c->host + 7, strlen(c->host + 7) + 1);
	/* which worker serves whom: its pool and its queue (proxy_fair.sh) */
	log_debug("proxy: worker %d: a client from %s port %u", (int)(w - e->workers), c->host,
	          ntohs(ss->ss_family == AF_INET ? ((const struct sockaddr_in *)ss)->sin_port
	                                         : ((const struct sockaddr_in6 *)ss)->sin6_port));
	c->events = EPOLLIN | EPOLLRDHUP;
	if (scramble_fill_pooled(&w->scrambles, c->scramble) < 0 ||
	    ep_add(w, fd, c->events, c) < 0) {
		log_warn("proxy: a new client: %s", strerror(errno));
		atomic_fetch_sub(&e->nclients, 1);
		close(fd);
		free(c);
		return NULL;
	}
	c->next = w->clients;
	if (w->clients)
		w->clients->prev = c;
	w->clients = c;
	preauth_link(c);
	c->deadline_ms = now_ms() + (uint64_t)e->handshake_timeout_ms;
	c->active_ms = now_ms();
	send_handshake(c);
	if (client_flush(c) < 0) {
		client_close(c);
		return NULL;
	}
	return c;
}

void client_close(struct client *c)
{
	struct worker *w = c->w;

	if (c->dead)
		return;
	preauth_unlink(c);
	ops_sess_unregister(c);
	wait_dequeue(c);
	sw_dequeue(c);
	route_reader_release(c);
	if (c->wconn)
		pool_park(c, c->wconn);
	if (c->rconn)
		pool_park(c, c->rconn);
	if (c->prev)
		c->prev->next = c->next;
	else
		w->clients = c->next;
	if (c->next)
		c->next->prev = c->prev;
	tls_free(c->tls);
	c->tls = NULL;
	close(c->fd);
	c->fd = -1;
	c->dead = true;
	c->next_dead = w->dead_clients;
	w->dead_clients = c;
	atomic_fetch_sub(&w->e->nclients, 1);
}
