/*
 * probe.c - see probe.h. A small state machine over the _start/_cont pairs of
 * libmysqlclient: connect (only when no connection is kept), SELECT
 * @@read_only, @@super_read_only (MySQL; @@read_only alone where the server
 * has no such variable, as MariaDB), then the replication status in the
 * first form the server knows: SHOW ALL REPLICAS STATUS (MariaDB >= 10.5,
 * every source), SHOW REPLICA STATUS (MySQL >= 8.0.22, where 8.4 removed
 * SHOW SLAVE STATUS), SHOW ALL SLAVES STATUS (older MariaDB), SHOW SLAVE
 * STATUS. A form refused as a syntax error is not tried again on that
 * connection's server. Every step waits on the connection's socket in the
 * loop; the probe's deadline is a loop timer.
 */
#include "probe/probe.h"

#include <mysql.h>
#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/evloop.h"

enum step { ST_IDLE = 0, ST_CONNECT, ST_Q_RO, ST_S_RO, ST_Q_REPL, ST_S_REPL };

struct probe {
	struct evloop *l;
	char *host, *user, *password;
	char *next_user, *next_password; /* new credentials, taken at the next start */
	bool tls, next_tls;              /* probe_set_tls: next_tls taken at the next start */
	uint16_t port;
	probe_done_fn fn;
	void *arg;

	MYSQL *m;
	bool connected;
	int repl_form; /* index into repl_forms: the first one not refused */
	bool super_ro; /* SELECT @@super_read_only works here */
	enum step step;
	bool pending; /* a *_start returned a wait status: *_cont must follow */
	int fd;       /* registered in the loop, -1: none */
	uint64_t deadline_timer, lib_timer;
	unsigned timeout_ms;
	uint64_t start_us;
	struct probe_result res;

	/* results of the pending call */
	MYSQL *conn_ret;
	int query_ret;
	MYSQL_RES *store_ret;
};

static const char *const repl_forms[] = {
    "SHOW ALL REPLICAS STATUS",
    "SHOW REPLICA STATUS",
    "SHOW ALL SLAVES STATUS",
    "SHOW SLAVE STATUS",
};
#define NFORMS     (sizeof(repl_forms) / sizeof(repl_forms[0]))
#define Q_RO       "SELECT @@read_only"
#define Q_RO_SUPER "SELECT @@read_only, @@super_read_only"

static void step_wait(struct probe *p, int status);
static void step_done(struct probe *p);

static void unwatch(struct probe *p)
{
	if (p->fd >= 0)
		evloop_del_fd(p->l, p->fd);
	p->fd = -1;
	if (p->lib_timer)
		evloop_del_timer(p->l, p->lib_timer);
	p->lib_timer = 0;
}

static int call_cont(struct probe *p, int flags)
{
	switch (p->step) {
	case ST_CONNECT:
		return mysql_real_connect_cont(&p->conn_ret, p->m, flags);
	case ST_Q_RO:
	case ST_Q_REPL:
		return mysql_real_query_cont(&p->query_ret, p->m, flags);
	case ST_S_RO:
	case ST_S_REPL:
		return mysql_store_result_cont(&p->store_ret, p->m, flags);
	default:
		return 0;
	}
}

/*
 * Drops the connection without ever blocking: the socket is shut down first,
 * so that a pending call and the COM_QUIT of mysql_close() fail at once
 * instead of waiting on a server that does not answer.
 */
static void disconnect(struct probe *p)
{
	unwatch(p);
	if (!p->m)
		return;
	int fd = (int)mysql_get_socket(p->m);
	if (fd >= 0)
		shutdown(fd, SHUT_RDWR);
	for (int i = 0; i < 16 && p->pending; i++)
		p->pending = call_cont(p, MYSQL_WAIT_READ | MYSQL_WAIT_WRITE) != 0;
	if (p->store_ret)
		mysql_free_result(p->store_ret);
	p->store_ret = NULL;
	mysql_close(p->m);
	p->m = NULL;
	p->connected = false;
}

static void finish(struct probe *p, bool ok)
{
	if (!ok)
		disconnect(p);
	else
		unwatch(p);
	if (p->deadline_timer)
		evloop_del_timer(p->l, p->deadline_timer);
	p->deadline_timer = 0;
	p->res.connect_failed = !ok && p->step == ST_CONNECT;
	p->step = ST_IDLE;
	p->res.ok = ok;
	p->res.latency_ms = (double)(mono_us() - p->start_us) / 1000.0;
	/* Last: the callback may free the probe. */
	p->fn(p->arg, &p->res);
}

/* The server refused the monitoring user: its grants or password. */
static bool refused(unsigned err)
{
	return err == ER_ACCESS_DENIED_ERROR || err == ER_DBACCESS_DENIED_ERROR ||
	       err == ER_TABLEACCESS_DENIED_ERROR || err == ER_SPECIFIC_ACCESS_DENIED_ERROR ||
	       err == ER_ACCESS_DENIED_NO_PASSWORD_ERROR;
}

static void fail(struct probe *p, const char *what)
{
	p->res.misconfigured = p->m && refused(mysql_errno(p->m));
	if (p->m && mysql_errno(p->m))
		snprintf(p->res.error, sizeof(p->res.error), "%s: %s", what, mysql_error(p->m));
	else
		snprintf(p->res.error, sizeof(p->res.error), "%s", what);
	finish(p, false);
}

static void on_fd(struct evloop *l, int fd, unsigned events, void *arg)
{
	struct probe *p = arg;
	int flags = 0;
	if (events & EV_READ)
		flags |= MYSQL_WAIT_READ;
	if (events & EV_WRITE)
		flags |= MYSQL_WAIT_WRITE;
	if (p->lib_timer)
		evloop_del_timer(l, p->lib_timer);
	p->lib_timer = 0;
	step_wait(p, call_cont(p, flags));
}

static void on_lib_timer(struct evloop *l, uint64_t id, void *arg)
{
	struct probe *p = arg;
	p->lib_timer = 0;
	step_wait(p, call_cont(p, MYSQL_WAIT_TIMEOUT));
}

static void on_deadline(struct evloop *l, uint64_t id, void *arg)
{
	struct probe *p = arg;
	char what[64];
	p->deadline_timer = 0;
	snprintf(what, sizeof(what), "no answer within %u ms", p->timeout_ms);
	snprintf(p->res.error, sizeof(p->res.error), "%s", what);
	finish(p, false);
}

/* Waits for what the library asked for, or moves on when the call is done. */
static void step_wait(struct probe *p, int status)
{
	p->pending = status != 0;
	if (status == 0) {
		step_done(p);
		return;
	}
	int fd = (int)mysql_get_socket(p->m);
	unsigned ev = 0;
	if (status & (MYSQL_WAIT_READ | MYSQL_WAIT_EXCEPT))
		ev |= EV_READ;
	if (status & MYSQL_WAIT_WRITE)
		ev |= EV_WRITE;
	if (fd != p->fd) {
		if (p->fd >= 0)
			evloop_del_fd(p->l, p->fd);
		p->fd = -1;
		if (fd >= 0 && ev && evloop_add_fd(p->l, fd, ev, on_fd, p) < 0) {
			fail(p, "cannot watch the socket");
			return;
		}
		if (fd >= 0 && ev)
			p->fd = fd;
	} else if (fd >= 0 && evloop_mod_fd(p->l, fd, ev) < 0) {
		fail(p, "cannot watch the socket");
		return;
	}
	if (status & MYSQL_WAIT_TIMEOUT) {
		unsigned ms = mysql_get_timeout_value_ms(p->m);
		p->lib_timer = evloop_add_timer(p->l, ms, on_lib_timer, p);
	}
}

static void begin_query(struct probe *p, enum step st, const char *sql)
{
	p->step = st;
	step_wait(p, mysql_real_query_start(&p->query_ret, p->m, sql, strlen(sql)));
}

static void begin_store(struct probe *p, enum step st)
{
	p->step = st;
	p->store_ret = NULL;
	step_wait(p, mysql_store_result_start(&p->store_ret, p->m));
}

static void begin_connect(struct probe *p)
{
	p->m = mysql_init(NULL);
	if (!p->m) {
		fail(p, "out of memory");
		return;
	}
	unsigned timeout_s = (p->timeout_ms + 999) / 1000 + 1;
	mysql_options(p->m, MYSQL_OPT_NONBLOCK, 0);
	mysql_options(p->m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout_s);
	if (p->tls) {
		my_bool on = 1;

		if (mysql_optionsv(p->m, MYSQL_OPT_SSL_ENFORCE, &on) != 0) {
			fail(p, "cannot ask for TLS");
			return;
		}
	}
	p->step = ST_CONNECT;
	step_wait(p, mysql_real_connect_start(&p->conn_ret, p->m, p->host, p->user, p->password,
	                                      NULL, p->port, NULL, 0));
}

static int field_index(MYSQL_RES *r, const char *name)
{
	unsigned n = mysql_num_fields(r);
	MYSQL_FIELD *f = mysql_fetch_fields(r);
	for (unsigned i = 0; i < n; i++)
		if (strcasecmp(f[i].name, name) == 0)
			return (int)i;
	return -1;
}

/*
 * A replica whose SQL thread runs and whose IO thread runs or is reconnecting
 * (its primary is gone) still serves reads: it has applied all it received.
 * Its lag is then unknown to the server (NULL); count it as 0 so that reads
 * keep working while there is no writer, as docs/STEERING.md says.
 */
static void parse_repl(struct probe *p, MYSQL_RES *r)
{
	/* MariaDB and MySQL before 8.0.22 name the columns Slave_/_Master,
	 * MySQL's SHOW REPLICA STATUS Replica_/_Source. */
	int io = field_index(r, "Slave_IO_Running");
	int sql = field_index(r, "Slave_SQL_Running");
	int sbm = field_index(r, "Seconds_Behind_Master");
	if (io < 0)
		io = field_index(r, "Replica_IO_Running");
	if (sql < 0)
		sql = field_index(r, "Replica_SQL_Running");
	if (sbm < 0)
		sbm = field_index(r, "Seconds_Behind_Source");
	MYSQL_ROW row;
	bool any = false, running = true;
	double lag = 0;
	if (io < 0 || sql < 0 || sbm < 0)
		return;
	while ((row = mysql_fetch_row(r))) {
		any = true;
		bool io_ok =
		    row[io] && (strcmp(row[io], "Yes") == 0 || strcmp(row[io], "Connecting") == 0);
		bool sql_ok = row[sql] && strcmp(row[sql], "Yes") == 0;
		if (!io_ok || !sql_ok)
			running = false;
		if (row[sbm] && atof(row[sbm]) > lag)
			lag = atof(row[sbm]);
	}
	p->res.is_replica = any;
	p->res.replicating = any && running;
	p->res.has_lag = p->res.replicating;
	p->res.lag_s = p->res.has_lag ? lag : 0;
}

/* A query step ended: fetch its result next, or fail the probe on `what`. */
static void query_done(struct probe *p, enum step store, const char *what)
{
	if (p->query_ret) {
		fail(p, what);
		return;
	}
	begin_store(p, store);
}

/* The result a store step fetched (the caller frees it), or NULL once the
 * probe has failed on `what`. */
static MYSQL_RES *take_result(struct probe *p, const char *what)
{
	MYSQL_RES *r = p->store_ret;

	p->store_ret = NULL;
	if (!r)
		fail(p, what);
	return r;
}

static void parse_read_only(struct probe *p, MYSQL_RES *r)
{
	MYSQL_ROW row = mysql_fetch_row(r);

	p->res.read_only = row && row[0] && strcmp(row[0], "0") != 0;
	if (row && mysql_num_fields(r) > 1 && row[1] && strcmp(row[1], "0") != 0)
		p->res.read_only = true;
}

static void step_done(struct probe *p)
{
	const char *ro_query = "SELECT @@read_only";
	MYSQL_RES *r;

	switch (p->step) {
	case ST_CONNECT:
		if (!p->conn_ret) {
			fail(p, "connect");
			return;
		}
		p->connected = true;
		begin_query(p, ST_Q_RO, p->super_ro ? Q_RO_SUPER : Q_RO);
		return;
	case ST_Q_RO:
		if (p->query_ret && p->super_ro &&
		    mysql_errno(p->m) == ER_UNKNOWN_SYSTEM_VARIABLE) {
			p->super_ro = false; /* MariaDB: no super_read_only */
			begin_query(p, ST_Q_RO, Q_RO);
			return;
		}
		query_done(p, ST_S_RO, ro_query);
		return;
	case ST_S_RO:
		if (!(r = take_result(p, ro_query)))
			return;
		parse_read_only(p, r);
		mysql_free_result(r);
		begin_query(p, ST_Q_REPL, repl_forms[p->repl_form]);
		return;
	case ST_Q_REPL:
		if (p->query_ret && (size_t)p->repl_form + 1 < NFORMS &&
		    mysql_errno(p->m) == ER_PARSE_ERROR) {
			p->repl_form++;
			begin_query(p, ST_Q_REPL, repl_forms[p->repl_form]);
			return;
		}
		query_done(p, ST_S_REPL, repl_forms[p->repl_form]);
		return;
	case ST_S_REPL:
		if (!(r = take_result(p, repl_forms[p->repl_form])))
			return;
		parse_repl(p, r);
		mysql_free_result(r);
		finish(p, true);
		return;
	case ST_IDLE:
		return;
	}
}

struct probe *probe_new(struct evloop *l, const char *host, uint16_t port, const char *user,
                        const char *password, probe_done_fn fn, void *arg)
{
	struct probe *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->l = l;
	p->host = strdup(host);
	p->user = strdup(user);
	p->password = strdup(password);
	p->port = port;
	p->fn = fn;
	p->arg = arg;
	p->fd = -1;
	p->super_ro = true;
	if (!p->host || !p->user || !p->password) {
		probe_free(p);
		return NULL;
	}
	return p;
}

/* A password is wiped before its memory goes back. */
static void free_secret(char *s)
{
	if (s)
		explicit_bzero(s, strlen(s));
	free(s);
}

void probe_free(struct probe *p)
{
	if (!p)
		return;
	disconnect(p);
	if (p->deadline_timer)
		evloop_del_timer(p->l, p->deadline_timer);
	free(p->host);
	free(p->user);
	free_secret(p->password);
	free(p->next_user);
	free_secret(p->next_password);
	free(p);
}

int probe_set_credentials(struct probe *p, const char *user, const char *password)
{
	char *u = strdup(user), *pw = strdup(password);

	if (!u || !pw) {
		free(u);
		free_secret(pw);
		return -1;
	}
	free(p->next_user);
	free_secret(p->next_password);
	p->next_user = u;
	p->next_password = pw;
	return 0;
}

/* A running connect may still read the old strings: they are swapped only
 * between probes, and the kept connection (logged in as the old user) goes. */
static void take_credentials(struct probe *p)
{
	if (p->next_tls != p->tls) {
		disconnect(p);
		p->tls = p->next_tls;
	}
	if (!p->next_user)
		return;
	disconnect(p);
	free(p->user);
	free_secret(p->password);
	p->user = p->next_user;
	p->password = p->next_password;
	p->next_user = p->next_password = NULL;
}

void probe_set_tls(struct probe *p, bool on)
{
	p->next_tls = on;
}

bool probe_busy(const struct probe *p)
{
	return p->step != ST_IDLE;
}

int probe_start(struct probe *p, unsigned timeout_ms)
{
	if (probe_busy(p))
		return -1;
	take_credentials(p);
	memset(&p->res, 0, sizeof(p->res));
	p->timeout_ms = timeout_ms;
	p->start_us = mono_us();
	p->deadline_timer = evloop_add_timer(p->l, timeout_ms, on_deadline, p);
	if (!p->deadline_timer) {
		snprintf(p->res.error, sizeof(p->res.error), "no timer");
		return -1;
	}
	if (!p->connected)
		begin_connect(p);
	else
		begin_query(p, ST_Q_RO, p->super_ro ? Q_RO_SUPER : Q_RO);
	return 0;
}

int probe_start_fresh(struct probe *p, unsigned timeout_ms)
{
	if (probe_busy(p))
		return -1;
	/* The kept-open connection would still answer when the server's listener
	 * is gone or its backlog is full: only a new connection sees what a
	 * client sees. */
	disconnect(p);
	return probe_start(p, timeout_ms);
}
