/*
 * fuzz_engine.c - libFuzzer target over the whole 6450 proxy engine in one
 * process: a client on one socketpair, scripted backends (tests/lib/
 * scripted_server.h) on the others, the engine's event loop run by the
 * fuzzer's thread (proxy/engine_test.h: no listener, no worker thread, no
 * network). The input is read as a stream of decisions: the engine's
 * settings, how the client logs in, then a list of client actions (commands
 * well formed or not, raw bytes, time passing, a topology change, a backend
 * closing), and, interleaved as the backends get requests, how each one
 * answers (logins refused or switched, OK/ERR/result sets/EOF with session
 * state, prepare answers, split writes, malformed packets, hangs, closes).
 * When the input runs out, the backends answer as a server would.
 *
 * Oracles: ASan/UBSan and leaks (every session and connection is freed at
 * the end), the framing of everything the proxy writes to the client and to
 * the backends, and no session or connection left counted after the client
 * is gone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "../lib/scripted_server.h"
#include "common/log.h"
#include "common/topology.h"
#include "config/config.h"
#include "proxy/engine_test.h"
#include "proxy/proto.h"
#include "proxy/proxy.h"

#define NCFG      4
#define NTOPO     4
#define MAX_SRV   32
#define MAX_ROUND 400

/* ---- the input as a stream of decisions ---- */

struct in {
	const uint8_t *p;
	size_t n;
};

static bool in_more(const struct in *in)
{
	return in->n > 0;
}

/* The next byte, dflt once the input ran out. */
static uint8_t in_byte(struct in *in, uint8_t dflt)
{
	if (!in->n)
		return dflt;
	in->n--;
	return *in->p++;
}

/* Up to n bytes (fewer at the end). */
static size_t in_bytes(struct in *in, const uint8_t **p, size_t n)
{
	if (n > in->n)
		n = in->n;
	*p = in->p;
	in->p += n;
	in->n -= n;
	return n;
}

/* ---- the world of one input ---- */

struct srv {
	struct ss_server *s;
	uint32_t be_id;
	uint32_t next_stmt;
	bool hung;
};

struct ctx {
	struct in in; /* the client's side: settings, login, actions */
	struct in be; /* the backends' side: how they answer */
	struct proxy_engine *e;
	struct srv srv[MAX_SRV];
	int nsrv;
	int cfd; /* the client's end, -1 once closed */
	uint8_t cin[1 << 16];
	size_t cin_len;
	bool saw_handshake;
	struct handshake hs;
	uint64_t gtid_seq;
};

static struct config *cfgs[NCFG];
static bool trace; /* FUZZ_ENGINE_TRACE set: what goes where, on stderr */

static void show(const char *who, const uint8_t *p, size_t n)
{
	if (!trace)
		return;
	fprintf(stderr, "%s %zu:", who, n);
	for (size_t i = 0; i < n && i < 48; i++)
		fputc(p[i] >= 32 && p[i] < 127 ? p[i] : '.', stderr);
	fputc('\n', stderr);
}
static struct topology *topos_tmpl[NTOPO];

static void die(const char *what)
{
	fprintf(stderr, "fuzz_engine: %s\n", what);
	abort();
}

/* ---- backends ---- */

static int backend_connect(void *arg, const struct topo_backend *be)
{
	struct ctx *x = arg;
	struct ss_opts o = {0};
	uint8_t sel;
	int sv[2];

	sel = in_byte(&x->be, 0);
	if (sel == 0xff || x->nsrv == MAX_SRV) {
		errno = ECONNREFUSED;
		return -1;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	switch (sel % 4) {
	case 0:
		o.caps = SS_CAPS_MARIADB;
		o.ext_caps = 1u << 3;
		o.version = "5.5.5-10.11.6-MariaDB";
		break;
	case 1:
		o.caps = SS_CAPS_MYSQL8;
		break;
	case 2:
		o.caps = SS_CAPS_MARIADB & ~CAP_SESSION_TRACK;
		break;
	case 3:
		o.caps = SS_CAPS_MARIADB & ~CAP_DEPRECATE_EOF;
		break;
	}
	if (sel & 0x10)
		o.plugin = "caching_sha2_password";
	o.conn_id = 100 + (uint32_t)x->nsrv;
	x->srv[x->nsrv].s = ss_new(sv[1], &o);
	if (!x->srv[x->nsrv].s) {
		close(sv[0]);
		errno = ENOMEM;
		return -1;
	}
	x->srv[x->nsrv].be_id = be->id;
	x->srv[x->nsrv].next_stmt = 1;
	x->nsrv++;
	return sv[0];
}

static bool starts_with(const uint8_t *p, size_t n, const char *word)
{
	size_t k = strlen(word);

	while (n > 0 && (*p == ' ' || *p == '\n' || *p == '(')) {
		p++;
		n--;
	}
	return n >= k && !strncasecmp((const char *)p, word, k);
}

static bool mentions(const uint8_t *p, size_t n, const char *word)
{
	return memmem(p, n, word, strlen(word)) != NULL;
}

/* An OK as a server with session tracking sends it after a write. */
static void ok_after(struct ctx *x, struct srv *v, const uint8_t *sql, size_t n, uint16_t status)
{
	uint8_t state[256];
	char gtid[64];
	size_t len = 0;
	struct ss_ok ok = {.status = status, .affected = 1, .insert_id = 7};

	if (sql && (starts_with(sql, n, "INSERT") || starts_with(sql, n, "UPDATE") ||
	            starts_with(sql, n, "DELETE") || starts_with(sql, n, "COMMIT"))) {
		snprintf(gtid, sizeof(gtid), "0-1-%llu", (unsigned long long)++x->gtid_seq);
		len += ss_state_sysvar(state + len, sizeof(state) - len, "last_gtid", gtid);
	}
	if (sql && (starts_with(sql, n, "SET") || mentions(sql, n, "TEMPORARY") ||
	            mentions(sql, n, "GET_LOCK") || starts_with(sql, n, "USE")))
		len += ss_state_changed(state + len, sizeof(state) - len);
	if (len) {
		ok.state = state;
		ok.state_len = len;
	}
	ss_ok(v->s, &ok);
}

static unsigned count_params(const uint8_t *p, size_t n)
{
	unsigned k = 0;

	for (size_t i = 0; i < n; i++)
		k += p[i] == '?';
	return k > 20 ? 20 : k;
}

/* What a server would answer to command p. */
static void answer_right(struct ctx *x, struct srv *v, const uint8_t *p, size_t n)
{
	static const char *const one[] = {"1"};
	static const char *const rows[] = {"1", "a", "2", NULL, "3", "c"};
	uint8_t cmd = n ? p[0] : 0xff;
	const uint8_t *sql = p + 1;
	size_t sn = n ? n - 1 : 0;

	switch (cmd) {
	case COM_QUERY:
		if (starts_with(sql, sn, "SELECT") || starts_with(sql, sn, "SHOW") ||
		    starts_with(sql, sn, "WITH") || starts_with(sql, sn, "CALL")) {
			if (mentions(sql, sn, "MASTER_GTID_WAIT") ||
			    mentions(sql, sn, "LAST_INSERT_ID")) {
				static const char *const zero[] = {"0"};
				ss_result(v->s, 1, NULL, 1, zero, 0);
			} else if (mentions(sql, sn, "; SELECT")) {
				ss_result(v->s, 1, NULL, 1, one, SST_AUTOCOMMIT | SST_MORE_RESULTS);
				ss_result(v->s, 2, NULL, 3, rows, 0);
			} else if (starts_with(sql, sn, "CALL")) {
				ss_result(v->s, 1, NULL, 1, one, SST_AUTOCOMMIT | SST_MORE_RESULTS);
				ok_after(x, v, NULL, 0, 0);
			} else {
				ss_result(v->s, 2, NULL, 3, rows, 0);
			}
		} else if (starts_with(sql, sn, "BEGIN") || starts_with(sql, sn, "START")) {
			ok_after(x, v, sql, sn,
			         SST_AUTOCOMMIT | SST_IN_TRANS |
			             (mentions(sql, sn, "READ ONLY") ? SST_IN_TRANS_READONLY : 0));
		} else {
			ok_after(x, v, sql, sn, 0);
		}
		break;
	case COM_STMT_PREPARE:
		ss_prepare_ok(v->s, v->next_stmt++, starts_with(sql, sn, "SELECT") ? 2 : 0,
		              (uint16_t)count_params(sql, sn), 0);
		break;
	case COM_STMT_EXECUTE:
		if (n > 5 && (p[5] & 1)) { /* a cursor: the columns now, rows at FETCH */
			ss_result(v->s, 1, NULL, 0, NULL, SST_AUTOCOMMIT | SST_CURSOR_EXISTS);
		} else if (n > 5 && (p[1] & 1)) {
			ss_result(v->s, 2, NULL, 3, rows, 0);
		} else {
			ok_after(x, v, NULL, 0, 0);
		}
		break;
	case COM_STMT_FETCH: {
		uint8_t row[8] = {0x00, 0x00, 0x01, '1'};
		ss_packet(v->s, row, 4);
		ss_eof(v->s, 0, SST_AUTOCOMMIT | SST_LAST_ROW_SENT);
		break;
	}
	case COM_STMT_CLOSE:
	case COM_STMT_SEND_LONG_DATA:
		break; /* no answer */
	case COM_QUIT:
		ss_close(v->s);
		break;
	case COM_FIELD_LIST: {
		/* column definitions, then EOF whatever DEPRECATE_EOF */
		ss_result(v->s, 0, NULL, 0, NULL, 0);
		break;
	}
	case COM_STATISTICS:
		ss_packet(v->s, "Uptime: 1  Threads: 1", 21);
		break;
	default:
		ss_ok(v->s, NULL);
		break;
	}
}

static void answer_login(struct ctx *x, struct srv *v, const struct ss_req *r)
{
	static const uint8_t scr[SCRAMBLE_LEN] = "ABCDEFGHIJ0123456789";
	uint8_t op = in_byte(&x->be, 0), junk[64];
	const uint8_t *b;
	size_t n;

	if (r->phase == SS_AUTH) {
		if (op % 8 == 7)
			ss_err(v->s, 1045, "28000", "Access denied");
		else
			ss_ok(v->s, NULL);
		return;
	}
	switch (op % 16) {
	case 10:
		ss_err(v->s, 1045, "28000", "Access denied for user");
		break;
	case 11:
		ss_err(v->s, 1040, "08004", "Too many connections");
		break;
	case 12:
		ss_auth_switch(v->s, NATIVE_PLUGIN, scr, SCRAMBLE_LEN);
		break;
	case 13:
		ss_auth_switch(v->s, "caching_sha2_password", scr, SCRAMBLE_LEN);
		break;
	case 14:
		n = in_bytes(&x->be, &b, in_byte(&x->be, 0) % sizeof(junk));
		ss_packet(v->s, b, n);
		break;
	case 15:
		v->hung = true;
		break;
	default:
		ss_ok(v->s, NULL);
		break;
	}
}

/* A command's answer: mostly what a server says, else what the input says. */
static void answer_cmd(struct ctx *x, struct srv *v, const struct ss_req *r)
{
	static const char *const one[] = {"1"};
	uint8_t op = in_byte(&x->be, 0), state[128];
	const uint8_t *b;
	size_t n;
	struct ss_ok ok = {0};

	if (op < 0xc0) {
		answer_right(x, v, r->p, r->n);
		return;
	}
	switch (op & 0x0f) {
	case 0:
		ss_err(v->s, 1064, "42000", "You have an error in your SQL syntax");
		break;
	case 1:
		ss_err(v->s, 1290, "HY000", "--read-only");
		break;
	case 2: /* OK with any status and state */
		ok.status = (uint16_t)(in_byte(&x->be, 2) | in_byte(&x->be, 0) << 8);
		ok.warnings = in_byte(&x->be, 0);
		n = in_bytes(&x->be, &b, in_byte(&x->be, 0) % 64);
		if (n) {
			memcpy(state, b, n);
			ok.state = state;
			ok.state_len = n;
		}
		ss_ok(v->s, &ok);
		break;
	case 3: /* a packet of the input's bytes */
		n = in_bytes(&x->be, &b, in_byte(&x->be, 0));
		ss_packet(v->s, b, n);
		break;
	case 4: /* bytes of the input, no framing */
		n = in_bytes(&x->be, &b, in_byte(&x->be, 0) % 32);
		ss_raw(v->s, b, n);
		break;
	case 5:
		ss_close(v->s);
		break;
	case 6:
		v->hung = true;
		break; /* no answer */
	case 7:        /* the right answer, written a few bytes at a time */
		ss_trickle(v->s, 1 + in_byte(&x->be, 0) % 7);
		answer_right(x, v, r->p, r->n);
		break;
	case 8:
		ss_eof(v->s, 0, SST_AUTOCOMMIT);
		break;
	case 9: /* a result set with more to follow, then what the input says */
		ss_result(v->s, 1, NULL, 1, one, SST_AUTOCOMMIT | SST_MORE_RESULTS);
		if (in_byte(&x->be, 0) & 1)
			ss_err(v->s, 1146, "42S02", "Table doesn't exist");
		else
			ss_ok(v->s, NULL);
		break;
	case 10: /* a result set whose column count is off */
		ss_result(v->s, in_byte(&x->be, 1) % 4, NULL, 1, NULL, 0);
		break;
	case 11: /* a prepare answer, whatever the command */
		ss_prepare_ok(v->s, in_byte(&x->be, 1), in_byte(&x->be, 0) % 4,
		              in_byte(&x->be, 0) % 4, 0);
		break;
	case 12: /* the right answer twice */
		answer_right(x, v, r->p, r->n);
		answer_right(x, v, r->p, r->n);
		break;
	case 13: /* an ERR in the middle of a result */
		ss_packet(v->s, "\x02", 1);
		ss_err(v->s, 1317, "70100", "Query execution was interrupted");
		break;
	default:
		answer_right(x, v, r->p, r->n);
		break;
	}
}

/* Moves the server's bytes and answers what came; true when anything moved. */
static bool serve(struct ctx *x, struct srv *v)
{
	struct ss_req r;
	bool moved = false;
	int k;

	if (!v->s || ss_phase(v->s) == SS_CLOSED)
		return false;
	k = ss_io(v->s);
	if (k < 0) {
		ss_close(v->s);
		return true;
	}
	moved = k > 0;
	while (!v->hung && ss_phase(v->s) != SS_CLOSED && (k = ss_next(v->s, &r)) == 1) {
		moved = true;
		if (trace) {
			char who[32];
			snprintf(who, sizeof(who), "backend %d (id %u) <-", (int)(v - x->srv),
			         v->be_id);
			show(who, r.p, r.n);
		}
		if (r.phase == SS_LOGIN && (!r.login_ok || r.login.ssl_request))
			die("the proxy sent a backend a malformed login");
		if (r.phase == SS_LOGIN || r.phase == SS_AUTH)
			answer_login(x, v, &r);
		else
			answer_cmd(x, v, &r);
	}
	if (k < 0)
		die("the proxy sent a backend bytes that are not packets");
	if (ss_phase(v->s) != SS_CLOSED && ss_pending(v->s) && ss_io(v->s) > 0)
		moved = true;
	return moved;
}

/* ---- the client ---- */

static void client_send(struct ctx *x, const void *p, size_t n)
{
	const uint8_t *q = p;

	while (x->cfd >= 0 && n > 0) {
		ssize_t w = send(x->cfd, q, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return; /* full (the proxy stopped reading) or gone: the rest is lost */
		q += w;
		n -= (size_t)w;
	}
}

static void client_packet(struct ctx *x, uint8_t seq, const void *p, size_t n)
{
	uint8_t hdr[PKT_HDR];

	if (n >= PKT_MAX_FRAG)
		return;
	show("client ->", p, n);
	pkt_put_hdr(hdr, (uint32_t)n, seq);
	client_send(x, hdr, sizeof(hdr));
	client_send(x, p, n);
}

/* Reads what the proxy wrote: it must be packets. True when bytes came. */
static bool client_drain(struct ctx *x)
{
	bool moved = false;

	while (x->cfd >= 0) {
		size_t total, payload;
		uint8_t seq;
		ssize_t r =
		    recv(x->cfd, x->cin + x->cin_len, sizeof(x->cin) - x->cin_len, MSG_DONTWAIT);
		int k;

		if (r <= 0)
			break;
		moved = true;
		x->cin_len += (size_t)r;
		while ((k = pkt_whole(x->cin, x->cin_len, sizeof(x->cin), &total, &payload,
		                      &seq)) == 1) {
			show("client <-", x->cin + PKT_HDR, payload);
			if (!x->saw_handshake) {
				pkt_join(x->cin, x->cin, payload);
				if (payload && x->cin[0] != 0xff) {
					if (hs_parse(x->cin, payload, &x->hs) < 0)
						die("the proxy's handshake does not parse");
					x->saw_handshake = true;
				}
			}
			memmove(x->cin, x->cin + total, x->cin_len - total);
			x->cin_len -= total;
		}
		if (k < 0) {
			/* a packet too long for the buffer is fine; bad ids are not */
			struct pkt_frag f;
			if (pkt_frag_hdr(x->cin, x->cin_len, &f) &&
			    f.len + PKT_HDR < sizeof(x->cin))
				die("the proxy sent the client bytes that are not packets");
			x->cin_len = 0;
		}
	}
	return moved;
}

/* Runs the engine, the backends and the client until nothing moves. */
static void pump(struct ctx *x)
{
	int idle = 0;

	for (int round = 0; round < MAX_ROUND && idle < 3; round++) {
		bool moved = false;

		proxy_engine_test_run(x->e, 0);
		for (int i = 0; i < x->nsrv; i++)
			moved |= serve(x, &x->srv[i]);
		moved |= client_drain(x);
		idle = moved ? 0 : idle + 1;
	}
}

static void login(struct ctx *x)
{
	struct hs_response r = {0};
	uint8_t pkt[512], stage1[SHA1_LEN];
	uint8_t mode = in_byte(&x->in, 0), capsel = in_byte(&x->in, 0);
	const char *pw = "app";
	const uint8_t *b;
	int n;

	pump(x);
	if (!x->saw_handshake)
		return;
	r.caps = CAP_PROTOCOL_41 | CAP_SECURE_CONNECTION | CAP_PLUGIN_AUTH | CAP_LONG_PASSWORD |
	         CAP_TRANSACTIONS | CAP_MULTI_STATEMENTS | CAP_MULTI_RESULTS | CAP_PS_MULTI_RESULTS;
	if (capsel & 1)
		r.caps |= CAP_SESSION_TRACK;
	if (capsel & 2)
		r.caps |= CAP_DEPRECATE_EOF;
	if (capsel & 4) {
		r.caps |= CAP_CONNECT_WITH_DB;
		r.has_db = true;
		snprintf(r.db, sizeof(r.db), "%s", capsel & 8 ? "test" : "db\xff\n");
	}
	if (capsel & 16)
		r.caps &= ~CAP_LONG_PASSWORD; /* MariaDB's form: extended caps */
	if (capsel & 32)
		r.ext_caps = 1u << 3;
	r.max_packet = 1u << 24;
	r.charset = capsel & 64 ? 8 : 45;
	snprintf(r.user, sizeof(r.user), "app");
	snprintf(r.plugin, sizeof(r.plugin), "%s", NATIVE_PLUGIN);
	switch (mode % 8) {
	case 1:
		pw = "wrong";
		break;
	case 2:
		snprintf(r.user, sizeof(r.user), "nobody");
		break;
	case 3:
		snprintf(r.user, sizeof(r.user), "hashed");
		pw = "secret";
		break;
	case 4:
		snprintf(r.plugin, sizeof(r.plugin), "caching_sha2_password");
		break;
	case 5: /* the input's bytes as the login */
		n = (int)in_bytes(&x->in, &b, in_byte(&x->in, 0));
		client_packet(x, 1, b, (size_t)n);
		pump(x);
		return;
	case 6: /* an SSL request */
		r.caps |= CAP_SSL;
		memset(pkt, 0, 32);
		pkt[0] = (uint8_t)r.caps;
		pkt[1] = (uint8_t)(r.caps >> 8);
		pkt[2] = (uint8_t)(r.caps >> 16);
		pkt[3] = (uint8_t)(r.caps >> 24);
		client_packet(x, 1, pkt, 32);
		pump(x);
		return;
	default:
		break;
	}
	sha1(pw, strlen(pw), NULL, 0, stage1);
	if (mode % 8 != 4) {
		native_reply(x->hs.scramble, stage1, r.auth);
		r.auth_len = SHA1_LEN;
	} else {
		memset(r.auth, 'x', 32);
		r.auth_len = 32;
	}
	n = hsr_build(pkt, sizeof(pkt), &r);
	if (n < 0)
		die("hsr_build");
	client_packet(x, 1, pkt, (size_t)n);
	pump(x);
	if (mode % 8 == 4) {
		/* the switch to mysql_native_password: its scramble is the handshake's */
		native_reply(x->hs.scramble, stage1, pkt);
		client_packet(x, 3, pkt, SHA1_LEN);
		pump(x);
	}
}

/* ---- client actions ---- */

static const char *const sqls[] = {
    "SELECT 1",
    "SELECT * FROM t WHERE id = 1",
    "INSERT INTO t VALUES (1)",
    "UPDATE t SET a = 1",
    "DELETE FROM t",
    "BEGIN",
    "START TRANSACTION READ ONLY",
    "START TRANSACTION",
    "COMMIT",
    "ROLLBACK",
    "SET @a = 1",
    "SET NAMES utf8mb4",
    "SET autocommit = 0",
    "SET autocommit = 1",
    "SET SESSION TRANSACTION READ ONLY",
    "SET time_zone = '+00:00'",
    "SET GLOBAL max_connections = 100",
    "USE test",
    "CREATE TEMPORARY TABLE tt (a INT)",
    "SELECT GET_LOCK('l', 1)",
    "SELECT RELEASE_LOCK('l')",
    "LOCK TABLES t WRITE",
    "UNLOCK TABLES",
    "SELECT FOUND_ROWS()",
    "SELECT SQL_CALC_FOUND_ROWS * FROM t LIMIT 1",
    "SHOW WARNINGS",
    "SELECT @@warning_count",
    "SELECT LAST_INSERT_ID()",
    "SELECT 1; SELECT 2",
    "INSERT INTO t VALUES (1); SELECT 1",
    "SELECT * FROM t FOR UPDATE",
    "CALL p()",
    "CREATE TABLE t2 (a INT)",
    "FLUSH STATUS",
    "SHOW STATUS",
    "XA START 'x'",
    "SELECT @v := 1",
    "PREPARE s FROM 'SELECT 1'",
    "EXECUTE s",
    "DEALLOCATE PREPARE s",
    "SELECT NOW()",
    "WITH c AS (SELECT 1) SELECT * FROM c",
    "SELECT * FROM t WHERE a = ?",
    "INSERT INTO t VALUES (?, ?)",
    "SET @b = ?",
    "SHOW TABLES",
    "KILL 1",
    "",
};
#define NSQL (sizeof(sqls) / sizeof(sqls[0]))

static void cmd_text(struct ctx *x, uint8_t cmd, const char *s)
{
	uint8_t pkt[256];
	size_t n = strlen(s);

	if (n > sizeof(pkt) - 1)
		n = sizeof(pkt) - 1;
	pkt[0] = cmd;
	memcpy(pkt + 1, s, n);
	client_packet(x, 0, pkt, n + 1);
}

static void cmd_bytes(struct ctx *x, uint8_t cmd, size_t max)
{
	uint8_t pkt[300];
	const uint8_t *b;
	size_t n = in_bytes(&x->in, &b, in_byte(&x->in, 0) % (max < 256 ? max : 256));

	pkt[0] = cmd;
	memcpy(pkt + 1, b, n);
	client_packet(x, 0, pkt, n + 1);
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static void cmd_execute(struct ctx *x)
{
	uint8_t pkt[256], flags = in_byte(&x->in, 0), np = in_byte(&x->in, 0) % 4;
	size_t n = 0;

	pkt[n++] = COM_STMT_EXECUTE;
	put32(pkt + n, 1 + in_byte(&x->in, 0) % 4);
	n += 4;
	pkt[n++] = flags;
	put32(pkt + n, 1);
	n += 4;
	if (np) {
		pkt[n++] = in_byte(&x->in, 0) & ((1u << np) - 1); /* NULL bitmap */
		pkt[n++] = in_byte(&x->in, 1) & 1;                /* new params bound */
		if (pkt[n - 1]) {
			for (unsigned i = 0; i < np; i++) {
				pkt[n++] = 0x03; /* LONG */
				pkt[n++] = 0;
			}
		}
		for (unsigned i = 0; i < np; i++) {
			put32(pkt + n, i);
			n += 4;
		}
	}
	if (flags & 0x80) { /* the rest from the input, whatever it means */
		const uint8_t *b;
		size_t k = in_bytes(&x->in, &b, in_byte(&x->in, 0) % 64);
		memcpy(pkt + 10, b, k);
		n = 10 + k;
	}
	client_packet(x, 0, pkt, n);
}

static void cmd_stmt_other(struct ctx *x)
{
	uint8_t pkt[128], op = in_byte(&x->in, 0);
	size_t n = 0;
	uint32_t id = 1 + in_byte(&x->in, 0) % 4;

	switch (op % 4) {
	case 0:
		pkt[n++] = COM_STMT_FETCH;
		put32(pkt + n, id);
		put32(pkt + n + 4, 1 + in_byte(&x->in, 0) % 3);
		n += 8;
		break;
	case 1:
		pkt[n++] = COM_STMT_CLOSE;
		put32(pkt + n, id);
		n += 4;
		break;
	case 2:
		pkt[n++] = COM_STMT_RESET;
		put32(pkt + n, id);
		n += 4;
		break;
	case 3: {
		const uint8_t *b;
		size_t k;
		pkt[n++] = COM_STMT_SEND_LONG_DATA;
		put32(pkt + n, id);
		n += 4;
		pkt[n++] = in_byte(&x->in, 0) % 3;
		pkt[n++] = 0;
		k = in_bytes(&x->in, &b, in_byte(&x->in, 0) % 64);
		memcpy(pkt + n, b, k);
		n += k;
		break;
	}
	}
	client_packet(x, 0, pkt, n);
}

static void cmd_simple(struct ctx *x)
{
	uint8_t op = in_byte(&x->in, 0), pkt[8];

	switch (op % 12) {
	case 0:
		pkt[0] = COM_PING;
		client_packet(x, 0, pkt, 1);
		break;
	case 1:
		cmd_text(x, COM_INIT_DB, op & 0x10 ? "test" : "other");
		break;
	case 2:
		pkt[0] = COM_RESET_CONNECTION;
		client_packet(x, 0, pkt, 1);
		break;
	case 3:
		cmd_text(x, COM_FIELD_LIST, "t");
		break;
	case 4:
		pkt[0] = COM_STATISTICS;
		client_packet(x, 0, pkt, 1);
		break;
	case 5:
		pkt[0] = COM_SET_OPTION;
		pkt[1] = op & 0x10 ? 1 : 0;
		pkt[2] = 0;
		client_packet(x, 0, pkt, 3);
		break;
	case 6:
		cmd_bytes(x, COM_CHANGE_USER, 64);
		break;
	case 7:
		pkt[0] = (uint8_t)(0x20 + op % 8);
		client_packet(x, 0, pkt, 1);
		break;
	case 8:
		pkt[0] = COM_QUIT;
		client_packet(x, 0, pkt, 1);
		break;
	case 9:
		client_packet(x, 0, pkt, 0);
		break; /* an empty packet */
	case 10:
		pkt[0] = COM_SLEEP;
		client_packet(x, 0, pkt, 1);
		break;
	case 11:
		cmd_bytes(x, COM_INIT_DB, 80);
		break;
	}
}

static void publish_topo(int k)
{
	const struct topology *tm = topos_tmpl[k];
	struct topology *t = topo_alloc(tm->nbackends, 0);

	if (!t)
		die("topo_alloc");
	t->writer = tm->writer;
	memcpy(t->backends, tm->backends, tm->nbackends * sizeof(*t->backends));
	topo_publish(t);
}

static void backend_action(struct ctx *x)
{
	uint8_t op = in_byte(&x->in, 0);
	struct srv *v;
	const uint8_t *b;
	size_t n;

	if (!x->nsrv)
		return;
	v = &x->srv[in_byte(&x->in, 0) % x->nsrv];
	if (!v->s || ss_phase(v->s) == SS_CLOSED)
		return;
	switch (op % 4) {
	case 0:
		ss_close(v->s);
		break;
	case 1: /* bytes nobody asked for */
		n = in_bytes(&x->in, &b, in_byte(&x->in, 0) % 32);
		ss_packet(v->s, b, n);
		break;
	case 2:
		ss_err(v->s, 1927, "70100", "Connection was killed");
		break;
	case 3:
		v->hung = false;
		break; /* a hung server answers again */
	}
}

static void act(struct ctx *x)
{
	uint8_t op = in_byte(&x->in, 0), k;
	const uint8_t *b;
	size_t n;

	switch (op % 16) {
	case 0:
	case 1:
	case 2:
	case 3:
		cmd_text(x, COM_QUERY, sqls[in_byte(&x->in, 0) % NSQL]);
		break;
	case 4:
		cmd_bytes(x, COM_QUERY, 256);
		break;
	case 5:
		cmd_text(x, COM_STMT_PREPARE, sqls[in_byte(&x->in, 0) % NSQL]);
		break;
	case 6:
		cmd_execute(x);
		break;
	case 7:
		cmd_stmt_other(x);
		break;
	case 8:
		cmd_simple(x);
		break;
	case 9: { /* a packet of the input's bytes with its sequence id */
		uint8_t seq = in_byte(&x->in, 0);
		n = in_bytes(&x->in, &b, in_byte(&x->in, 0));
		client_packet(x, seq, b, n);
		break;
	}
	case 10: /* bytes, no framing */
		n = in_bytes(&x->in, &b, in_byte(&x->in, 0) % 32);
		client_send(x, b, n);
		break;
	case 11: { /* pipelined: several statements before any answer is read */
		k = 2 + in_byte(&x->in, 0) % 4;
		for (unsigned i = 0; i < k; i++)
			cmd_text(x, COM_QUERY, sqls[in_byte(&x->in, 0) % NSQL]);
		break;
	}
	case 12: { /* time passes */
		static const uint64_t steps[] = {50,    300,   1100,    5000,
		                                 12000, 61000, 3600000, 29000000};
		proxy_engine_test_advance(steps[in_byte(&x->in, 0) % 8]);
		proxy_engine_test_sweep(x->e);
		break;
	}
	case 13:
		backend_action(x);
		break;
	case 14:
		publish_topo(in_byte(&x->in, 0) % NTOPO);
		break;
	case 15:
		if (in_byte(&x->in, 0) & 1) {
			close(x->cfd);
			x->cfd = -1;
		} else if (shutdown(x->cfd, SHUT_WR) < 0) {
			die("shutdown");
		}
		break;
	}
}

/* ---- set-up ---- */

static struct config *load_cfg(const char *extra)
{
	char path[] = "/tmp/fuzz_engine_XXXXXX", err[512], hex[41];
	uint8_t st2[SHA1_LEN];
	struct config *c;
	FILE *f;
	int fd = mkstemp(path);

	if (fd < 0 || !(f = fdopen(fd, "w")))
		die("mkstemp");
	native_stage2("secret", 6, st2);
	for (int i = 0; i < SHA1_LEN; i++)
		snprintf(hex + 2 * i, 3, "%02X", st2[i]);
	fprintf(f,
	        "[probe]\nuser = mon\npassword = mon\n"
	        "[proxy]\nworkers = 1\n%s\n"
	        "[backend:w1]\nhost = 127.0.0.1\nport = 3306\n"
	        "[backend:r1]\nhost = 127.0.0.1\nport = 3307\n"
	        "[backend:r2]\nhost = 127.0.0.1\nport = 3308\n"
	        "[user:app]\npassword = app\n"
	        "[user:hashed]\npassword_hash = *%s\n",
	        extra, hex);
	fclose(f);
	c = config_load(path, err, sizeof(err));
	unlink(path);
	if (!c) {
		fprintf(stderr, "fuzz_engine: config: %s\n", err);
		abort();
	}
	return c;
}

static void make_topos(void)
{
	/* 0: w1 writes, r1 and r2 read; 1: r1 writes (failover), w1 reads;
	 * 2: w1 writes, both readers down; 3: no writer, r2 drained */
	static const int writer[NTOPO] = {0, 1, 0, -1};

	for (int k = 0; k < NTOPO; k++) {
		struct topology *t = calloc(1, sizeof(*t));
		t->backends = calloc(3, sizeof(*t->backends));
		if (!t || !t->backends)
			die("calloc");
		t->nbackends = 3;
		t->writer = writer[k];
		for (int i = 0; i < 3; i++) {
			struct topo_backend *be = &t->backends[i];
			struct sockaddr_in *sin = (struct sockaddr_in *)&be->addr;

			be->id = (uint32_t)i;
			snprintf(be->name, sizeof(be->name), "%s",
			         i == 0   ? "w1"
			         : i == 1 ? "r1"
			                  : "r2");
			snprintf(be->host, sizeof(be->host), "127.0.0.1");
			be->port = (uint16_t)(3306 + i);
			sin->sin_family = AF_INET;
			sin->sin_port = htons(be->port);
			sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
			be->addrlen = sizeof(*sin);
			be->role = i == writer[k] ? ROLE_WRITER : ROLE_READER;
			be->health = HEALTH_UP;
			be->weight = 1;
			be->priority = 100;
			be->read_only = i != writer[k];
			be->replicating = i != writer[k];
			be->has_lag = be->replicating;
		}
		if (k == 2)
			t->backends[1].health = t->backends[2].health = HEALTH_DOWN;
		if (k == 3)
			t->backends[2].admin = ADMIN_DRAINED;
		topos_tmpl[k] = t;
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *lvl = getenv("FUZZ_ENGINE_LOG");

	(void)argc;
	(void)argv;
	trace = getenv("FUZZ_ENGINE_TRACE") != NULL;
	log_set_level(lvl && !strcmp(lvl, "debug")  ? LOG_LVL_DEBUG
	              : lvl && !strcmp(lvl, "info") ? LOG_LVL_INFO
	                                            : LOG_LVL_ERROR);
	cfgs[0] = load_cfg("pool_min_idle = 0\nread_your_writes = gtid");
	cfgs[1] = load_cfg("pool_min_idle = 1\npool_max_per_backend = 1\n"
	                   "read_your_writes = window\n[steer]\nreader_policy = least_conn");
	cfgs[2] = load_cfg("pool_min_idle = 0\nread_your_writes = off\nmax_session_history = 2\n"
	                   "max_session_bytes = 1024\nmax_packet_size = 1024\n"
	                   "client_packet_timeout_ms = 100\nclient_idle_timeout_s = 1\n"
	                   "max_client_connections = 2\nhandshake_timeout_ms = 100");
	cfgs[3] = load_cfg("pool_min_idle = 2\npool_max_per_backend = 2\npool_idle_timeout_ms = 1\n"
	                   "read_your_writes = gtid\nread_your_writes_ms = 10");
	make_topos();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ctx x;
	char err[256];
	int sv[2], clients = 0, bconns = 0, workers = 0;

	size_t split = size >= 2 ? (size_t)(data[0] | data[1] << 8) : 0;

	memset(&x, 0, sizeof(x));
	data += size >= 2 ? 2 : size;
	size -= size >= 2 ? 2 : size;
	if (split > size)
		split = size;
	x.in.p = data;
	x.in.n = split;
	x.be.p = data + split;
	x.be.n = size - split;
	x.cfd = -1;
	publish_topo(0);
	x.e = proxy_engine_test_new(cfgs[in_byte(&x.in, 0) % NCFG], backend_connect, &x, err,
	                            sizeof(err));
	if (!x.e)
		die(err);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
		die("socketpair");
	x.cfd = sv[0];
	if (proxy_engine_test_client(x.e, sv[1]) == 0) {
		login(&x);
		for (int steps = 0; in_more(&x.in) && x.cfd >= 0 && steps < 64; steps++) {
			act(&x);
			pump(&x);
		}
	}
	if (x.cfd >= 0)
		close(x.cfd);
	x.cfd = -1;
	pump(&x);
	proxy_engine_stats(x.e, &clients, &bconns, &workers);
	if (clients != 0)
		die("a session is still counted after its client closed");
	proxy_engine_test_free(x.e);
	for (int i = 0; i < x.nsrv; i++)
		ss_free(x.srv[i].s);
	return 0;
}
