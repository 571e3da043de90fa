/*
 * backend.c - one backend connection from open to free: the non-blocking
 * connect (within the per-backend cap), the login the proxy does itself with
 * the user's stage1 hash, reads and writes (login packets before the queued
 * commands), and failure, which retries a read elsewhere or tells the client
 * where it failed. What the answers say is answer.c's.
 */
#define _GNU_SOURCE
#include "proxy/engine_int.h"
#include "proxy/tls.h"

#include "common/proxyproto.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Objects are unlinked and closed at once but freed after the event batch, so
 * that a pointer held up the call stack can still be asked ->dead. */
void bconn_free(struct bconn *b)
{
	struct client *c = b->c;

	if (b->dead)
		return;
	if (b->pooled) {
		if (b->backend_id < PROXY_MAX_IDS)
			atomic_fetch_sub(&b->w->e->be_idle[b->backend_id], 1);
		for (struct bconn **pp = &b->w->pool; *pp; pp = &(*pp)->pool_next)
			if (*pp == b) {
				*pp = b->pool_next;
				break;
			}
		b->pooled = false;
	}
	if (c && c->ghost) {
		pool_warm_unlink(b);
		if (b->backend_id < PROXY_MAX_IDS) {
			c->warming[b->backend_id]--;
			atomic_fetch_sub(&b->w->e->be_warming[b->backend_id], 1);
		}
	}
	if (c && !c->ghost) {
		/* its LAST_INSERT_ID() was not read yet: the insert id of the OK
		 * that changed it stands for it (mux_lid_note) */
		if (b->writer && b->lid_held && b->lid_ok_set && b->lid_ok != c->lid) {
			c->lid = b->lid_ok;
			if (++c->lid_gen == 0)
				c->lid_gen = 1;
		}
		stmt_forget_conn(c, b);
		if (c->wconn == b)
			c->wconn = NULL;
		if (c->rconn == b)
			c->rconn = NULL;
		if (c->last == b)
			c->last = NULL;
		if (c->cur == b)
			c->cur = NULL;
		if (c->trx_conn == b)
			c->trx_conn = NULL;
	}
	tls_free(b->tls);
	b->tls = NULL;
	buf_free(&b->tls_hold);
	if (b->fd >= 0)
		close(b->fd); /* also leaves the epoll set */
	b->fd = -1;
	stmt_cache_clear(b, false); /* the server drops them with the connection */
	free(b->hist_img);
	b->hist_img = NULL;
	b->dead = true;
	atomic_fetch_sub(&b->w->e->nbconns, 1);
	pool_slot_release(b->w, b->backend_id);
	b->next_dead = b->w->dead_bconns;
	b->w->dead_bconns = b;
}

static bool bconn_paused(const struct bconn *b)
{
	return b->c && buf_used(&b->c->out) >= OUT_HIGH_WATER;
}

void bconn_update(struct bconn *b)
{
	uint32_t ev;

	if (b->dead)
		return;
	if (b->st == B_CONNECTING)
		ev = EPOLLOUT;
	else if (b->st == B_TLS)
		/* the SSLRequest goes out first, then the handshake asks */
		ev = (buf_used(&b->lout) ? EPOLLOUT : b->tls_want) | EPOLLRDHUP;
	else
		ev =
		    (bconn_paused(b) ? 0 : EPOLLIN | EPOLLRDHUP) |
		    (buf_used(&b->lout) || (b->st == B_READY && buf_used(&b->out)) ? EPOLLOUT : 0) |
		    b->tls_want;
	ep_mod(b->w, b->fd, &b->events, ev, b);
}

/* The backend's socket, in plain text or through its TLS connection (once
 * its handshake is done), as send(2) and recv(2) (tls_as_socket_io). */
static ssize_t bconn_send(struct bconn *b, const void *p, size_t n)
{
	/* the PROXY header and the SSLRequest go before TLS */
	if (!b->tls || b->st < B_AUTH)
		return send(b->fd, p, n, MSG_NOSIGNAL);
	return tls_as_socket_io(tls_write(b->tls, p, n), EPOLLOUT, &b->tls_want);
}

static ssize_t bconn_recv(struct bconn *b, void *p, size_t n)
{
	if (!b->tls || b->st == B_HANDSHAKE) /* the server's greeting is plain */
		return recv(b->fd, p, n, 0);
	return tls_as_socket_io(tls_read(b->tls, p, n), EPOLLIN, &b->tls_want);
}

/* 1: all written, 0: the socket is full, -1: error. */
static int flush_buf(struct bconn *c, struct buf *b)
{
	while (buf_used(b) > 0) {
		ssize_t n = bconn_send(c, b->d + b->off, buf_used(b));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n <= 0)
			return -1;
		buf_consume(b, (size_t)n);
	}
	buf_trim(b);
	return 1;
}

int bconn_flush(struct bconn *b)
{
	int r;

	if (b->st == B_CONNECTING)
		return 0;
	r = flush_buf(b, &b->lout);
	if (r == 1 && b->st == B_READY)
		r = flush_buf(b, &b->out);
	if (r < 0)
		return -1;
	if (r == 1 && b->st == B_READY && b->sent_pending) {
		b->sent_pending = false;
		b->sent_us = mono_us();
	}
	bconn_update(b);
	return 0;
}

/*
 * A backend connection failed (refused, closed, malformed, login refused).
 * A read whose answer has not started is retried elsewhere; anything else
 * gets an ERR that says where it failed, or a closed connection when part of
 * the answer already reached the client or session state was lost with it.
 * A login the server refused (srv) is answered with the server's own error,
 * as the client would have had it at connect (a schema name invalid in its
 * character set: 1300, an unknown schema: 1049, ...).
 */
static void bconn_fail_err(struct bconn *b, const char *why, const struct err_pkt *srv)
{
	struct client *c = b->c;
	bool active = c && c->cur == b, writer = b->writer;
	uint32_t id = b->backend_id;
	char msg[512];
	bool state_lost;

	if (b->dead)
		return;
	if (b->st == B_CONNECTING && b->backend_id < PROXY_MAX_IDS)
		atomic_fetch_add(&b->w->e->be_failed[b->backend_id], 1);
	log_info("proxy: %s connection to %s failed: %s", writer ? "writer" : "reader", b->name,
	         why);
	snprintf(msg, sizeof(msg), "mysteer: lost the connection to the %s %s: %s",
	         writer ? "writer" : "reader", b->name, why);
	pool_warm_failed(b);
	/* the writer could not be reached before the command was sent (a
	 * killed primary refuses the connect): it waits for the next writer
	 * (switchover_buffer_ms), as when there is none */
	if (c && active && writer && !srv && b->st != B_READY && !c->fwd_started && sw_unreached(b))
		return;
	/* a transaction there is replayed on the next writer (replay.c) */
	if (c && writer && !srv && rp_lost(b))
		return;
	state_lost = c && ((writer && (c->in_trans || c->pin_writer || c->autocommit_off)) ||
	                   c->trx_conn == b);
	bconn_free(b);
	if (!c)
		return;
	if (active && c->fwd_started) {
		client_close(c);
		return;
	}
	if (!active) {
		if (state_lost)
			client_close(c);
		return;
	}
	if (c->route == R_READER && c->retries < MAX_RETRIES && !state_lost) {
		c->retries++;
		proxy_metrics_reader_retry();
		c->exclude_id = id;
		c->has_exclude = true;
		route_cmd(c);
	} else {
		if (srv)
			client_cmd_fail_state(c, srv->code, srv->sqlstate, srv->msg);
		else
			client_cmd_fail(c, 1158, msg); /* ER_NET_READ_ERROR: client codes (2013)
			                           confuse libmariadb */
		if (state_lost)
			c->closing = true;
	}
	if (c->st == C_IDLE) {
		if (client_flush(c) < 0 || c->closing)
			client_close(c);
		else
			client_process(c);
	}
}

void bconn_fail(struct bconn *b, const char *why)
{
	bconn_fail_err(b, why, NULL);
}

void bconn_fail_login(struct bconn *b, const struct err_pkt *e)
{
	char msg[400];

	snprintf(msg, sizeof(msg), "login refused: %u %s", e->code, e->msg);
	bconn_fail_err(b, msg, e);
}

/* The TLS handshake goes on once the SSLRequest is out, as far as the socket
 * lets it; when it is done the handshake response goes over it (B_AUTH). */
static void bconn_tls_step(struct bconn *b)
{
	char why[300];
	int r;

	if (buf_used(&b->lout)) {
		bconn_update(b); /* the SSLRequest is still going out */
		return;
	}
	r = tls_connect(b->tls, why, sizeof(why));
	if (r == TLS_WANT_READ || r == TLS_WANT_WRITE) {
		b->tls_want = r == TLS_WANT_READ ? EPOLLIN : EPOLLOUT;
		bconn_update(b);
		return;
	}
	if (r < 0) {
		bconn_fail(b, why);
		return;
	}
	b->tls_want = 0;
	log_debug("proxy: TLS to %s: %s %s", b->name, tls_version(b->tls), tls_cipher(b->tls));
	b->st = B_AUTH;
	if (buf_append(&b->lout, b->tls_hold.d + b->tls_hold.off, buf_used(&b->tls_hold)) < 0) {
		bconn_fail(b, "out of memory");
		return;
	}
	buf_free(&b->tls_hold);
	if (bconn_flush(b) < 0)
		bconn_fail(b, "write failed");
}

static void bconn_login(struct bconn *b, const uint8_t *p, size_t n, uint8_t seq)
{
	struct handshake hs;
	struct hs_response r;
	struct client *c = b->c;
	uint8_t pkt[1024];
	const char *pw;
	size_t pwlen = 0;
	int len;

	if (hs_parse(p, n, &hs) < 0 || hs.scramble_len < SCRAMBLE_LEN) {
		bconn_fail(b, "bad handshake");
		return;
	}
	memset(&r, 0, sizeof(r));
	b->thread_id = hs.conn_id;
	if (c->cur == b && !c->ghost)
		ops_sess_running(c, b); /* the command waited for the login */
	/* Session tracking whatever the client asked: the proxy reads last_gtid
	 * and state changes in the OK packets, and gives a client without it
	 * the plain form (client_ok_form). */
	r.caps = (c->caps & hs.caps & (PROXY_CAPS | CAP_LOCAL_FILES) &
	          ~(CAP_CONNECT_ATTRS | CAP_CONNECT_WITH_DB)) |
	         (hs.caps & CAP_SESSION_TRACK) | CAP_PROTOCOL_41 | CAP_SECURE_CONNECTION |
	         CAP_PLUGIN_AUTH;
	if (c->db0[0]) {
		r.caps |= CAP_CONNECT_WITH_DB;
		snprintf(r.db, sizeof(r.db), "%s", c->db0);
	}
	/* the column definitions pass through as the server sends them */
	r.ext_caps = c->ext_caps & hs.ext_caps;
	b->add_ext_meta = c->ext_caps & ~hs.ext_caps & MARIADB_CAP_EXTENDED_METADATA;
	b->caps = r.caps;
	b->rt.caps = r.caps; /* the command queued before the login was tracked with 0 */
	if (c->caps & ~b->caps & (CAP_DEPRECATE_EOF | CAP_SESSION_TRACK | CAP_MULTI_RESULTS))
		log_warn("proxy: backend %s lacks capabilities the client uses", b->name);
	r.max_packet = 1u << 30;
	r.charset = c->charset;
	/* a ghost's caps may follow a client before this login is done: the
	 * pool matches on what this connection logged in with */
	b->pool_caps = c->caps;
	b->pool_ext_caps = c->ext_caps;
	b->pool_charset = c->charset;
	snprintf(r.user, sizeof(r.user), "%s", c->user);
	memcpy(b->nonce, hs.scramble, SCRAMBLE_LEN);
	b->mysql = !strstr(hs.server_version, "MariaDB");
	/* an empty password: an empty reply, as a client sends it */
	r.auth_len = 0;
	pw = users_password(engine_worker_users(b->w), c->user, &pwlen);
	b->sha2 = !c->empty_pw && pw && !strcmp(hs.plugin, SHA2_PLUGIN);
	if (b->sha2) {
		/* MySQL 8's default: the account most likely has it, and the
		 * reply is the fast authentication (a native account makes the
		 * server switch back, bconn_auth_reply) */
		snprintf(r.plugin, sizeof(r.plugin), "%s", SHA2_PLUGIN);
		sha2_reply(pw, pwlen, b->nonce, r.auth);
		r.auth_len = SHA256_LEN;
	} else {
		snprintf(r.plugin, sizeof(r.plugin), "%s", NATIVE_PLUGIN);
		if (!c->empty_pw) {
			native_reply(hs.scramble, c->stage1, r.auth);
			r.auth_len = SHA1_LEN;
		}
	}
	if (b->tls) {
		if (!(hs.caps & CAP_SSL)) {
			bconn_fail(b, "the server offers no TLS (its [backend] section says tls)");
			return;
		}
		r.caps |= CAP_SSL;
		b->caps = b->rt.caps = r.caps;
	}
	len = hsr_build(pkt, sizeof(pkt), &r);
	if (len < 0) {
		bconn_fail(b, "cannot build the login");
		return;
	}
	if (b->tls) {
		/* the SSLRequest is the response's first 32 bytes, the response
		 * itself goes over TLS with the next sequence id */
		if (len < 32 || buf_put_packet(&b->lout, (uint8_t)(seq + 1), pkt, 32) < 0 ||
		    buf_put_packet(&b->tls_hold, (uint8_t)(seq + 2), pkt, (size_t)len) < 0) {
			bconn_fail(b, "cannot build the login");
			return;
		}
		b->st = B_TLS;
		b->tls_want = EPOLLOUT;
		if (bconn_flush(b) < 0)
			bconn_fail(b, "write failed");
		else
			bconn_tls_step(b);
		return;
	}
	if (buf_put_packet(&b->lout, (uint8_t)(seq + 1), pkt, (size_t)len) < 0) {
		bconn_fail(b, "cannot build the login");
		return;
	}
	b->st = B_AUTH;
	if (bconn_flush(b) < 0)
		bconn_fail(b, "write failed");
}

/* caching_sha2_password's full authentication (the server's cache lacks the
 * user): over TLS the password in clear, NUL-terminated, as a client sends
 * it inside TLS; without TLS the server's RSA public key is asked for first
 * (sha2_pubkey). */
static void sha2_full(struct bconn *b, const char *pw, size_t len, uint8_t seq)
{
	static const uint8_t ask = SHA2_PUBKEY_REQUEST;
	int r;

	if (b->tls)
		r = buf_put_packet(&b->lout, seq, (const uint8_t *)pw, len + 1);
	else {
		b->rsa_asked = true;
		r = buf_put_packet(&b->lout, seq, &ask, 1);
	}
	if (r < 0 || bconn_flush(b) < 0)
		bconn_fail(b, "write failed");
}

/* The server's RSA public key (PEM) came: the password goes encrypted. */
static void sha2_pubkey(struct bconn *b, const uint8_t *pem, size_t n, const char *pw, size_t len,
                        uint8_t seq)
{
	uint8_t enc[1024];
	int l = sha2_rsa_encrypt(pem, n, pw, len, b->nonce, enc, sizeof(enc));

	if (l < 0) {
		bconn_fail(b, "caching_sha2_password: the server's RSA public key is not usable");
		return;
	}
	if (buf_put_packet(&b->lout, seq, enc, (size_t)l) < 0 || bconn_flush(b) < 0)
		bconn_fail(b, "write failed");
}

/* A login the proxy cannot answer: refused with a named error, as a
 * refused login (not a lost server, which a writer's statement would wait
 * out). */
static void login_unanswerable(struct bconn *b, const char *plugin)
{
	struct err_pkt e;

	memset(&e, 0, sizeof(e));
	e.code = 1251; /* ER_NOT_SUPPORTED_AUTH_MODE */
	snprintf(e.sqlstate, sizeof(e.sqlstate), "08004");
	if (!strcmp(plugin, SHA2_PLUGIN))
		snprintf(e.msg, sizeof(e.msg),
		         "mysteer: backend %.32s asks for caching_sha2_password for user '%.48s', "
		         "which needs the user's password: its [user:] section has only a "
		         "password_hash (give it password or password_file)",
		         b->name, b->c->user);
	else
		snprintf(e.msg, sizeof(e.msg),
		         "mysteer: backend %.32s asks for %.32s for user '%.48s'; the proxy logs "
		         "in to backends with mysql_native_password or caching_sha2_password only",
		         b->name, plugin, b->c->user);
	bconn_fail_login(b, &e);
}

/* The login's answer: OK, ERR, a switch of plugin (mysql_native_password,
 * caching_sha2_password), or caching_sha2_password's AuthMoreData. The
 * queued commands are written out once it is OK. */
static void bconn_auth_reply(struct bconn *b, const uint8_t *p, size_t n, uint8_t seq)
{
	struct err_pkt e;
	char plugin[64];
	uint8_t scr[SCRAMBLE_LEN], reply[SHA256_LEN];
	size_t sl, pwlen = 0;
	const char *pw = users_password(engine_worker_users(b->w), b->c->user, &pwlen);

	if (n > 0 && p[0] == 0x00) {
		b->st = B_READY;
		if (bconn_flush(b) < 0)
			bconn_fail(b, "write failed");
		return;
	}
	if (n > 0 && p[0] == 0xff) {
		if (err_parse(p, n, &e) < 0) {
			bconn_fail(b, "malformed login error");
			return;
		}
		bconn_fail_login(b, &e);
		return;
	}
	if (n > 0 && p[0] == MORE_DATA && b->sha2 && pw) {
		if (n == 2 && p[1] == SHA2_FAST_OK)
			return; /* the OK follows */
		if (n == 2 && p[1] == SHA2_FULL_AUTH && !b->rsa_asked) {
			sha2_full(b, pw, pwlen, (uint8_t)(seq + 1));
			return;
		}
		if (b->rsa_asked) {
			sha2_pubkey(b, p + 1, n - 1, pw, pwlen, (uint8_t)(seq + 1));
			return;
		}
	}
	if (n > 0 && p[0] == 0xfe &&
	    auth_switch_parse(p, n, plugin, sizeof(plugin), scr, &sl) == 0) {
		if (!strcmp(plugin, NATIVE_PLUGIN) && sl == SCRAMBLE_LEN) {
			b->sha2 = false;
			native_reply(scr, b->c->stage1, reply);
			if (buf_put_packet(&b->lout, (uint8_t)(seq + 1), reply,
			                   b->c->empty_pw ? 0 : SHA1_LEN) < 0 ||
			    bconn_flush(b) < 0)
				bconn_fail(b, "write failed");
			return;
		}
		/* a MySQL 8 account with caching_sha2_password: answered with
		 * the user's password when the config gives it */
		if (!strcmp(plugin, SHA2_PLUGIN) && sl == SCRAMBLE_LEN && (pw || b->c->empty_pw)) {
			b->sha2 = true;
			b->rsa_asked = false;
			memcpy(b->nonce, scr, SCRAMBLE_LEN);
			if (pw && pwlen)
				sha2_reply(pw, pwlen, scr, reply);
			if (buf_put_packet(&b->lout, (uint8_t)(seq + 1), reply,
			                   pw && pwlen ? SHA256_LEN : 0) < 0 ||
			    bconn_flush(b) < 0)
				bconn_fail(b, "write failed");
			return;
		}
		login_unanswerable(b, plugin);
		return;
	}
	bconn_fail(b, "unsupported authentication request");
}

int bconn_read(struct bconn *b)
{
	int records = 0;

	for (;;) {
		if (buf_reserve(&b->in, READ_CHUNK) < 0)
			return -1;
		ssize_t n = bconn_recv(b, b->in.d + b->in.len, b->in.cap - b->in.len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n <= 0)
			return -1;
		b->in.len += (size_t)n;
		/* TLS gives one record a call: read a few more (a record is
		 * taken whole, there is room for it, so none waits inside
		 * OpenSSL unseen by epoll) */
		if (b->in.len < b->in.cap && (!b->tls || ++records >= 8))
			return 0;
	}
}

/* Login packets, then answers. */
void bconn_pump(struct bconn *b)
{
	while (!b->dead && (b->st == B_HANDSHAKE || b->st == B_AUTH)) {
		size_t total, payload;
		uint8_t seq, *p = b->in.d + b->in.off;
		int r = pkt_whole(p, buf_used(&b->in), 1 << 20, &total, &payload, &seq);

		if (r == 0)
			return;
		if (r < 0) {
			bconn_fail(b, "malformed login packet");
			return;
		}
		pkt_join(p, p, payload);
		buf_consume(&b->in, total); /* p stays valid: nothing moves b->in below */
		if (b->st == B_HANDSHAKE)
			bconn_login(b, p, payload, seq);
		else
			bconn_auth_reply(b, p, payload, seq);
	}
	if (!b->dead && b->st == B_READY && b->c && b->c->ghost) {
		pool_warm_park(b);
		return;
	}
	if (!b->dead && b->st == B_READY)
		answer_stream(b);
}

void bconn_event(struct bconn *b, uint32_t events)
{
	int r;

	if (b->st == B_CONNECTING) {
		int err = 0;
		socklen_t el = sizeof(err);
		if (getsockopt(b->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err) {
			bconn_fail(b, strerror(err ? err : errno));
			return;
		}
		b->st = B_HANDSHAKE;
		bconn_update(b);
		return;
	}
	if (b->st == B_TLS) {
		if (events & (EPOLLERR | EPOLLHUP)) {
			bconn_fail(b, "closed by the server during the TLS handshake");
			return;
		}
		if (buf_used(&b->lout) && bconn_flush(b) < 0) {
			bconn_fail(b, "write failed");
			return;
		}
		bconn_tls_step(b);
		return;
	}
	/* a TLS read waited for the socket to take a write, or back */
	if (b->tls_want) {
		if ((b->tls_want & EPOLLOUT) && (events & EPOLLOUT))
			events |= EPOLLIN;
		if ((b->tls_want & EPOLLIN) && (events & EPOLLIN))
			events |= EPOLLOUT;
	}
	if ((events & EPOLLOUT) && bconn_flush(b) < 0) {
		bconn_fail(b, "write failed");
		return;
	}
	/* LOAD DATA LOCAL: room for more of the client's file */
	if ((events & EPOLLOUT) && b->c && b->c->infile && b->c->cur == b &&
	    buf_used(&b->out) < OUT_HIGH_WATER) {
		client_process(b->c);
		if (b->dead)
			return;
	}
	if (!(events & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP)))
		return;
	r = bconn_read(b);
	bconn_pump(b);
	if (b->dead)
		return;
	if (r < 0)
		bconn_fail(b, "closed by the server");
	else
		bconn_update(b);
}

/* A non-blocking socket connecting to be, or -1 (a failed connect is
 * logged). */
static int bconn_connect(struct worker *w, const struct topo_backend *be)
{
	int fd, one = 1;

#ifdef MYSTEER_ENGINE_TEST
	if (w->e->test_connect) {
		fd = w->e->test_connect(w->e->test_connect_arg, be);
		if (fd < 0)
			log_info("proxy: connect to %s: %s", be->name, strerror(errno));
		return fd;
	}
#endif
	fd = socket(be->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		log_debug("proxy: TCP_NODELAY: %s", strerror(errno));
	if (connect(fd, (const struct sockaddr *)&be->addr, be->addrlen) < 0 &&
	    errno != EINPROGRESS) {
		log_info("proxy: connect to %s: %s", be->name, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* A new connection to be, for c (or a ghost: a warm one). NULL with *full
 * set when the backend is at pool_max_per_backend. */
struct bconn *bconn_open(struct client *c, const struct topo_backend *be, bool writer, bool *full)
{
	struct bconn *b;

	*full = false;
	if (be->addrlen == 0)
		return NULL;
	/* a PROXY header names a client: no warm connections (pool_warm) */
	bool pp = engine_backend_pp(c->w->e, be);
	if (pp && c->ghost)
		return NULL;
	if (!pool_slot_take(c->w->e, be->id)) {
		*full = true;
		return NULL;
	}
	b = calloc(1, sizeof(*b));
	if (!b) {
		pool_slot_release(c->w, be->id);
		return NULL;
	}
	b->type = EV_BACKEND;
	b->w = c->w;
	snprintf(b->schema, sizeof(b->schema), "%s", c->db0); /* bconn_login's */
	b->c = c;
	b->writer = writer;
	b->backend_id = be->id;
	snprintf(b->name, sizeof(b->name), "%s", be->name);
	b->fd = bconn_connect(c->w, be);
	if (b->fd >= 0) {
		bool failed;

		b->tls = engine_backend_tls(c->w->e, be, b->fd, &failed);
		if (failed) {
			log_info("proxy: TLS to %s: cannot make a connection (out of memory?)",
			         be->name);
			close(b->fd);
			b->fd = -1;
		}
	}
	if (b->fd >= 0 && pp) {
		uint8_t hdr[PP2_MAX];
		int n = pp2_build_fd(hdr, c->fd);

		/* the header goes first, once the connect is done */
		if (n < 0 || buf_append(&b->lout, hdr, (size_t)n) < 0) {
			log_info("proxy: no PROXY header for %s to %s", c->host, be->name);
			tls_free(b->tls);
			b->tls = NULL;
			buf_free(&b->lout);
			close(b->fd);
			b->fd = -1;
		} else {
			b->pp = true;
			snprintf(b->pp_host, sizeof(b->pp_host), "%s", c->host);
		}
	}
	if (b->fd < 0 || ep_add(c->w, b->fd, EPOLLOUT, b) < 0) {
		if (b->fd >= 0) {
			log_info("proxy: connect to %s: %s", be->name, strerror(errno));
			close(b->fd);
		}
		tls_free(b->tls);
		free(b);
		pool_slot_release(c->w, be->id);
		return NULL;
	}
	b->events = EPOLLOUT;
	b->st = B_CONNECTING;
	atomic_fetch_add(&c->w->e->nbconns, 1);
	if (be->id < PROXY_MAX_IDS) {
		atomic_fetch_add(&c->w->e->be_connects[be->id], 1);
		/* a warm connection serves nobody yet: it counts as steered when
		 * a client takes it from the pool */
		if (c->ghost)
			atomic_fetch_add(&c->w->e->be_warming[be->id], 1);
		else
			atomic_fetch_add(&c->w->e->be_opened[be->id], 1);
	}
	return b;
}
