/*
 * proxy_track.c - session-state tracking through the 6450 proxy with
 * libmysqlclient, under read_your_writes = gtid: the proxy tracks last_gtid
 * on writer connections for itself and must hide it from clients that did not
 * ask for it, show it to those that did, and pass every other tracked
 * variable through. Prints TAP-ish lines and "measured:" lines; exit 1 on any
 * failure.
 *
 *   proxy_track PORT
 */
#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failed;

static void check(int ok, const char *what)
{
	printf("%s - track: %s\n", ok ? "ok" : "not ok", what);
	if (!ok)
		failed = 1;
}

static MYSQL *conn(int port)
{
	MYSQL *m = mysql_init(NULL);

	if (!m || !mysql_real_connect(m, "127.0.0.1", "app", "app", NULL, (unsigned)port, NULL,
	                              CLIENT_MULTI_STATEMENTS)) {
		fprintf(stderr, "connect: %s\n", m ? mysql_error(m) : "init");
		exit(1);
	}
	return m;
}

/* Runs a statement and drops its result; returns 0 or -1. */
static int run(MYSQL *m, const char *sql)
{
	MYSQL_RES *r;

	if (mysql_query(m, sql)) {
		fprintf(stderr, "%s: %s\n", sql, mysql_error(m));
		return -1;
	}
	r = mysql_store_result(m);
	if (r)
		mysql_free_result(r);
	return 0;
}

/* The value of a tracked system variable in the last OK, copied to val;
 * returns 1 when tracked, 0 if not. *nvars counts the variables tracked. */
static int tracked(MYSQL *m, const char *name, char *val, size_t cap, int *nvars)
{
	const char *d;
	size_t n;
	int found = 0, is_name = 1, want = 0;

	*nvars = 0;
	val[0] = 0;
	if (mysql_session_track_get_first(m, SESSION_TRACK_SYSTEM_VARIABLES, &d, &n))
		return 0;
	do {
		if (is_name) {
			(*nvars)++;
			want = n == strlen(name) && !memcmp(d, name, n);
		} else if (want) {
			snprintf(val, cap, "%.*s", (int)n, d);
			found = 1;
		}
		is_name = !is_name;
	} while (!mysql_session_track_get_next(m, SESSION_TRACK_SYSTEM_VARIABLES, &d, &n));
	return found;
}

/* Whether the last OK had a state-change entry (and the flag for it). */
static int state_tracked(MYSQL *m)
{
	const char *d;
	size_t n;
	unsigned status = 0;

	mariadb_get_infov(m, MARIADB_CONNECTION_SERVER_STATUS, &status);
	return (status & SERVER_SESSION_STATE_CHANGED) &&
	       !mysql_session_track_get_first(m, SESSION_TRACK_STATE_CHANGE, &d, &n);
}

/* A GTID as MariaDB writes it: domain-server-seqno, digits. */
static int gtid_like(const char *g)
{
	unsigned long a, b, c;
	char end;

	return sscanf(g, "%lu-%lu-%lu%c", &a, &b, &c, &end) == 3;
}

/* After an INSERT: count of rows with v in a read, which goes to a replica. */
static long long count_v(MYSQL *m, const char *v)
{
	char q[128];
	MYSQL_RES *r;
	MYSQL_ROW row;
	long long n = -1;

	snprintf(q, sizeof(q), "SELECT COUNT(*) FROM t.k WHERE v='%s'", v);
	if (mysql_query(m, q) || !(r = mysql_store_result(m)))
		return -1;
	row = mysql_fetch_row(r);
	if (row && row[0])
		n = atoll(row[0]);
	mysql_free_result(r);
	return n;
}

int main(int argc, char **argv)
{
	int port = argc > 1 ? atoi(argv[1]) : 6450, nvars, seen = 0;
	char val[128];
	MYSQL *m;

	/* never asked: the proxy's own tracking stays hidden */
	m = conn(port);
	check(run(m, "INSERT INTO t.k (v) VALUES ('trk0')") == 0, "INSERT without asking");
	check(!tracked(m, "last_gtid", val, sizeof(val), &nvars),
	      "a client that did not ask sees no last_gtid after an INSERT");
	printf("measured: tracked variables in the INSERT's OK, client did not ask: %d\n", nvars);
	for (int i = 0; i < 20; i++) {
		char q[96], v[32];
		snprintf(v, sizeof(v), "trk0_%d", i);
		snprintf(q, sizeof(q), "INSERT INTO t.k (v) VALUES ('%s')", v);
		if (run(m, q) == 0 && !tracked(m, "last_gtid", val, sizeof(val), &nvars) &&
		    count_v(m, v) == 1)
			seen++;
	}
	printf("measured: not asking: %d/20 INSERTs hid last_gtid and the next read saw them\n",
	       seen);
	check(seen == 20, "not asking: read-your-writes holds and last_gtid stays hidden");
	mysql_close(m);

	/* asked: the client sees it, with a GTID */
	m = conn(port);
	check(run(m, "SET session_track_system_variables='last_gtid'") == 0,
	      "SET session_track_system_variables='last_gtid'");
	check(run(m, "INSERT INTO t.k (v) VALUES ('trk1')") == 0, "INSERT after asking");
	check(tracked(m, "last_gtid", val, sizeof(val), &nvars) && gtid_like(val),
	      "a client that asked sees last_gtid with a GTID after an INSERT");
	printf("measured: asked: last_gtid = '%s' (%d tracked variables)\n", val, nvars);
	check(count_v(m, "trk1") == 1, "asked: the next read sees the write");
	mysql_close(m);

	/* asked for others: those pass, last_gtid is hidden, and the proxy's
	 * tracking survives the client replacing the list (read-your-writes) */
	m = conn(port);
	check(run(m, "SET session_track_system_variables='autocommit,time_zone'") == 0,
	      "SET session_track_system_variables='autocommit,time_zone'");
	check(run(m, "INSERT INTO t.k (v) VALUES ('trk2')") == 0, "INSERT after asking for others");
	check(!tracked(m, "last_gtid", val, sizeof(val), &nvars),
	      "a client that asked for other variables sees no last_gtid");
	check(count_v(m, "trk2") == 1, "others: the next read sees the write");
	check(run(m, "SET time_zone='+03:00'") == 0 &&
	          tracked(m, "time_zone", val, sizeof(val), &nvars) && !strcmp(val, "+03:00"),
	      "a variable the client tracks passes through");
	check(run(m, "INSERT INTO t.k (v) VALUES ('trk3'); SET time_zone='+04:00'") == 0,
	      "INSERT and SET in one multi-statement");
	mysql_close(m);

	/* the proxy's state-change tracking (session_track_state_change, which
	 * it reads to keep a session on the writer after a routine changed its
	 * state) stays hidden unless the client turned it on itself */
	m = conn(port);
	check(run(m, "CREATE OR REPLACE PROCEDURE t.pt_var() SET @pt = 1") == 0,
	      "CREATE PROCEDURE t.pt_var");
	check(run(m, "CALL t.pt_var()") == 0, "CALL t.pt_var() without asking");
	check(!state_tracked(m), "a client that did not ask sees no state change after the CALL");
	mysql_close(m);
	m = conn(port);
	check(run(m, "SET session_track_state_change = ON") == 0,
	      "SET session_track_state_change = ON");
	check(run(m, "SELECT 1") == 0 && run(m, "CALL t.pt_var()") == 0 && state_tracked(m),
	      "a client that asked sees the state change of the CALL");
	mysql_close(m);

	/* asked for everything: '*' */
	m = conn(port);
	check(run(m, "SET session_track_system_variables='*'") == 0,
	      "SET session_track_system_variables='*'");
	check(run(m, "INSERT INTO t.k (v) VALUES ('trk4')") == 0, "INSERT after asking for '*'");
	check(tracked(m, "last_gtid", val, sizeof(val), &nvars) && gtid_like(val),
	      "a client that asked for '*' sees last_gtid");
	mysql_close(m);
	printf("# proxy_track: done\n");
	return failed;
}
