/*
 * proxy_ps.c - prepared statements through the 6450 proxy with
 * libmysqlclient: NULL parameters, long data sent in pieces, the statement
 * run on a second backend (prepared there lazily, with the parameter types
 * the client sent only once), statements driving a transaction, the
 * connection state (LAST_INSERT_ID(), FOUND_ROWS()) a later statement reads,
 * and cursors.
 * Prints TAP-ish lines; exit 1 on any failure.
 *
 *   proxy_ps PORT
 */
#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failed;

static void check(int ok, const char *what)
{
	printf("%s - ps: %s\n", ok ? "ok" : "not ok", what);
	if (!ok)
		failed = 1;
}

static MYSQL_STMT *prep(MYSQL *m, const char *sql)
{
	MYSQL_STMT *s = mysql_stmt_init(m);

	if (!s || mysql_stmt_prepare(s, sql, strlen(sql))) {
		fprintf(stderr, "prepare %s: %s\n", sql, s ? mysql_stmt_error(s) : "init");
		return NULL;
	}
	return s;
}

/* Runs "SELECT ? + 1, @@port" with x; returns the sum, port in *port. */
static long long plus_one(MYSQL_STMT *s, long long x, int *port)
{
	MYSQL_BIND in = {0}, out[2];
	long long r = -1;
	int p = 0;

	in.buffer_type = MYSQL_TYPE_LONGLONG;
	in.buffer = &x;
	memset(out, 0, sizeof(out));
	out[0].buffer_type = MYSQL_TYPE_LONGLONG;
	out[0].buffer = &r;
	out[1].buffer_type = MYSQL_TYPE_LONG;
	out[1].buffer = &p;
	if (mysql_stmt_bind_param(s, &in) || mysql_stmt_execute(s) ||
	    mysql_stmt_bind_result(s, out) || mysql_stmt_fetch(s)) {
		fprintf(stderr, "plus_one: %s\n", mysql_stmt_error(s));
		return -1;
	}
	while (mysql_stmt_fetch(s) == 0)
		;
	mysql_stmt_free_result(s);
	*port = p;
	return r;
}

/* The id of an INSERT executed as a prepared statement is what a prepared
 * SELECT LAST_INSERT_ID() returns after a read that ran on a replica (the
 * proxy let the insert's connection go, then set the value on the next). */
static int lid_after_read(MYSQL *m, MYSQL_STMT *read)
{
	MYSQL_STMT *ins = prep(m, "INSERT INTO t.psai (v) VALUES ('x')");
	MYSQL_STMT *lid = prep(m, "SELECT LAST_INSERT_ID()");
	MYSQL_BIND r;
	long long got = -1;
	unsigned long long want = 0;
	int port = 0, ok = 0;

	if (!ins || !lid)
		goto out;
	if (mysql_stmt_execute(ins)) {
		fprintf(stderr, "insert: %s\n", mysql_stmt_error(ins));
		goto out;
	}
	want = mysql_stmt_insert_id(ins);
	usleep(1200 * 1000); /* past the read-your-writes window: the read goes to a replica */
	if (plus_one(read, 1, &port) != 2)
		goto out;
	memset(&r, 0, sizeof(r));
	r.buffer_type = MYSQL_TYPE_LONGLONG;
	r.buffer = &got;
	if (mysql_stmt_execute(lid) || mysql_stmt_bind_result(lid, &r) || mysql_stmt_fetch(lid)) {
		fprintf(stderr, "last_insert_id: %s\n", mysql_stmt_error(lid));
		goto out;
	}
	while (mysql_stmt_fetch(lid) == 0)
		;
	mysql_stmt_free_result(lid);
	printf("# ps: insert id %llu, read on %d, then LAST_INSERT_ID() %lld\n", want, port, got);
	ok = want > 0 && (unsigned long long)got == want;
out:
	if (ins)
		mysql_stmt_close(ins);
	if (lid)
		mysql_stmt_close(lid);
	return ok;
}

/* Executes a prepared statement of an integer column and the server's port
 * (or only the integer), returns the first row's integer, -1 on error. */
static long long int_port(MYSQL_STMT *s, int *port)
{
	MYSQL_BIND out[2];
	long long v = -1, first;
	int p = 0;

	memset(out, 0, sizeof(out));
	out[0].buffer_type = MYSQL_TYPE_LONGLONG;
	out[0].buffer = &v;
	out[1].buffer_type = MYSQL_TYPE_LONG;
	out[1].buffer = &p;
	if (mysql_stmt_execute(s) || mysql_stmt_bind_result(s, out) || mysql_stmt_fetch(s)) {
		fprintf(stderr, "execute: %s\n", mysql_stmt_error(s));
		return -1;
	}
	first = v;
	while (mysql_stmt_fetch(s) == 0)
		;
	mysql_stmt_free_result(s);
	if (port)
		*port = p;
	return first;
}

/* FOUND_ROWS() as a prepared statement answers for the SQL_CALC_FOUND_ROWS
 * read before it, wherever that read ran: prepared right after the read,
 * executed again after another prepared read, and after a text read. */
static int found_rows(MYSQL *m)
{
	MYSQL_STMT *calc50 = prep(m, "SELECT SQL_CALC_FOUND_ROWS seq, @@port FROM seq_1_to_50 "
	                             "LIMIT 3");
	MYSQL_STMT *calc70 = prep(m, "SELECT SQL_CALC_FOUND_ROWS seq, @@port FROM seq_1_to_70 "
	                             "LIMIT 3");
	MYSQL_STMT *fr = NULL;
	MYSQL_RES *res;
	long long a = -1, b = -1, c = -1;
	int pa = 0, pb = 0, ok = 0;

	if (!calc50 || !calc70)
		goto out;
	if ((a = int_port(calc50, &pa)) != 1 || !(fr = prep(m, "SELECT FOUND_ROWS()"))) {
		fprintf(stderr, "found_rows: first read gave %lld\n", a);
		goto out;
	}
	a = int_port(fr, NULL);
	if ((b = int_port(calc70, &pb)) != 1) {
		fprintf(stderr, "found_rows: second read gave %lld\n", b);
		goto out;
	}
	b = int_port(fr, NULL);
	if (mysql_query(m, "SELECT SQL_CALC_FOUND_ROWS seq FROM seq_1_to_30 LIMIT 2") ||
	    !(res = mysql_store_result(m))) {
		fprintf(stderr, "text calc read: %s\n", mysql_error(m));
		goto out;
	}
	mysql_free_result(res);
	c = int_port(fr, NULL);
	printf("# ps: FOUND_ROWS() %lld after a read on %d (prepared then), %lld after one on %d, "
	       "%lld after a text read\n",
	       a, pa, b, pb, c);
	ok = a == 50 && b == 70 && c == 30;
out:
	if (calc50)
		mysql_stmt_close(calc50);
	if (calc70)
		mysql_stmt_close(calc70);
	if (fr)
		mysql_stmt_close(fr);
	return ok;
}

/* Com_stmt_fetch summed over the servers on ports[0..n), -1 on error. */
static long long server_fetches(int n, char **ports)
{
	long long sum = 0;

	for (int i = 0; i < n; i++) {
		MYSQL *d = mysql_init(NULL);
		MYSQL_RES *res;
		MYSQL_ROW row;

		if (!d ||
		    !mysql_real_connect(d, "127.0.0.1", "app", "app", NULL,
		                        (unsigned)atoi(ports[i]), NULL, 0) ||
		    mysql_query(d, "SHOW GLOBAL STATUS LIKE 'Com_stmt_fetch'") ||
		    !(res = mysql_store_result(d))) {
			fprintf(stderr, "status of %s: %s\n", ports[i],
			        d ? mysql_error(d) : "init");
			mysql_close(d);
			return -1;
		}
		row = mysql_fetch_row(res);
		sum += row && row[1] ? atoll(row[1]) : 0;
		mysql_free_result(res);
		mysql_close(d);
	}
	return sum;
}

/* A read-only cursor fetched 3 rows at a time: the proxy opens it on the
 * server and passes each COM_STMT_FETCH to the connection that holds it. */
static int cursor_fetch(MYSQL *m, int nports, char **ports)
{
	MYSQL_STMT *s = prep(m, "SELECT seq FROM seq_1_to_10");
	unsigned long type = CURSOR_TYPE_READ_ONLY, prefetch = 3;
	long long v = 0, f0, f1;
	int rows = 0, inorder = 1;
	MYSQL_BIND r;

	if (!s)
		return 0;
	f0 = server_fetches(nports, ports);
	memset(&r, 0, sizeof(r));
	r.buffer_type = MYSQL_TYPE_LONGLONG;
	r.buffer = &v;
	if (mysql_stmt_attr_set(s, STMT_ATTR_CURSOR_TYPE, &type) ||
	    mysql_stmt_attr_set(s, STMT_ATTR_PREFETCH_ROWS, &prefetch) || mysql_stmt_execute(s) ||
	    mysql_stmt_bind_result(s, &r)) {
		fprintf(stderr, "cursor: %s\n", mysql_stmt_error(s));
		mysql_stmt_close(s);
		return 0;
	}
	while (mysql_stmt_fetch(s) == 0)
		inorder &= v == ++rows;
	if (mysql_stmt_errno(s))
		fprintf(stderr, "cursor fetch: %s\n", mysql_stmt_error(s));
	mysql_stmt_close(s);
	f1 = server_fetches(nports, ports);
	printf("# ps: cursor: %d rows in order %d, the servers' Com_stmt_fetch +%lld\n", rows,
	       inorder, f1 - f0);
	return rows == 10 && inorder && f0 >= 0 && f1 - f0 >= 3;
}

int main(int argc, char **argv)
{
	MYSQL *m = mysql_init(NULL);
	unsigned int port = argc > 1 ? (unsigned)atoi(argv[1]) : 6450;
	MYSQL_STMT *ins, *sel, *plus;
	MYSQL_BIND b[3], r[3];
	int id = 1, got_id = 0, p1 = 0, p2 = 0;
	char chunk[100000], blob[400000];
	unsigned long bloblen = 0;
	my_bool isnull[3] = {0, 1, 0}, rnull[3] = {0};
	long long a = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!mysql_real_connect(m, "127.0.0.1", "app", "app", "t", port, NULL, 0)) {
		printf("not ok - ps: connect: %s\n", mysql_error(m));
		return 1;
	}
	if (mysql_query(m, "CREATE TABLE IF NOT EXISTS t.ps (id INT PRIMARY KEY, a INT NULL, "
	                   "b LONGBLOB) ") ||
	    mysql_query(m, "DELETE FROM t.ps") ||
	    mysql_query(m, "CREATE TABLE IF NOT EXISTS t.psai (id INT AUTO_INCREMENT PRIMARY KEY, "
	                   "v VARCHAR(8))")) {
		printf("not ok - ps: setup: %s\n", mysql_error(m));
		return 1;
	}
	ins = prep(m, "INSERT INTO t.ps (id, a, b) VALUES (?, ?, ?)");
	check(ins != NULL, "INSERT prepared");
	if (!ins)
		return 1;
	memset(b, 0, sizeof(b));
	b[0].buffer_type = MYSQL_TYPE_LONG;
	b[0].buffer = &id;
	b[1].buffer_type = MYSQL_TYPE_LONGLONG;
	b[1].buffer = &a;
	b[1].is_null = &isnull[1];
	b[2].buffer_type = MYSQL_TYPE_BLOB;
	check(mysql_stmt_param_count(ins) == 3, "the client sees 3 parameters");
	check(!mysql_stmt_bind_param(ins, b), "parameters bound");
	for (int i = 0; i < 3; i++) {
		memset(chunk, 'a' + i, sizeof(chunk));
		if (mysql_stmt_send_long_data(ins, 2, chunk, sizeof(chunk)))
			fprintf(stderr, "long data: %s\n", mysql_stmt_error(ins));
	}
	check(!mysql_stmt_execute(ins), "INSERT with a NULL and 300 KB of long data executed");
	if (mysql_stmt_errno(ins))
		fprintf(stderr, "execute: %s\n", mysql_stmt_error(ins));
	check(mysql_stmt_affected_rows(ins) == 1, "one row inserted");

	sel = prep(m, "SELECT /* mysteer:writer */ id, a, b FROM t.ps WHERE id = ?");
	check(sel != NULL, "SELECT prepared");
	if (!sel)
		return 1;
	memset(r, 0, sizeof(r));
	r[0].buffer_type = MYSQL_TYPE_LONG;
	r[0].buffer = &got_id;
	r[1].buffer_type = MYSQL_TYPE_LONGLONG;
	r[1].buffer = &a;
	r[1].is_null = &rnull[1];
	r[2].buffer_type = MYSQL_TYPE_BLOB;
	r[2].buffer = blob;
	r[2].buffer_length = sizeof(blob);
	r[2].length = &bloblen;
	if (mysql_stmt_bind_param(sel, b) || mysql_stmt_execute(sel) ||
	    mysql_stmt_bind_result(sel, r) || mysql_stmt_fetch(sel))
		fprintf(stderr, "select: %s\n", mysql_stmt_error(sel));
	check(got_id == 1, "the row reads back");
	check(rnull[1], "the NULL parameter stored NULL");
	check(bloblen == 300000 && blob[0] == 'a' && blob[100000] == 'b' && blob[299999] == 'c',
	      "the long data arrived whole and in order");
	mysql_stmt_free_result(sel);

	usleep(1200 * 1000); /* past the read-your-writes window of proxy.sh */
	plus = prep(m, "SELECT ? + 1, @@port");
	check(plus != NULL, "a read statement prepared");
	if (!plus)
		return 1;
	check(plus_one(plus, 41, &p1) == 42, "executed where it was prepared");
	/* In a transaction it runs on the writer: prepared there lazily, and the
	 * client does not send the parameter types a second time. */
	check(!mysql_query(m, "BEGIN"), "BEGIN");
	check(plus_one(plus, 99, &p2) == 100, "executed on a second backend inside a transaction");
	check(!mysql_query(m, "COMMIT"), "COMMIT");
	printf("# ps: read statement ran on %d, then on %d in the transaction\n", p1, p2);
	check(p1 != p2, "the two executions ran on different backends");
	check(lid_after_read(m, plus),
	      "LAST_INSERT_ID() of a prepared INSERT survives a read elsewhere");
	check(found_rows(m),
	      "a prepared FOUND_ROWS() answers for the read before it, on a replica");
	if (argc > 2)
		check(cursor_fetch(m, argc - 2, argv + 2),
		      "a cursor's 10 rows come 3 at a time with COM_STMT_FETCH from the server");
	check(!mysql_stmt_close(plus) && !mysql_stmt_close(sel) && !mysql_stmt_close(ins),
	      "statements closed");
	MYSQL_RES *res = mysql_query(m, "SELECT 1") ? NULL : mysql_store_result(m);
	if (!res)
		fprintf(stderr, "SELECT 1: %s\n", mysql_error(m));
	check(res != NULL, "the connection is usable after the closes");
	mysql_free_result(res);
	mysql_close(m);
	return failed;
}
