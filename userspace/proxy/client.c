/*
 * client.c - a client session from accept to close: the handshake and native
 * password auth, the commands it sends (COM_QUERY and the prepared statement
 * commands included), its output buffer, and the end of each command in
 * flight (an answer or an ERR). Routing is route.c's, the backends'
 * connections backend.c's.
 */
#define _GNU_SOURCE
#include "proxy/engine_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const struct user_entry *find_user(const struct proxy_engine *e, const char *name)
{
	for (size_t i = 0; i < e->nusers; i++)
		if (!strcmp(e->users[i].name, name))
			return &e->users[i];
	return NULL;
}

/* ---- output ---- */

/* Whether to read from the client now: not while a command runs and the
 * commands it pipelined behind it already fill IN_HIGH_WATER. */
static bool client_reads(const struct client *c)
{
	return c->st != C_BUSY || buf_used(&c->in) < IN_HIGH_WATER;
}

static void client_update(struct client *c)
{
	uint32_t ev =
	    (client_reads(c) ? EPOLLIN | EPOLLRDHUP : 0) | (buf_used(&c->out) ? EPOLLOUT : 0);

	ep_mod(c->w, c->fd, &c->events, ev, c);
}

/* Writes what is queued; -1 when the client is gone. */
int client_flush(struct client *c)
{
	while (buf_used(&c->out) > 0) {
		ssize_t n = send(c->fd, c->out.d + c->out.off, buf_used(&c->out), MSG_NOSIGNAL);
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
void cmd_done(struct client *c)
{
	c->cur = NULL;
	c->st = C_IDLE;
	c->has_exclude = false;
	c->retries = 0;
	c->cur_hist = false;
	buf_consume(&c->cmd, buf_used(&c->cmd));
	buf_trim(&c->cmd);
}

void cmd_fail(struct client *c, uint16_t code, const char *msg)
{
	/* the statement never ran: a PREPARE's statement goes (the client got no
	 * id), an EXECUTE's long data too, as after an answer */
	if (c->cur_ps && c->cur_kind == RESP_PREPARE)
		ps_free(c, c->cur_ps);
	else if (c->cur_ps)
		ps_drop_longdata(c, c->cur_ps);
	c->cur_ps = NULL;
	if (c->cur_hist && c->nhist > 0) {
		free(c->hist[--c->nhist].p);
		if (c->wconn && c->wconn->hist_applied > c->nhist)
			c->wconn->hist_applied = c->nhist;
		if (c->rconn && c->rconn->hist_applied > c->nhist)
			c->rconn->hist_applied = c->nhist;
	}
	client_err(c, 1, code, "HY000", msg);
	cmd_done(c);
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
	ps = ps_new(c, p + 1, n - 1);
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
	else if (ps_reads_prev_state(ps) && (c->last || reclaim_last(c)))
		c->route = R_LAST;
	return 0;
}

static int cmd_execute(struct client *c, const uint8_t *p, size_t n)
{
	struct pstmt *ps = n >= 10 ? ps_find(c, get_le32(p + 1)) : NULL;
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
	struct pstmt *ps = n >= 9 ? ps_find(c, get_le32(p + 1)) : NULL;
	struct bstmt *e;
	char msg[96];

	if (!ps) {
		unknown_stmt(c, n >= 5 ? get_le32(p + 1) : 0, "mysqld_stmt_fetch");
		return;
	}
	/* ps_forget_conn clears cursor_b when its connection goes */
	e = ps->cursor_b ? bc_find(ps->cursor_b, ps->key) : NULL;
	if (!e) {
		snprintf(msg, sizeof(msg), "The statement (%u) has no open cursor", ps->id);
		client_err(c, 1, 1421, "HY000", msg);
		return;
	}
	put_le32(c->cmd.d + c->cmd.off + 1, e->xid);
	c->cur_kind = RESP_ROWS;
	c->route = R_LAST;
	if (send_cmd(c, ps->cursor_b) < 0)
		bconn_fail(ps->cursor_b, "write failed");
}

static void cmd_long_data(struct client *c, const uint8_t *p, size_t n)
{
	struct pstmt *ps = n >= 7 ? ps_find(c, get_le32(p + 1)) : NULL;
	uint8_t len[4];

	if (!ps || ps->longdata_over)
		return; /* the server answers nothing either; EXECUTE will fail */
	/* Kept here until the EXECUTE: bounded for the whole session (all its
	 * statements) like the server's own max_long_data_size, or a client
	 * could grow it without end. */
	if (c->ld_bytes + 4 + n > c->w->e->max_packet) {
		ps->longdata_over = true;
		ps_drop_longdata(c, ps);
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
	struct pstmt *ps = n >= 5 ? ps_find(c, get_le32(p + 1)) : NULL;

	if (ps)
		ps_free(c, ps);
}

static void cmd_stmt_reset(struct client *c, const uint8_t *p, size_t n)
{
	struct pstmt *ps = n >= 5 ? ps_find(c, get_le32(p + 1)) : NULL;

	if (!ps) {
		unknown_stmt(c, n >= 5 ? get_le32(p + 1) : 0, "mysqld_stmt_reset");
		return;
	}
	/* Long data lives here until EXECUTE: nothing on a backend needs
	 * resetting but a cursor, which is closed for the client (a FETCH gets
	 * "no open cursor"); the server's closes with the next EXECUTE or the
	 * connection's reset. */
	ps_drop_longdata(c, ps);
	ps->longdata_over = false;
	ps->cursor_b = NULL;
	client_ok(c, 1);
}

static void client_command(struct client *c, const uint8_t *p, size_t n)
{
	buf_consume(&c->cmd, buf_used(&c->cmd));
	c->cur_hist = false;
	c->cur_write = false;
	c->cur_classified = false;
	c->cur_flags = 0;
	c->cur_reason = CLS_R_NONE;
	c->cur_ps = NULL;
	c->route = R_LAST;
	c->cur_kind = RESP_GENERIC;
	if (n == 0) {
		client_err(c, 1, 1047, "08S01", "Unknown command");
		return;
	}
	if (buf_append(&c->cmd, p, n) < 0) {
		c->closing = true;
		return;
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
			memcpy(c->db, p + 1, n - 1);
			c->db[n - 1] = 0;
		}
		if (hist_add(c, p, n) < 0)
			c->closing = true;
		break;
	case COM_FIELD_LIST:
		c->cur_kind = RESP_FIELD_LIST;
		break;
	case COM_STATISTICS:
		c->cur_kind = RESP_ONE_PACKET;
		break;
	case COM_SET_OPTION:
		if (hist_add(c, p, n) < 0)
			c->closing = true;
		break;
	case COM_RESET_CONNECTION:
		/* Fresh backend connections are the most faithful reset. */
		if (c->wconn)
			bconn_free(c->wconn);
		if (c->rconn)
			bconn_free(c->rconn);
		hist_clear(c);
		c->in_trans = c->ro_trans = c->autocommit_off = c->pin_writer = false;
		c->ryw_until_ms = 0;
		c->lid = 0;
		c->lid_gen = 0;
		snprintf(c->db, sizeof(c->db), "%s", c->db0);
		client_ok(c, 1);
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
	h.conn_id = atomic_fetch_add(&c->w->e->next_conn_id, 1);
	memcpy(h.scramble, c->scramble, SCRAMBLE_LEN);
	h.scramble_len = SCRAMBLE_LEN;
	h.caps = PROXY_CAPS;
	h.charset = CHARSET_UTF8MB4;
	h.status = SST_AUTOCOMMIT;
	snprintf(h.plugin, sizeof(h.plugin), "%s", NATIVE_PLUGIN);
	n = hs_build(pkt, sizeof(pkt), &h);
	if (n > 0)
		client_send(c, 0, pkt, (size_t)n);
}

static void deny(struct client *c, uint8_t seq, bool with_password)
{
	char msg[400];

	snprintf(msg, sizeof(msg), "Access denied for user '%s'@'%s' (using password: %s)", c->user,
	         c->host, with_password ? "YES" : "NO");
	log_info("proxy: access denied for user '%s'@'%s'", c->user, c->host);
	client_err(c, seq, 1045, "28000", msg);
	c->closing = true;
}

static void check_password(struct client *c, const uint8_t *reply, size_t n, uint8_t seq)
{
	const struct user_entry *u = find_user(c->w->e, c->user);

	if (!u || !u->has_hash || native_verify(c->scramble, reply, n, u->stage2, c->stage1) < 0) {
		deny(c, seq, n > 0);
		return;
	}
	c->st = C_IDLE;
	c->deadline_ms = 0;
	/* warm connections log in like the last client of this user, so that
	 * the next one of its kind can take them */
	for (size_t i = 0; i < c->w->nghosts; i++)
		if (!strcmp(c->w->ghosts[i].user, c->user)) {
			c->w->ghosts[i].caps = c->caps;
			c->w->ghosts[i].charset = c->charset;
		}
	client_ok(c, seq);
}

static void client_auth(struct client *c, const uint8_t *p, size_t n, uint8_t seq)
{
	struct hs_response r;
	uint8_t pkt[128];
	int len;

	if (c->st == C_SWITCH) {
		check_password(c, p, n, (uint8_t)(seq + 1));
		return;
	}
	if (hsr_parse(p, n, &r) < 0 || r.ssl_request) {
		client_err(c, (uint8_t)(seq + 1), 1043, "08S01",
		           r.ssl_request ? "mysteer: TLS is not supported on 6450 yet"
		                         : "Bad handshake");
		c->closing = true;
		return;
	}
	snprintf(c->user, sizeof(c->user), "%s", r.user);
	c->caps = r.caps & PROXY_CAPS;
	c->charset = r.charset;
	if (r.has_db) {
		snprintf(c->db0, sizeof(c->db0), "%s", r.db);
		snprintf(c->db, sizeof(c->db), "%s", r.db);
	}
	if ((r.caps & CAP_PLUGIN_AUTH) && r.plugin[0] && strcmp(r.plugin, NATIVE_PLUGIN)) {
		len = auth_switch_build(pkt, sizeof(pkt), NATIVE_PLUGIN, c->scramble, SCRAMBLE_LEN);
		if (len > 0)
			client_send(c, (uint8_t)(seq + 1), pkt, (size_t)len);
		c->st = C_SWITCH;
		return;
	}
	check_password(c, r.auth, r.auth_len, (uint8_t)(seq + 1));
}

/* Handles the whole packets the client sent, while it may. */
void client_process(struct client *c)
{
	struct proxy_engine *e = c->w->e;

	if (c->in_process || c->dead)
		return;
	c->in_process = true;
	while (!c->closing && !c->dead && c->st != C_BUSY) {
		size_t total, payload;
		uint8_t seq, *p = c->in.d + c->in.off;
		/* before login, only a handshake response or an auth switch
		 * reply can come: an anonymous client does not get
		 * max_packet_size bytes buffered */
		size_t max = c->st == C_IDLE ? e->max_packet : PREAUTH_MAX_PACKET;
		int r = pkt_whole(p, buf_used(&c->in), max, &total, &payload, &seq);

		if (r == 0)
			break;
		if (r < 0) {
			client_err(c, 1, 1153, "08S01",
			           "Got a packet bigger than 'max_allowed_packet' bytes");
			c->closing = true;
			break;
		}
		pkt_join(p, p, payload);
		if (c->st == C_IDLE)
			client_command(c, p, payload);
		else
			client_auth(c, p, payload, seq);
		if (!c->dead)
			buf_consume(&c->in, total);
	}
	c->in_process = false;
	if (c->dead)
		return;
	buf_trim(&c->in);
	if (client_flush(c) < 0 || c->closing)
		client_close(c);
}

void client_event(struct client *c, uint32_t events)
{
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
		if (buf_reserve(&c->in, 16384) < 0) {
			client_close(c);
			return;
		}
		ssize_t n = recv(c->fd, c->in.d + c->in.len, c->in.cap - c->in.len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			client_close(c);
			return;
		}
		c->in.len += (size_t)n;
		if (c->in.len < c->in.cap || !client_reads(c))
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

/*
 * One client per call: the listener is level-triggered, so a backlog is
 * reported again by the next epoll_wait, while accepting on until EAGAIN
 * cost a failing accept4 on most wakeups (connection storms are one
 * connection per wakeup). TCP_NODELAY comes from the listener.
 */
void accept_clients(struct worker *w)
{
	struct proxy_engine *e = w->e;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct client *c;
	int fd;

	do
		fd = accept4(w->lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			log_warn("proxy: accept: %s", strerror(errno));
		return;
	}
	if (atomic_fetch_add(&e->nclients, 1) >= e->max_clients) {
		atomic_fetch_sub(&e->nclients, 1);
		refuse(fd, 1040, "Too many connections");
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		atomic_fetch_sub(&e->nclients, 1);
		refuse(fd, 1041, "Out of memory");
		return;
	}
	c->type = EV_CLIENT;
	c->w = w;
	c->fd = fd;
	c->st = C_HANDSHAKE;
	if (ss.ss_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, c->host,
		          sizeof(c->host));
	else
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, c->host,
		          sizeof(c->host));
	if (!strncmp(c->host, "::ffff:", 7))
		memmove(c->host, c->host + 7, strlen(c->host + 7) + 1);
	/* which worker serves whom: its pool and its queue (proxy_fair.sh) */
	log_debug("proxy: worker %d: a client from %s port %u", (int)(w - e->workers), c->host,
	          ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
	                                        : ((struct sockaddr_in6 *)&ss)->sin6_port));
	c->events = EPOLLIN | EPOLLRDHUP;
	if (scramble_fill_pooled(&w->scrambles, c->scramble) < 0 ||
	    ep_add(w, fd, c->events, c) < 0) {
		log_warn("proxy: a new client: %s", strerror(errno));
		atomic_fetch_sub(&e->nclients, 1);
		close(fd);
		free(c);
		return;
	}
	c->next = w->clients;
	if (w->clients)
		w->clients->prev = c;
	w->clients = c;
	c->deadline_ms = now_ms() + (uint64_t)e->handshake_timeout_ms;
	send_handshake(c);
	if (client_flush(c) < 0)
		client_close(c);
}

void client_close(struct client *c)
{
	struct worker *w = c->w;

	if (c->dead)
		return;
	wait_dequeue(c);
	reader_release(c);
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
	close(c->fd);
	c->fd = -1;
	c->dead = true;
	c->next_dead = w->dead_clients;
	w->dead_clients = c;
	atomic_fetch_sub(&w->e->nclients, 1);
}
