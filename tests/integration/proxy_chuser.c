/*
 * proxy_chuser.c - COM_CHANGE_USER (mysql_change_user) with libmysqlclient,
 * for proxy_chuser.sh, through 6450 or straight to a server (to compare):
 * a session of app with a user variable, a temporary table, an open
 * transaction holding an uncommitted row and a prepared statement changes
 * to app_admin: CURRENT_USER() is app_admin's, the schema the one asked
 * for, and the variable, the temporary table, the transaction and the
 * statement are gone; a write of app_admin (which records CURRENT_USER())
 * goes through; a change with a wrong password fails with 1045, and what
 * the connection does after it (its user, a variable set before, its
 * schema) is printed ("after a failed change: ...")
 * for the script to compare with the server's; a change back to app works
 * on a new connection. Prints "ok - ..." / "not ok - ..."; exit 1 on a
 * failure.
 *
 *   proxy_chuser PORT [PLUGIN]    PLUGIN: the client's default_auth
 */
#include <mysql.h>
#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failed;
static const char *plugin;

static void check(int ok, const char *what)
{
	printf("%s - chuser: %s\n", ok ? "ok" : "not ok", what);
	if (!ok)
		failed = 1;
}

static MYSQL *conn(int port, const char *user, const char *pw)
{
	MYSQL *m = mysql_init(NULL);
	unsigned int timeout = 20;

	if (!m) {
		fprintf(stderr, "mysql_init failed\n");
		exit(1);
	}
	mysql_options(m, MYSQL_OPT_READ_TIMEOUT, &timeout);
	mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
	if (plugin)
		mysql_options(m, MYSQL_DEFAULT_AUTH, plugin);
	if (!mysql_real_connect(m, "127.0.0.1", user, pw, NULL, (unsigned)port, NULL, 0)) {
		fprintf(stderr, "connect as %s: %s\n", user, mysql_error(m));
		exit(1);
	}
	return m;
}

/* The first column of the first row of sql, into out ("" for NULL);
 * returns 0, or the error number. */
static unsigned one(MYSQL *m, const char *sql, char *out, size_t cap)
{
	MYSQL_RES *r;
	MYSQL_ROW row;

	out[0] = 0;
	if (mysql_query(m, sql))
		return mysql_errno(m);
	r = mysql_store_result(m);
	if (!r)
		return mysql_errno(m) ? mysql_errno(m) : 1;
	row = mysql_fetch_row(r);
	if (row && row[0])
		snprintf(out, cap, "%s", row[0]);
	mysql_free_result(r);
	return 0;
}

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

int main(int argc, char **argv)
{
	MYSQL *m;
	MYSQL_STMT *st;
	char v[256], what[512];
	unsigned e;
	int port;

	if (argc < 2) {
		fprintf(stderr, "usage: proxy_chuser PORT [PLUGIN]\n");
		return 2;
	}
	port = atoi(argv[1]);
	plugin = argc > 2 ? argv[2] : NULL;

	m = conn(port, "app", "app");
	one(m, "SELECT CURRENT_USER()", v, sizeof(v));
	check(!strcmp(v, "app@%"), "logged in as app");
	check(run(m, "SET @v = 42") == 0, "SET @v");
	check(run(m, "CREATE TEMPORARY TABLE t.tmp_cu (a INT)") == 0, "a temporary table");
	check(run(m, "BEGIN") == 0 && run(m, "INSERT INTO t.chuser VALUES (1, 'uncommitted')") == 0,
	      "a transaction with an uncommitted row");
	check((m->server_status & SERVER_STATUS_IN_TRANS) != 0, "in a transaction");
	st = mysql_stmt_init(m);
	check(st && mysql_stmt_prepare(st, "SELECT 1", 8) == 0, "a prepared statement");

	check(mysql_change_user(m, "app_admin", "app_admin", "t") == 0,
	      "mysql_change_user to app_admin");
	if (mysql_errno(m))
		printf("# change user: %s\n", mysql_error(m));
	one(m, "SELECT CURRENT_USER()", v, sizeof(v));
	snprintf(what, sizeof(what), "CURRENT_USER() is app_admin@%% (%s)", v);
	check(!strcmp(v, "app_admin@%"), what);
	one(m, "SELECT DATABASE()", v, sizeof(v));
	snprintf(what, sizeof(what), "DATABASE() is the one asked for, t (%s)", v);
	check(!strcmp(v, "t"), what);
	e = one(m, "SELECT @v", v, sizeof(v));
	check(e == 0 && v[0] == 0, "the user variable is gone");
	e = one(m, "SELECT COUNT(*) FROM t.tmp_cu", v, sizeof(v));
	snprintf(what, sizeof(what), "the temporary table is gone (error %u)", e);
	check(e == ER_NO_SUCH_TABLE, what);
	check((m->server_status & SERVER_STATUS_IN_TRANS) == 0, "no transaction");
	e = one(m, "SELECT COUNT(*) FROM t.chuser WHERE id = 1", v, sizeof(v));
	check(e == 0 && !strcmp(v, "0"), "the uncommitted row was rolled back");
	check(mysql_stmt_execute(st) != 0, "the prepared statement is gone");
	mysql_stmt_close(st);
	check(run(m, "INSERT INTO t.chuser VALUES (2, CURRENT_USER())") == 0,
	      "app_admin writes (CURRENT_USER() recorded)");

	check(run(m, "SET @w = 7") == 0, "app_admin sets @w");
	/* a wrong password: 1045; then what the connection does */
	check(mysql_change_user(m, "app", "wrong", NULL) != 0 && mysql_errno(m) == 1045,
	      "mysql_change_user with a wrong password: 1045");
	printf("# failed change: %u %s\n", mysql_errno(m), mysql_error(m));
	e = one(m,
	        "SELECT CONCAT(CURRENT_USER(), ', @w ', IFNULL(@w, 'NULL'), ', schema ', "
	        "IFNULL(DATABASE(), 'NULL'))",
	        v, sizeof(v));
	if (e)
		printf("after a failed change: error %u\n", e);
	else
		printf("after a failed change: user %s\n", v);
	mysql_close(m);

	/* and back to app, on a new connection of app_admin */
	m = conn(port, "app_admin", "app_admin");
	check(mysql_change_user(m, "app", "app", NULL) == 0, "mysql_change_user back to app");
	one(m, "SELECT CURRENT_USER()", v, sizeof(v));
	check(!strcmp(v, "app@%"), "CURRENT_USER() is app@%");
	one(m, "SELECT DATABASE()", v, sizeof(v));
	check(v[0] == 0, "no schema (none asked for)");
	e = one(m, "SELECT @@port", v, sizeof(v));
	printf("# a read of app after the change ran on port %s\n", v);
	mysql_close(m);
	printf("proxy_chuser: done\n");
	return failed;
}
