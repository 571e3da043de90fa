/*
 * proxy_psmux.c - prepared statements and multiplexing on 6450, with
 * libmysqlclient:
 *
 * 1. NCLIENTS sessions held open, each with two prepared statements, executed
 *    in rounds: the backends' processlists show far fewer `app` connections
 *    than sessions, each server's Prepared_stmt_count stays within what those
 *    connections may cache (2 texts each), and it returns to its start once
 *    the sessions closed their statements (half with COM_STMT_CLOSE, half by
 *    disconnecting); a statement that other sessions closed still runs for
 *    the session that keeps it.
 * 2. The same text prepared under another sql_mode (ANSI_QUOTES) gets its own
 *    parse, whichever session prepared or ran it first on the connection.
 * 3. The same text prepared in two schemas reads each schema's table.
 *
 * Prints TAP-ish lines and "measured:" lines; exit 1 on any failure.
 *
 *   proxy_psmux PORT NCLIENTS ROUNDS BACKEND_PORT...
 */
#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_BACKENDS 8
#define MAX_CLIENTS  64

static int failed;
static int nbe;
static unsigned pport;
static MYSQL *mon[MAX_BACKENDS];
static long long base[MAX_BACKENDS];

static void check(int ok, const char *what)
{
	printf("%s - psmux: %s\n", ok ? "ok" : "not ok", what);
	fflush(stdout);
	if (!ok)
		failed = 1;
}

/* The first column of the first row of a query on monitor i, -1 on error. */
static long long mon_ll(int i, const char *q)
{
	long long v = -1;

	if (mysql_query(mon[i], q)) {
		fprintf(stderr, "monitor: %s: %s\n", q, mysql_error(mon[i]));
		return -1;
	}
	MYSQL_RES *res = mysql_store_result(mon[i]);
	MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
	if (row && row[mysql_num_fields(res) - 1])
		v = atoll(row[mysql_num_fields(res) - 1]);
	mysql_free_result(res);
	return v;
}

static long long stmt_count(int i)
{
	return mon_ll(i, "SHOW GLOBAL STATUS LIKE 'Prepared_stmt_count'");
}

static long long status_sum(const char *name)
{
	char q[128];
	long long sum = 0;

	snprintf(q, sizeof(q), "SHOW GLOBAL STATUS LIKE '%s'", name);
	for (int i = 0; i < nbe; i++)
		sum += mon_ll(i, q);
	return sum;
}

/* `app` connections on backend i: the proxy's (the monitors are app too). */
static long long app_conns(int i)
{
	return mon_ll(i, "SELECT COUNT(*) FROM information_schema.PROCESSLIST "
	                 "WHERE USER = 'app' AND ID <> CONNECTION_ID()");
}

/* Waits up to 5 s for every server to be back at its start count. */
static int back_to_base(void)
{
	for (int tries = 0; tries < 100; tries++) {
		int ok = 1;
		for (int i = 0; i < nbe; i++)
			if (stmt_count(i) != base[i])
				ok = 0;
		if (ok)
			return 1;
		usleep(50 * 1000);
	}
	return 0;
}

static MYSQL *connect_to(unsigned port, const char *db)
{
	MYSQL *m = mysql_init(NULL);

	if (!m || !mysql_real_connect(m, "127.0.0.1", "app", "app", db, port, NULL, 0)) {
		fprintf(stderr, "connect %u: %s\n", port, m ? mysql_error(m) : "init");
		if (m)
			mysql_close(m);
		return NULL;
	}
	return m;
}

static MYSQL_STMT *prep(MYSQL *m, const char *sql)
{
	MYSQL_STMT *s = m ? mysql_stmt_init(m) : NULL;

	if (s && mysql_stmt_prepare(s, sql, strlen(sql))) {
		fprintf(stderr, "prepare %s: %u %s\n", sql, mysql_stmt_errno(s),
		        mysql_stmt_error(s));
		mysql_stmt_close(s);
		return NULL;
	}
	return s;
}

/* Runs s with one LONGLONG parameter (when nparams) and returns its first
 * column as text in out ("" on error). The parameter is bound before every
 * execution, so the types go along each time as well as only once. */
static int run(MYSQL_STMT *s, long long x, char *out, size_t cap)
{
	MYSQL_BIND in, res;
	unsigned long len = 0;

	out[0] = 0;
	memset(&in, 0, sizeof(in));
	in.buffer_type = MYSQL_TYPE_LONGLONG;
	in.buffer = &x;
	memset(&res, 0, sizeof(res));
	res.buffer_type = MYSQL_TYPE_STRING;
	res.buffer = out;
	res.buffer_length = cap - 1;
	res.length = &len;
	if (!s || (mysql_stmt_param_count(s) && mysql_stmt_bind_param(s, &in)) ||
	    mysql_stmt_execute(s) || mysql_stmt_bind_result(s, &res) || mysql_stmt_fetch(s)) {
		fprintf(stderr, "execute: %u %s\n", s ? mysql_stmt_errno(s) : 0,
		        s ? mysql_stmt_error(s) : "no statement");
		out[0] = 0;
		return -1;
	}
	out[len < cap ? len : cap - 1] = 0;
	while (mysql_stmt_fetch(s) == 0)
		;
	mysql_stmt_free_result(s);
	return 0;
}

static const char *SQL1 = "SELECT ? + 1000";
static const char *SQL2 = "SELECT COUNT(*) FROM psmux.t WHERE id > ?";

/* Part 1: many sessions with open statements, few backend connections. */
static void mux_part(int n, int rounds)
{
	MYSQL *m[MAX_CLIENTS];
	MYSQL_STMT *s1[MAX_CLIENTS], *s2[MAX_CLIENTS];
	long long max_conns = 0, max_stmts = 0, max_ratio_bad = 0, prep_last = 0;
	int wrong = 0, ok_conn = 1;
	char what[256], buf[64];

	for (int i = 0; i < nbe; i++)
		base[i] = stmt_count(i);
	for (int i = 0; i < n; i++) {
		m[i] = connect_to(pport, "psmux");
		s1[i] = prep(m[i], SQL1);
		s2[i] = prep(m[i], SQL2);
		if (!m[i] || !s1[i] || !s2[i])
			ok_conn = 0;
	}
	snprintf(what, sizeof(what), "%d sessions connected, 2 statements prepared each", n);
	check(ok_conn, what);
	if (!ok_conn)
		exit(1);
	for (int r = 0; r < rounds; r++) {
		long long p0 = status_sum("Com_stmt_prepare");
		for (int i = 0; i < n; i++) {
			long long x = r * 100 + i;
			if (run(s1[i], x, buf, sizeof(buf)) || atoll(buf) != x + 1000)
				wrong++;
			if (run(s2[i], x % 3, buf, sizeof(buf)) || atoll(buf) != 3 - x % 3)
				wrong++;
		}
		prep_last = status_sum("Com_stmt_prepare") - p0;
		/* all n sessions are connected, between statements */
		long long conns = 0, stmts = 0;
		for (int i = 0; i < nbe; i++) {
			long long c = app_conns(i), st = stmt_count(i) - base[i];
			conns += c;
			stmts += st;
			if (st > 2 * c) /* a connection caches each text at most once */
				max_ratio_bad++;
		}
		if (conns > max_conns)
			max_conns = conns;
		if (stmts > max_stmts)
			max_stmts = stmts;
		usleep(200 * 1000);
	}
	printf("measured: %d sessions x 2 prepared statements, %d rounds: app connections in "
	       "the processlists at most %lld, Prepared_stmt_count above start at most %lld "
	       "(one connection per session would hold %d), server PREPAREs in the last round "
	       "%lld\n",
	       n, rounds, max_conns, max_stmts, 2 * n, prep_last);
	snprintf(what, sizeof(what), "%d rounds of %d EXECUTEs, all right (%d wrong)", rounds,
	         2 * n, wrong);
	check(wrong == 0, what);
	snprintf(what, sizeof(what),
	         "%d sessions with open statements need at most %d backend connections (%lld)", n,
	         n / 2, max_conns);
	check(max_conns <= n / 2, what);
	snprintf(what, sizeof(what),
	         "no server held more than 2 statements per connection of the proxy (%lld "
	         "samples over)",
	         max_ratio_bad);
	check(max_ratio_bad == 0, what);
	snprintf(what, sizeof(what),
	         "the connections' caches serve the sessions: %lld server PREPAREs for %d "
	         "EXECUTEs in the last round",
	         prep_last, 2 * n);
	check(prep_last < n, what);

	/* every session but the first closes its SQL1: the first still runs it */
	for (int i = 1; i < n; i++)
		mysql_stmt_close(s1[i]);
	usleep(100 * 1000);
	check(run(s1[0], 7, buf, sizeof(buf)) == 0 && atoll(buf) == 1007,
	      "a statement other sessions closed still runs for the one that keeps it");
	/* half close the rest, half disconnect with statements open */
	mysql_stmt_close(s1[0]);
	for (int i = 0; i < n; i++) {
		if (i % 2 == 0)
			mysql_stmt_close(s2[i]);
		mysql_close(m[i]);
		if (i % 2 == 1)
			mysql_stmt_close(s2[i]); /* only frees the handle now */
	}
	snprintf(what, sizeof(what),
	         "closing and disconnecting brings every server's Prepared_stmt_count back to "
	         "its start");
	check(back_to_base(), what);
}

/* Part 2: the same text under another sql_mode is parsed apart. */
static void sql_mode_part(void)
{
	static const char *q = "SELECT \"a\" FROM (SELECT 'x' AS a) t";
	MYSQL *a = connect_to(pport, "psmux"), *b = connect_to(pport, "psmux"), *c;
	MYSQL_STMT *sa, *sb, *sc, *sb2;
	char ra[32], rb[32], rc[32], rb2[32];
	int good = 1;

	if (!a || !b ||
	    mysql_query(b, "SET SESSION sql_mode = CONCAT(@@sql_mode, ',ANSI_QUOTES')")) {
		check(0, "sql_mode sessions set up");
		return;
	}
	sa = prep(a, q);
	for (int r = 0; r < 3; r++) {
		run(sa, 0, ra, sizeof(ra));
		sb = prep(b, q);
		run(sb, 0, rb, sizeof(rb));
		run(sa, 0, ra, sizeof(ra));
		if (strcmp(ra, "a") || strcmp(rb, "x"))
			good = 0;
		mysql_stmt_close(sb);
	}
	check(good, "one text, two sql_modes: the default session reads the string, the "
	            "ANSI_QUOTES one the column (3 rounds, the default one prepared first)");
	/* now the ANSI_QUOTES session prepares first */
	mysql_stmt_close(sa);
	sb2 = prep(b, q);
	run(sb2, 0, rb2, sizeof(rb2));
	c = connect_to(pport, "psmux");
	sc = prep(c, q);
	run(sc, 0, rc, sizeof(rc));
	run(sb2, 0, rb2, sizeof(rb2));
	printf("measured: sql_mode: default session '%s', ANSI_QUOTES session '%s'\n", rc, rb2);
	check(!strcmp(rc, "a") && !strcmp(rb2, "x"),
	      "the same with the ANSI_QUOTES session first, and a new default session");
	mysql_stmt_close(sb2);
	mysql_stmt_close(sc);
	mysql_close(a);
	mysql_close(b);
	mysql_close(c);
}

/* Part 3: the same text in two schemas reads each schema's table. */
static void schema_part(void)
{
	static const char *q = "SELECT v FROM t";
	MYSQL *a = connect_to(pport, "psa"), *b = connect_to(pport, "psb"),
	      *c = connect_to(pport, "psa");
	MYSQL_STMT *sa, *sb, *sc;
	char ra[32], rb[32], rc[32];
	int good = 1;

	if (!a || !b || !c) {
		check(0, "schema sessions connected");
		return;
	}
	sa = prep(a, q);
	sb = prep(b, q);
	for (int r = 0; r < 3; r++) {
		run(sa, 0, ra, sizeof(ra));
		run(sb, 0, rb, sizeof(rb));
		if (strcmp(ra, "psa") || strcmp(rb, "psb"))
			good = 0;
	}
	printf("measured: schemas: session of psa read '%s', of psb '%s'\n", ra, rb);
	check(good, "one text in two schemas: each session reads its own schema's table");
	/* a session that moves to the other schema (COM_INIT_DB) */
	sc = NULL;
	if (mysql_select_db(c, "psb") == 0) {
		sc = prep(c, q);
		run(sc, 0, rc, sizeof(rc));
		run(sa, 0, ra, sizeof(ra));
	}
	check(sc && !strcmp(rc, "psb") && !strcmp(ra, "psa"),
	      "after USE psb a session's statement reads psb.t, the other session's psa.t");
	if (sc)
		mysql_stmt_close(sc);
	mysql_stmt_close(sa);
	mysql_stmt_close(sb);
	mysql_close(a);
	mysql_close(b);
	mysql_close(c);
}

int main(int argc, char **argv)
{
	int n, rounds;

	if (argc < 5) {
		fprintf(stderr, "usage: proxy_psmux PORT NCLIENTS ROUNDS BACKEND_PORT...\n");
		return 2;
	}
	pport = (unsigned)atoi(argv[1]);
	n = atoi(argv[2]);
	rounds = atoi(argv[3]);
	if (n < 2 || n > MAX_CLIENTS)
		n = 20;
	for (int i = 4; i < argc && nbe < MAX_BACKENDS; i++) {
		mon[nbe] = connect_to((unsigned)atoi(argv[i]), NULL);
		if (!mon[nbe]) {
			check(0, "monitor connections");
			return 1;
		}
		nbe++;
	}
	mux_part(n, rounds);
	sql_mode_part();
	schema_part();
	/* base[] still holds the start counts of part 1 */
	check(back_to_base(), "every server's Prepared_stmt_count is back at its start at the end");
	printf("# psmux: done\n");
	fflush(stdout);
	for (int i = 0; i < nbe; i++)
		mysql_close(mon[i]);
	return failed;
}
