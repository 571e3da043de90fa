/*
 * proxy_pscap.c - the prepared statement caps of the 6450 proxy, with
 * libmysqlclient: one session prepares PER_SESSION statements (more than
 * PER_CONN, the cap per backend connection), one more gets ERR 1461 and the
 * session goes on, every statement executes with the right result (on a
 * reader, then on the writer inside a transaction: each connection
 * re-prepares what its cap made it close), and each server's
 * Prepared_stmt_count, sampled directly after every command, never goes
 * beyond PER_CONN above where it started. Closing the statements, then
 * disconnecting without closing them, bring it back.
 * Prints TAP-ish lines and "measured:" lines; exit 1 on any failure.
 *
 *   proxy_pscap PORT PER_CONN PER_SESSION BACKEND_PORT...
 */
#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_BACKENDS 8

static int failed;
static int nbe;
static MYSQL *mon[MAX_BACKENDS];
static long long base[MAX_BACKENDS], peak[MAX_BACKENDS];

static void check(int ok, const char *what)
{
	printf("%s - pscap: %s\n", ok ? "ok" : "not ok", what);
	if (!ok)
		failed = 1;
}

/* A global status counter of backend i, read directly (-1 on error). */
static long long status(int i, const char *name)
{
	char q[128];
	long long v = -1;

	snprintf(q, sizeof(q), "SHOW GLOBAL STATUS LIKE '%s'", name);
	if (mysql_query(mon[i], q)) {
		fprintf(stderr, "status %s: %s\n", name, mysql_error(mon[i]));
		return -1;
	}
	MYSQL_RES *res = mysql_store_result(mon[i]);
	MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
	if (row && row[1])
		v = atoll(row[1]);
	mysql_free_result(res);
	return v;
}

static long long status_sum(const char *name)
{
	long long sum = 0;

	for (int i = 0; i < nbe; i++)
		sum += status(i, name);
	return sum;
}

/* Records each server's Prepared_stmt_count above its start. */
static void sample(void)
{
	for (int i = 0; i < nbe; i++) {
		long long v = status(i, "Prepared_stmt_count") - base[i];
		if (v > peak[i])
			peak[i] = v;
	}
}

/* Waits up to 5 s for every server to be back at its start count. */
static int back_to_base(void)
{
	for (int tries = 0; tries < 100; tries++) {
		int ok = 1;
		for (int i = 0; i < nbe; i++)
			if (status(i, "Prepared_stmt_count") != base[i])
				ok = 0;
		if (ok)
			return 1;
		usleep(50 * 1000);
	}
	return 0;
}

static MYSQL *connect_to(unsigned port)
{
	MYSQL *m = mysql_init(NULL);

	if (!m || !mysql_real_connect(m, "127.0.0.1", "app", "app", NULL, port, NULL, 0)) {
		fprintf(stderr, "connect %u: %s\n", port, m ? mysql_error(m) : "init");
		return NULL;
	}
	return m;
}

/* Prepares "SELECT ? + k, @@port". */
static MYSQL_STMT *prep_k(MYSQL *m, int k)
{
	MYSQL_STMT *s = mysql_stmt_init(m);
	char sql[64];

	snprintf(sql, sizeof(sql), "SELECT ? + %d, @@port", k);
	if (!s)
		return NULL;
	if (mysql_stmt_prepare(s, sql, strlen(sql))) {
		fprintf(stderr, "prepare %s: %u %s\n", sql, mysql_stmt_errno(s),
		        mysql_stmt_error(s));
		return s; /* the caller looks at the error */
	}
	return s;
}

/*
 * The parameter is bound once per statement, to xval: libmysqlclient then
 * sends the parameter types with the first EXECUTE only, so the EXECUTEs
 * the proxy re-prepares after a cap close rely on it to add them back.
 */
static long long xval;
static MYSQL_STMT *bound[64];
static int nbound;

static int bind_once(MYSQL_STMT *s)
{
	MYSQL_BIND in;

	for (int i = 0; i < nbound; i++)
		if (bound[i] == s)
			return 0;
	memset(&in, 0, sizeof(in));
	in.buffer_type = MYSQL_TYPE_LONGLONG;
	in.buffer = &xval;
	if (mysql_stmt_bind_param(s, &in))
		return -1;
	if (nbound < 64)
		bound[nbound++] = s;
	return 0;
}

/* Runs the statement with x; returns the first column, -1 on error. */
static long long run(MYSQL_STMT *s, long long x)
{
	MYSQL_BIND out[2];
	long long r = -1;
	int port = 0;

	xval = x;
	memset(out, 0, sizeof(out));
	out[0].buffer_type = MYSQL_TYPE_LONGLONG;
	out[0].buffer = &r;
	out[1].buffer_type = MYSQL_TYPE_LONG;
	out[1].buffer = &port;
	if (bind_once(s) || mysql_stmt_execute(s) || mysql_stmt_bind_result(s, out) ||
	    mysql_stmt_fetch(s)) {
		fprintf(stderr, "execute: %u %s\n", mysql_stmt_errno(s), mysql_stmt_error(s));
		return -1;
	}
	while (mysql_stmt_fetch(s) == 0)
		;
	mysql_stmt_free_result(s);
	return r;
}

/* Executes statements k0..k0+n-1 (st[k] adds k) once each with
 * x = round * 1000 + k; counts wrong answers. */
static int run_all(MYSQL_STMT **st, int k0, int n, int round)
{
	int wrong = 0;

	for (int i = k0; i < k0 + n; i++) {
		long long x = round * 1000 + i;
		if (run(st[i], x) != x + i)
			wrong++;
		sample();
	}
	return wrong;
}

static int peak_ok(long long cap)
{
	for (int i = 0; i < nbe; i++)
		if (peak[i] > cap)
			return 0;
	return 1;
}

static void print_peaks(const char *when)
{
	printf("measured: Prepared_stmt_count above start, peak per server %s:", when);
	for (int i = 0; i < nbe; i++)
		printf(" %lld", peak[i]);
	printf("\n");
}

/* Part 1: prepare up to the session cap, one more refused, run them all. */
static void session_part(unsigned port, int per_conn, int per_session)
{
	MYSQL *m = connect_to(port);
	MYSQL_STMT **st = calloc((size_t)per_session, sizeof(*st));
	long long prep0, close0, exec0;
	int prepared = 0, wrong = 0;
	char what[160];

	check(m && st, "connected through the proxy");
	if (!m || !st)
		exit(1);
	prep0 = status_sum("Com_stmt_prepare");
	close0 = status_sum("Com_stmt_close");
	exec0 = status_sum("Com_stmt_execute");
	for (int i = 0; i < per_session; i++) {
		st[i] = prep_k(m, i);
		if (st[i] && !mysql_stmt_errno(st[i]))
			prepared++;
		sample();
	}
	snprintf(what, sizeof(what),
	         "%d statements prepared on one session (cap %d per connection)", prepared,
	         per_conn);
	check(prepared == per_session, what);
	if (prepared != per_session)
		exit(1);

	MYSQL_STMT *extra = prep_k(m, per_session);
	snprintf(what, sizeof(what), "statement %d refused with ERR 1461 / 42000 (%u %s: %s)",
	         per_session + 1, extra ? mysql_stmt_errno(extra) : 0,
	         extra ? mysql_stmt_sqlstate(extra) : "", extra ? mysql_stmt_error(extra) : "");
	check(extra && mysql_stmt_errno(extra) == 1461 &&
	          !strcmp(mysql_stmt_sqlstate(extra), "42000"),
	      what);
	if (extra)
		mysql_stmt_close(extra);
	MYSQL_RES *res = mysql_query(m, "SELECT 1") ? NULL : mysql_store_result(m);
	check(res != NULL, "the session is usable after the refusal");
	mysql_free_result(res);

	for (int round = 1; round <= 3; round++)
		wrong += run_all(st, 0, per_session, round);
	snprintf(what, sizeof(what), "3 rounds of %d EXECUTEs on a reader, all right (%d wrong)",
	         per_session, wrong);
	check(wrong == 0, what);
	/* The reader now holds the last PER_CONN statements: running only those
	 * again prepares nothing anywhere. */
	long long p1 = status_sum("Com_stmt_prepare");
	wrong = 0;
	for (int round = 1; round <= 2; round++)
		wrong += run_all(st, per_session - per_conn, per_conn, round);
	long long again = status_sum("Com_stmt_prepare") - p1;
	snprintf(what, sizeof(what),
	         "a working set of %d (the cap) ran twice with %lld re-prepares, all right "
	         "(%d wrong)",
	         per_conn, again, wrong);
	check(again == 0 && wrong == 0, what);
	check(!mysql_query(m, "BEGIN"), "BEGIN");
	wrong = run_all(st, 0, per_session, 4);
	check(!mysql_query(m, "COMMIT"), "COMMIT");
	snprintf(what, sizeof(what),
	         "%d EXECUTEs on the writer in a transaction (lazy prepares), all right (%d wrong)",
	         per_session, wrong);
	check(wrong == 0, what);
	print_peaks("while running");
	snprintf(what, sizeof(what), "no server held more than %d of the session's statements",
	         per_conn);
	check(peak_ok(per_conn), what);
	printf("measured: %d client statements, %d EXECUTEs: %lld server PREPAREs, %lld "
	       "COM_STMT_CLOSEs (cap evictions), %lld server EXECUTEs\n",
	       per_session, per_session * 4 + per_conn * 2, status_sum("Com_stmt_prepare") - prep0,
	       status_sum("Com_stmt_close") - close0, status_sum("Com_stmt_execute") - exec0);

	int closed = 1;
	for (int i = 0; i < per_session; i++)
		if (mysql_stmt_close(st[i]))
			closed = 0;
	check(closed, "statements closed");
	nbound = 0; /* their handles are freed: the addresses may come back */
	check(back_to_base(), "closing the statements releases them on every server");
	res = mysql_query(m, "SELECT 2") ? NULL : mysql_store_result(m);
	check(res != NULL, "the session is usable after the closes");
	mysql_free_result(res);
	mysql_close(m);
	free(st);
}

/* Part 2: a session that disconnects with statements open releases them. */
static void disconnect_part(unsigned port, int per_conn)
{
	MYSQL *m = connect_to(port);
	int n = per_conn + 2, wrong = 0;
	MYSQL_STMT *st[64];

	check(m != NULL, "second session connected");
	if (!m)
		exit(1);
	if (n > 64)
		n = 64;
	for (int i = 0; i < n; i++) {
		st[i] = prep_k(m, i);
		if (!st[i] || mysql_stmt_errno(st[i]))
			wrong++;
	}
	wrong += run_all(st, 0, n, 5);
	check(wrong == 0, "second session: statements prepared and executed");
	/* Gone without COM_STMT_CLOSE nor COM_QUIT, as a crashed client. The
	 * handles are left to the exit: the connection under them is dead. */
	check(shutdown(mysql_get_socket(m), SHUT_RDWR) == 0, "second session cut off");
	check(back_to_base(), "disconnecting with statements open releases them on every server");
}

/* Binds parameter 0 of "SELECT LENGTH(?)" as long data and sends n chunks
 * of 400000 bytes. */
static int send_chunks(MYSQL_STMT *s, int n)
{
	static char chunk[400000];
	MYSQL_BIND in;

	memset(chunk, 'x', sizeof(chunk));
	memset(&in, 0, sizeof(in));
	in.buffer_type = MYSQL_TYPE_BLOB;
	if (mysql_stmt_bind_param(s, &in))
		return -1;
	for (int i = 0; i < n; i++)
		if (mysql_stmt_send_long_data(s, 0, chunk, sizeof(chunk)))
			return -1;
	return 0;
}

/* Runs it: the length, or -1 with the error number in *err. */
static long long exec_len(MYSQL_STMT *s, unsigned *err)
{
	MYSQL_BIND out;
	long long r = -1;

	memset(&out, 0, sizeof(out));
	out.buffer_type = MYSQL_TYPE_LONGLONG;
	out.buffer = &r;
	*err = 0;
	if (mysql_stmt_execute(s) || mysql_stmt_bind_result(s, &out) || mysql_stmt_fetch(s)) {
		*err = mysql_stmt_errno(s);
		fprintf(stderr, "long data: %u %s\n", *err, mysql_stmt_error(s));
		return -1;
	}
	while (mysql_stmt_fetch(s) == 0)
		;
	mysql_stmt_free_result(s);
	return r;
}

static MYSQL_STMT *prep_len(MYSQL *m)
{
	MYSQL_STMT *s = m ? mysql_stmt_init(m) : NULL;
	const char *sql = "SELECT LENGTH(?)";

	if (s && mysql_stmt_prepare(s, sql, strlen(sql))) {
		fprintf(stderr, "prepare %s: %s\n", sql, mysql_stmt_error(s));
		mysql_stmt_close(s);
		return NULL;
	}
	return s;
}

/* Part 3: long data held by a session is bounded by max_packet_size (1 MB
 * in the test), over all its statements. */
static void long_data_part(unsigned port)
{
	MYSQL *m = connect_to(port);
	MYSQL_STMT *a = prep_len(m), *b = prep_len(m);
	unsigned err = 0;
	char what[160];
	long long r;

	check(a && b, "third session: two SELECT LENGTH(?) prepared");
	if (!a || !b)
		exit(1);
	r = send_chunks(a, 3) ? -2 : exec_len(a, &err);
	snprintf(what, sizeof(what),
	         "1.2 MB of long data past max_packet_size: EXECUTE gets ERR 1105 (%u)", err);
	check(r == -1 && err == 1105, what);
	r = send_chunks(a, 2) ? -2 : exec_len(a, &err);
	snprintf(what, sizeof(what), "then 800 KB of long data: LENGTH() = %lld", r);
	check(r == 800000, what);
	/* 800 KB held for a, 400 KB more for b: over the session's budget. */
	check(!send_chunks(a, 2) && !send_chunks(b, 1), "long data sent to two statements");
	r = exec_len(b, &err);
	snprintf(what, sizeof(what),
	         "800 KB held for one statement and 400 KB for another: the second gets ERR "
	         "1105 (%u)",
	         err);
	check(r == -1 && err == 1105, what);
	r = exec_len(a, &err);
	snprintf(what, sizeof(what), "the first still runs with its 800 KB: LENGTH() = %lld", r);
	check(r == 800000, what);
	check(!mysql_stmt_close(a) && !mysql_stmt_close(b), "statements closed");
	mysql_close(m);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 5) {
		fprintf(stderr, "usage: proxy_pscap PORT PER_CONN PER_SESSION BACKEND_PORT...\n");
		return 2;
	}
	unsigned port = (unsigned)atoi(argv[1]);
	int per_conn = atoi(argv[2]), per_session = atoi(argv[3]);

	nbe = argc - 4 < MAX_BACKENDS ? argc - 4 : MAX_BACKENDS;
	for (int i = 0; i < nbe; i++) {
		mon[i] = connect_to((unsigned)atoi(argv[4 + i]));
		if (!mon[i]) {
			printf("not ok - pscap: monitor connection to %s\n", argv[4 + i]);
			return 1;
		}
		base[i] = status(i, "Prepared_stmt_count");
	}
	session_part(port, per_conn, per_session);
	disconnect_part(port, per_conn);
	long_data_part(port);
	printf("# pscap: done\n");
	for (int i = 0; i < nbe; i++)
		mysql_close(mon[i]);
	return failed;
}
