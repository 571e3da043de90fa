/*
 * test_engine.c - the 6450 proxy engine in one process (proxy/engine_test.h):
 * a client on a socketpair, scripted backends (tests/lib/scripted_server.h)
 * on others, the event loop run by the test. Each case is a session that a
 * fuzz_engine input found breaking the engine, spelled out; built with
 * ASan/UBSan, so undefined behaviour fails the case.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
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
#include "proxy/engine_int.h"
#include "proxy/engine_test.h"
#include "proxy/proto.h"
#include "proxy/proxy.h"

#define MAX_SRV 8

struct world {
	struct proxy_engine *e;
	struct config *cfg;
	struct ss_server *srv[MAX_SRV];
	int nsrv;
	int cfd;
	uint8_t cin[1 << 17];
	size_t cin_len;
	/* the client's packets, first byte of each, and the last one whole */
	uint8_t first[256];
	size_t npkts;
	uint8_t last[1024];
	size_t last_len;
	uint8_t scramble[SCRAMBLE_LEN];
	int queries; /* COM_QUERYs the backends got */
	/* the backends: how they present themselves (NULL: MySQL 8 with
	 * mysql_native_password), and how a login with srv_opts->scramble
	 * goes on (enum account) */
	const struct ss_opts *srv_opts;
	enum account {
		ACCT_NATIVE,  /* a caching_sha2_password reply is switched to native */
		ACCT_SHA2,    /* caching_sha2_password, the server's cache has it */
		ACCT_ED25519, /* switched to a plugin the proxy does not answer */
	} account;
	int logins;           /* logins the backends took */
	bool login_native_ok; /* each native reply was right */
	bool login_sha2_ok;   /* each caching_sha2_password reply was right */
	int sha2_logins;      /* logins answered with caching_sha2_password */
};

static int connect_cb(void *arg, const struct topo_backend *be)
{
	struct world *w = arg;
	int sv[2];

	(void)be;
	if (w->nsrv == MAX_SRV) {
		errno = ECONNREFUSED;
		return -1;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	w->srv[w->nsrv] = ss_new(sv[1], w->srv_opts);
	ck_assert_ptr_nonnull(w->srv[w->nsrv]);
	w->nsrv++;
	return sv[0];
}

/* What a server answers: a login is OK, a SELECT one row, the rest OK. */
static void serve(struct world *w, struct ss_server *s)
{
	static const char *const one[] = {"1"};
	struct ss_req r;

	if (ss_phase(s) == SS_CLOSED)
		return;
	if (ss_io(s) < 0) {
		ss_close(s);
		return;
	}
	while (ss_next(s, &r) == 1) {
		if ((r.phase == SS_LOGIN || r.phase == SS_AUTH) && w->srv_opts &&
		    w->srv_opts->scramble) {
			const uint8_t *scr = w->srv_opts->scramble;
			uint8_t stage1[SHA1_LEN], want[SHA1_LEN], want2[SHA256_LEN];
			bool sha2 = r.phase == SS_LOGIN && !strcmp(r.login.plugin, SHA2_PLUGIN);
			const uint8_t *auth = r.phase == SS_LOGIN ? r.login.auth : r.p;
			size_t n = r.phase == SS_LOGIN ? r.login.auth_len : r.n;

			ck_assert(r.phase == SS_AUTH || r.login_ok);
			sha1("app", 3, NULL, 0, stage1);
			native_reply(scr, stage1, want);
			sha2_reply("app", 3, scr, want2);
			if (r.phase == SS_LOGIN)
				w->logins++;
			if (sha2) {
				w->sha2_logins++;
				w->login_sha2_ok &=
				    n == SHA256_LEN && !memcmp(auth, want2, SHA256_LEN);
			} else {
				w->login_native_ok &=
				    n == SHA1_LEN && !memcmp(auth, want, SHA1_LEN);
			}
			if (w->account == ACCT_ED25519) {
				ss_auth_switch(s, "client_ed25519", scr, SCRAMBLE_LEN);
			} else if (sha2 && w->account == ACCT_NATIVE) {
				uint8_t data[SCRAMBLE_LEN + 1] = {0};

				memcpy(data, scr, SCRAMBLE_LEN);
				ss_auth_switch(s, NATIVE_PLUGIN, data, sizeof(data));
			} else {
				if (sha2)
					ss_packet(s, "\x01\x03", 2); /* fast authentication */
				ss_ok(s, NULL);
			}
		} else if (r.phase != SS_COMMAND) {
			ck_assert(r.login_ok);
			ss_ok(s, NULL);
		} else if (r.n > 7 && r.p[0] == COM_QUERY &&
		           !strncasecmp((const char *)r.p + 1, "SELECT", 6)) {
			w->queries++;
			ss_result(s, 1, NULL, 1, one, 0);
		} else {
			w->queries += r.p[0] == COM_QUERY;
			ss_ok(s, NULL);
		}
	}
	ss_io(s);
}

static void client_read(struct world *w)
{
	for (;;) {
		size_t total, payload;
		uint8_t seq;
		ssize_t n =
		    recv(w->cfd, w->cin + w->cin_len, sizeof(w->cin) - w->cin_len, MSG_DONTWAIT);

		if (n <= 0)
			return;
		w->cin_len += (size_t)n;
		while (pkt_whole(w->cin, w->cin_len, sizeof(w->cin), &total, &payload, &seq) == 1) {
			pkt_join(w->cin, w->cin, payload);
			if (w->npkts < sizeof(w->first))
				w->first[w->npkts] = payload ? w->cin[0] : 0;
			w->npkts++;
			w->last_len = payload < sizeof(w->last) ? payload : sizeof(w->last);
			memcpy(w->last, w->cin, w->last_len);
			memmove(w->cin, w->cin + total, w->cin_len - total);
			w->cin_len -= total;
		}
	}
}

static void pump(struct world *w)
{
	for (int round = 0; round < 200; round++) {
		proxy_engine_test_run(w->e, 0);
		for (int i = 0; i < w->nsrv; i++)
			serve(w, w->srv[i]);
		client_read(w);
	}
}

static void client_packet(struct world *w, uint8_t seq, const void *p, size_t n)
{
	uint8_t *pkt = malloc(n + PKT_HDR);

	ck_assert_ptr_nonnull(pkt);
	pkt_put_hdr(pkt, (uint32_t)n, seq);
	memcpy(pkt + PKT_HDR, p, n);
	ck_assert_int_eq(send(w->cfd, pkt, n + PKT_HDR, MSG_NOSIGNAL), (ssize_t)(n + PKT_HDR));
	free(pkt);
}

static struct config *load_cfg(void)
{
	char path[] = "/tmp/test_engine_XXXXXX", err[512];
	struct config *c;
	FILE *f;
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "[probe]\nuser = mon\npassword = mon\n"
	           "[proxy]\nworkers = 1\npool_min_idle = 0\n"
	           "[backend:w1]\nhost = 127.0.0.1\nport = 3306\n"
	           "[backend:r1]\nhost = 127.0.0.1\nport = 3307\n"
	           "[user:app]\npassword = app\n");
	fclose(f);
	c = config_load(path, err, sizeof(err));
	unlink(path);
	ck_assert_msg(c != NULL, "%s", err);
	return c;
}

static void publish(void)
{
	struct topology *t = topo_alloc(2, 0);

	ck_assert_ptr_nonnull(t);
	t->writer = 0;
	for (int i = 0; i < 2; i++) {
		struct topo_backend *be = &t->backends[i];
		struct sockaddr_in *sin = (struct sockaddr_in *)&be->addr;

		be->id = (uint32_t)i;
		snprintf(be->name, sizeof(be->name), "%s", i ? "r1" : "w1");
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)(3306 + i));
		sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		be->addrlen = sizeof(*sin);
		be->role = i ? ROLE_READER : ROLE_WRITER;
		be->health = HEALTH_UP;
		be->weight = 1;
	}
	topo_publish(t);
}

/* A session of user app logged in. */
static struct world *world_new(void)
{
	struct world *w = calloc(1, sizeof(*w));
	struct hs_response r = {0};
	struct handshake hs;
	uint8_t pkt[512], stage1[SHA1_LEN];
	char err[256];
	int sv[2], n;

	ck_assert_ptr_nonnull(w);
	log_set_level(LOG_LVL_ERROR);
	publish();
	w->cfg = load_cfg();
	w->e = proxy_engine_test_new(w->cfg, connect_cb, w, err, sizeof(err));
	ck_assert_msg(w->e != NULL, "%s", err);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
	w->cfd = sv[0];
	ck_assert_int_eq(proxy_engine_test_client(w->e, sv[1]), 0);
	pump(w);
	ck_assert_uint_eq(w->npkts, 1);
	ck_assert_int_eq(hs_parse(w->last, w->last_len, &hs), 0);
	r.caps = CAP_PROTOCOL_41 | CAP_SECURE_CONNECTION | CAP_PLUGIN_AUTH | CAP_LONG_PASSWORD |
	         CAP_TRANSACTIONS | CAP_DEPRECATE_EOF | CAP_SESSION_TRACK;
	r.max_packet = 1u << 24;
	r.charset = 45;
	snprintf(r.user, sizeof(r.user), "app");
	snprintf(r.plugin, sizeof(r.plugin), "%s", NATIVE_PLUGIN);
	sha1("app", 3, NULL, 0, stage1);
	native_reply(hs.scramble, stage1, r.auth);
	r.auth_len = SHA1_LEN;
	n = hsr_build(pkt, sizeof(pkt), &r);
	ck_assert_int_gt(n, 0);
	client_packet(w, 1, pkt, (size_t)n);
	pump(w);
	ck_assert_uint_eq(w->npkts, 2);
	ck_assert_uint_eq(w->first[1], 0x00); /* logged in */
	return w;
}

static void world_free(struct world *w)
{
	int clients = -1, bconns = -1, workers = -1;

	close(w->cfd);
	pump(w);
	proxy_engine_stats(w->e, &clients, &bconns, &workers);
	ck_assert_int_eq(clients, 0);
	proxy_engine_test_free(w->e);
	for (int i = 0; i < w->nsrv; i++)
		ss_free(w->srv[i]);
	config_free(w->cfg);
	topo_reset();
	free(w);
}

static void query(struct world *w, const char *sql, size_t pad)
{
	size_t n = strlen(sql);
	uint8_t *p = malloc(1 + n + pad + 1);

	ck_assert_ptr_nonnull(p);
	p[0] = COM_QUERY;
	memcpy(p + 1, sql, n);
	memset(p + 1 + n, 'a', pad);
	if (pad)
		p[1 + n + pad++] = '\'';
	client_packet(w, 0, p, 1 + n + pad);
	free(p);
}

/* The seam itself: a read reaches a backend and its row the client. */
START_TEST(test_select_roundtrip)
{
	struct world *w = world_new();
	size_t before = w->npkts;

	query(w, "SELECT 1", 0);
	pump(w);
	ck_assert_int_eq(w->queries, 1);
	/* column count, column, row, end */
	ck_assert_uint_eq(w->npkts - before, 4);
	ck_assert_uint_eq(w->first[before], 1);
	ck_assert_uint_eq(w->first[w->npkts - 1], 0xfe);
	world_free(w);
}
END_TEST

/* A command over 16 KB grows the client's input buffer past what an idle
 * client keeps: it is freed once the command is taken, and the answer's end
 * then looked for the next command in a freed (NULL) buffer, computing
 * NULL + 0 (undefined: UBSan stops here without the fix). */
START_TEST(test_large_command_then_answer)
{
	struct world *w = world_new();
	size_t before = w->npkts;

	query(w, "SELECT '", 20000);
	pump(w);
	ck_assert_int_eq(w->queries, 1);
	ck_assert_uint_eq(w->npkts - before, 4);
	query(w, "SELECT 1", 0);
	pump(w);
	ck_assert_int_eq(w->queries, 2);
	world_free(w);
}
END_TEST

/* A MySQL 8.4 server whose handshake names caching_sha2_password, for
 * backend logins. */
static const uint8_t mysql84_scramble[SCRAMBLE_LEN] = "0123456789ABCDEFGHIJ";
static const struct ss_opts mysql84 = {
    .version = "8.4.3",
    .plugin = SHA2_PLUGIN,
    .scramble = mysql84_scramble,
};

/* A MySQL 8.4 backend whose handshake names caching_sha2_password and whose
 * account uses mysql_native_password: the proxy answers with
 * caching_sha2_password (the user's password is in the config), the server
 * switches it to mysql_native_password, the proxy answers with the native
 * scramble of the server's nonce; reads and writes run. */
START_TEST(test_mysql84_native_account)
{
	struct world *w = world_new();
	size_t before;

	w->srv_opts = &mysql84;
	w->account = ACCT_NATIVE;
	w->login_native_ok = w->login_sha2_ok = true;
	before = w->npkts;
	query(w, "SELECT 1", 0);
	pump(w);
	ck_assert_uint_eq(w->npkts - before, 4);
	ck_assert_uint_eq(w->first[before], 1);
	before = w->npkts;
	query(w, "INSERT INTO t VALUES (1)", 0);
	pump(w);
	ck_assert_uint_eq(w->npkts - before, 1);
	ck_assert_uint_eq(w->first[before], 0x00);
	ck_assert_int_ge(w->logins, 2); /* a reader and the writer */
	ck_assert_int_eq(w->sha2_logins, w->logins);
	ck_assert(w->login_native_ok);
	ck_assert(w->login_sha2_ok);
	world_free(w);
}
END_TEST

/* A MySQL 8.4 account with caching_sha2_password, the server's cache holding
 * it: the proxy's reply is SHA256(pw) XOR SHA256(SHA256(SHA256(pw)) ||
 * nonce), the server says fast authentication (0x01 0x03) then OK. */
START_TEST(test_mysql84_sha2_fast)
{
	struct world *w = world_new();
	size_t before;

	w->srv_opts = &mysql84;
	w->account = ACCT_SHA2;
	w->login_native_ok = w->login_sha2_ok = true;
	before = w->npkts;
	query(w, "SELECT 1", 0);
	pump(w);
	ck_assert_uint_eq(w->npkts - before, 4);
	before = w->npkts;
	query(w, "INSERT INTO t VALUES (1)", 0);
	pump(w);
	ck_assert_uint_eq(w->first[before], 0x00);
	ck_assert_int_ge(w->logins, 2);
	ck_assert_int_eq(w->sha2_logins, w->logins);
	ck_assert(w->login_sha2_ok);
	world_free(w);
}
END_TEST

/* An account whose plugin the proxy cannot answer (client_ed25519): the
 * statement gets ERR 1251 naming the plugin, at once: a read after trying
 * the other backend, a write without waiting for another writer as for a
 * lost one. The session goes on. */
START_TEST(test_mysql84_other_plugin_refused_clearly)
{
	static const char *const stmts[] = {"SELECT 1", "INSERT INTO t VALUES (1)"};
	struct world *w = world_new();
	struct err_pkt e;
	size_t before;

	w->srv_opts = &mysql84;
	w->account = ACCT_ED25519;
	w->login_native_ok = w->login_sha2_ok = true;
	for (size_t i = 0; i < 2; i++) {
		before = w->npkts;
		query(w, stmts[i], 0);
		pump(w);
		ck_assert_uint_eq(w->npkts - before, 1);
		ck_assert_uint_eq(w->first[before], 0xff);
		ck_assert_int_eq(err_parse(w->last, w->last_len, &e), 0);
		ck_assert_uint_eq(e.code, 1251);
		ck_assert_str_eq(e.sqlstate, "08004");
		ck_assert_msg(strstr(e.msg, "client_ed25519") &&
		                  strstr(e.msg, "caching_sha2_password only"),
		              "%s", e.msg);
	}
	ck_assert_int_eq(w->queries, 0);
	ck_assert(w->login_sha2_ok);
	world_free(w);
}
END_TEST

/* Transaction replay's checksum (replay.c): an OK counts by its affected
 * rows only (not the insert id, status flags or warnings, which differ per
 * connection), an ERR by its code, a row by its bytes, an EOF not at all. */
static uint64_t sum_first(const uint8_t *p, int n)
{
	struct resp_tracker rt;
	enum resp_state st;

	resp_init(&rt, RESP_GENERIC, CAP_PROTOCOL_41 | CAP_TRANSACTIONS);
	st = resp_feed(&rt, p, (size_t)n, (uint32_t)n);
	ck_assert_int_eq(st, RS_DONE);
	return rp_sum_packet(RP_SUM0, RS_FIRST, st, &rt, p, (size_t)n);
}

START_TEST(test_replay_checksum)
{
	uint8_t a[64], b[64], c[64], e1[64], e2[64];
	int na = ok_build(a, sizeof(a), 0, 1, 7, SST_AUTOCOMMIT | SST_IN_TRANS, 0);
	int nb = ok_build(b, sizeof(b), 0, 1, 9000, SST_IN_TRANS, 3);
	int nc = ok_build(c, sizeof(c), 0, 2, 7, SST_AUTOCOMMIT | SST_IN_TRANS, 0);
	int ne1 = err_build(e1, sizeof(e1), 1062, "23000", "Duplicate entry");
	int ne2 = err_build(e2, sizeof(e2), 1213, "40001", "Deadlock found");
	struct resp_tracker rt = {0};
	const uint8_t row1[] = {1, '1'}, row2[] = {1, '2'}, eof[] = {0xfe, 0, 0, 2, 0};
	uint64_t h;

	ck_assert(na > 0 && nb > 0 && nc > 0 && ne1 > 0 && ne2 > 0);
	ck_assert_uint_eq(sum_first(a, na), sum_first(b, nb));
	ck_assert_uint_ne(sum_first(a, na), sum_first(c, nc));
	ck_assert_uint_ne(sum_first(e1, ne1), sum_first(e2, ne2));
	ck_assert_uint_ne(sum_first(a, na), sum_first(e1, ne1));
	h = rp_sum_packet(RP_SUM0, RS_ROWS, RS_ROWS, &rt, row1, sizeof(row1));
	ck_assert_uint_ne(h, rp_sum_packet(RP_SUM0, RS_ROWS, RS_ROWS, &rt, row2, sizeof(row2)));
	ck_assert_uint_eq(h, rp_sum_packet(h, RS_ROWS, RS_DONE, &rt, eof, sizeof(eof)));
	/* a row split in pieces sums as the whole row would */
	ck_assert_uint_eq(rp_sum_bytes(rp_sum_bytes(RP_SUM0, row1, 1), row1 + 1, 1),
	                  rp_sum_bytes(RP_SUM0, row1, 2));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("engine");
	TCase *tc = tcase_create("engine");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_select_roundtrip);
	tcase_add_test(tc, test_large_command_then_answer);
	tcase_add_test(tc, test_mysql84_native_account);
	tcase_add_test(tc, test_mysql84_sha2_fast);
	tcase_add_test(tc, test_mysql84_other_plugin_refused_clearly);
	tcase_add_test(tc, test_replay_checksum);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
