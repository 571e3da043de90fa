/*
 * chaos_client.c - the load client of the chaos harness (tests/chaos/run.sh).
 *
 * Writer threads insert rows (writer_id, seq, executed_on = @@server_id,
 * t_client_send, t_server = NOW(6)) into chaos.w and record for every row
 * whether the server acknowledged it (OK packet read), refused it (error
 * code), or whether the outcome is unknown (connection lost or timed out
 * after the statement was sent). Reader threads do point reads and record
 * the server that answered (@@server_id) or the error. Every event is one
 * line of a CSV ledger:
 *
 *   kind,path,mode,writer_id,seq,t_send_us,t_done_us,outcome,code,server_id
 *
 * kind: w (autocommit insert), t (insert inside a 3-insert transaction; its
 * outcome is the COMMIT's), r (read). outcome: ok, err (the server refused,
 * code = its error number), unknown (sent, no answer, or an ERR saying the
 * connection broke: code = that error), connfail (no connection: never sent). Times: CLOCK_REALTIME
 * in microseconds.
 *
 * Modes: persistent (one connection a thread, reconnected after any
 * error), perstmt (a new connection for every statement or transaction),
 * txn (persistent, transactions of 3 inserts). --ps uses prepared
 * statements for the inserts. The client runs until SIGTERM/SIGINT or
 * --seconds, then flushes the ledger and prints one summary line.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <mysql.h>
#include <errmsg.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum mode { M_PERSISTENT, M_PERSTMT, M_TXN };
static const char *const mode_names[] = {"persistent", "perstmt", "txn"};

static struct {
	const char *host, *user, *pass, *path, *ledger;
	unsigned port;
	int writers, readers, writer_base, pause_ms, timeout_s, seconds;
	enum mode mode;
	bool ps, create;
} O = {.host = "127.0.0.1",
       .user = "app",
       .pass = "app",
       .path = "direct",
       .port = 3306,
       .writers = 2,
       .readers = 1,
       .writer_base = 1,
       .pause_ms = 20,
       .timeout_s = 3,
       .mode = M_PERSISTENT};

static atomic_bool stop;
static FILE *ledger;
static pthread_mutex_t ledger_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_long n_ok, n_err, n_unknown, n_connfail, r_ok, r_fail;

static int64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&stop, true);
}

static void record(char kind, int wid, long seq, int64_t t_send, int64_t t_done,
                   const char *outcome, unsigned code, unsigned long server_id)
{
	pthread_mutex_lock(&ledger_mu);
	fprintf(ledger, "%c,%s,%s,%d,%ld,%" PRId64 ",%" PRId64 ",%s,%u,%lu\n", kind, O.path,
	        mode_names[O.mode], wid, seq, t_send, t_done, outcome, code, server_id);
	pthread_mutex_unlock(&ledger_mu);
}

/* Sleeps ms unless asked to stop. */
static void pause_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
	while (!atomic_load(&stop) && nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static MYSQL *connect_db(unsigned *err)
{
	MYSQL *m = mysql_init(NULL);
	unsigned t = (unsigned)O.timeout_s;
	if (!m) {
		*err = CR_OUT_OF_MEMORY;
		return NULL;
	}
	if (mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &t) ||
	    mysql_options(m, MYSQL_OPT_READ_TIMEOUT, &t) ||
	    mysql_options(m, MYSQL_OPT_WRITE_TIMEOUT, &t)) {
		*err = CR_UNKNOWN_ERROR;
		mysql_close(m);
		return NULL;
	}
	if (!mysql_real_connect(m, O.host, O.user, O.pass, "chaos", O.port, NULL, 0)) {
		*err = mysql_errno(m);
		mysql_close(m);
		return NULL;
	}
	return m;
}

/* A client error after the statement was sent: the outcome is unknown.
 * Server errors (below 2000) are refusals. */
static bool is_client_error(unsigned e)
{
	/* Server codes that say the connection broke, not that the statement
	 * was refused (a proxy sends them for a backend lost mid-statement):
	 * ER_NET_READ_ERROR..ER_NET_WRITE_INTERRUPTED, ER_SERVER_SHUTDOWN,
	 * ER_CONNECTION_KILLED. */
	if ((e >= 1158 && e <= 1161) || e == 1053 || e == 1927)
		return true;
	return e >= 2000 && e < 3000;
}

static const char *outcome_of(unsigned e)
{
	return e == 0 ? "ok" : is_client_error(e) ? "unknown" : "err";
}

static void count(unsigned e, int rows)
{
	if (e == 0)
		atomic_fetch_add(&n_ok, rows);
	else if (is_client_error(e))
		atomic_fetch_add(&n_unknown, rows);
	else
		atomic_fetch_add(&n_err, rows);
}

struct wconn {
	MYSQL *m;
	MYSQL_STMT *st;
};

static void wconn_close(struct wconn *c)
{
	if (c->st)
		mysql_stmt_close(c->st);
	if (c->m)
		mysql_close(c->m);
	c->st = NULL;
	c->m = NULL;
}

static const char INSERT_PS[] = "INSERT INTO chaos.w (writer_id, seq, executed_on, t_client_send, "
                                "t_server) VALUES (?, ?, @@server_id, ?, NOW(6))";

/* One insert on c; returns 0 or the error number. */
static unsigned do_insert(struct wconn *c, int wid, long seq, int64_t t_send)
{
	if (!O.ps) {
		char q[256];
		snprintf(
		    q, sizeof(q),
		    "INSERT INTO chaos.w (writer_id, seq, executed_on, t_client_send, t_server) "
		    "VALUES (%d, %ld, @@server_id, %" PRId64 ", NOW(6))",
		    wid, seq, t_send);
		return mysql_query(c->m, q) ? mysql_errno(c->m) : 0;
	}
	if (!c->st) {
		c->st = mysql_stmt_init(c->m);
		if (!c->st)
			return CR_OUT_OF_MEMORY;
		if (mysql_stmt_prepare(c->st, INSERT_PS, sizeof(INSERT_PS) - 1)) {
			unsigned e = mysql_stmt_errno(c->st);
			mysql_stmt_close(c->st);
			c->st = NULL;
			return e ? e : CR_UNKNOWN_ERROR;
		}
	}
	long long w = wid, s = seq, t = t_send;
	MYSQL_BIND b[3];
	memset(b, 0, sizeof(b));
	b[0].buffer_type = b[1].buffer_type = b[2].buffer_type = MYSQL_TYPE_LONGLONG;
	b[0].buffer = &w;
	b[1].buffer = &s;
	b[2].buffer = &t;
	if (mysql_stmt_bind_param(c->st, b) || mysql_stmt_execute(c->st))
		return mysql_stmt_errno(c->st) ? mysql_stmt_errno(c->st) : CR_UNKNOWN_ERROR;
	return 0;
}

static unsigned do_query(MYSQL *m, const char *q)
{
	return mysql_query(m, q) ? mysql_errno(m) : 0;
}

static void *writer_main(void *arg)
{
	int wid = (int)(intptr_t)arg;
	struct wconn c = {0};
	long seq = 0;

	while (!atomic_load(&stop)) {
		int64_t t_send = now_us();
		unsigned e = 0;
		int nrows = O.mode == M_TXN ? 3 : 1;
		if (!c.m) {
			c.m = connect_db(&e);
			if (!c.m) {
				for (int i = 0; i < nrows; i++)
					record(O.mode == M_TXN ? 't' : 'w', wid, ++seq, t_send,
					       now_us(), "connfail", e, 0);
				atomic_fetch_add(&n_connfail, nrows);
				pause_ms(O.pause_ms);
				continue;
			}
		}
		if (O.mode == M_TXN) {
			long first = seq + 1;
			bool commit_sent = false;
			e = do_query(c.m, "BEGIN");
			for (int i = 0; i < 3 && !e; i++)
				e = do_insert(&c, wid, first + i, t_send);
			if (!e) {
				commit_sent = true;
				e = do_query(c.m, "COMMIT");
			} else if (!is_client_error(e)) {
				(void)do_query(c.m, "ROLLBACK");
			}
			int64_t t_done = now_us();
			/* A failure before COMMIT was sent is a refusal of the whole
			 * transaction even when the connection was lost: nothing was
			 * committed. Only a COMMIT without an answer is unknown. */
			const char *out = commit_sent ? outcome_of(e) : "err";
			for (int i = 0; i < 3; i++)
				record('t', wid, first + i, t_send, t_done, out, e, 0);
			seq += 3;
		} else {
			e = do_insert(&c, wid, ++seq, t_send);
			record('w', wid, seq, t_send, now_us(), outcome_of(e), e, 0);
		}
		if (O.mode == M_TXN && e && !is_client_error(e))
			atomic_fetch_add(&n_err, nrows);
		else
			count(e, nrows);
		if (e || O.mode == M_PERSTMT)
			wconn_close(&c);
		pause_ms(O.pause_ms);
	}
	wconn_close(&c);
	return NULL;
}

static void *reader_main(void *arg)
{
	int rid = (int)(intptr_t)arg;
	MYSQL *m = NULL;
	long n = 0;
	unsigned seed = (unsigned)rid * 2654435761u ^ (unsigned)now_us();

	while (!atomic_load(&stop)) {
		int64_t t_send = now_us();
		unsigned e = 0;
		unsigned long sid = 0;
		n++;
		if (!m) {
			m = connect_db(&e);
			if (!m) {
				record('r', rid, n, t_send, now_us(), "connfail", e, 0);
				atomic_fetch_add(&r_fail, 1);
				pause_ms(O.pause_ms);
				continue;
			}
		}
		char q[160];
		snprintf(
		    q, sizeof(q),
		    "SELECT @@server_id, COUNT(*) FROM chaos.w WHERE writer_id = %d AND seq = %u",
		    O.writer_base + (int)(rand_r(&seed) % (unsigned)(O.writers ? O.writers : 1)),
		    rand_r(&seed) % 1000);
		if (mysql_query(m, q) == 0) {
			MYSQL_RES *res = mysql_store_result(m);
			MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
			if (row && row[0])
				sid = strtoul(row[0], NULL, 10);
			else
				e = mysql_errno(m) ? mysql_errno(m) : CR_UNKNOWN_ERROR;
			if (res)
				mysql_free_result(res);
		} else {
			e = mysql_errno(m);
		}
		record('r', rid, n, t_send, now_us(), e ? outcome_of(e) : "ok", e, sid);
		atomic_fetch_add(e ? &r_fail : &r_ok, 1);
		if (e || O.mode == M_PERSTMT) {
			mysql_close(m);
			m = NULL;
		}
		pause_ms(O.pause_ms);
	}
	if (m)
		mysql_close(m);
	return NULL;
}

static int create_table(void)
{
	unsigned e = 0;
	MYSQL *m = mysql_init(NULL);
	if (!m || !mysql_real_connect(m, O.host, O.user, O.pass, NULL, O.port, NULL, 0)) {
		fprintf(stderr, "chaos-client: connect %s:%u: %s\n", O.host, O.port,
		        m ? mysql_error(m) : "out of memory");
		if (m)
			mysql_close(m);
		return 1;
	}
	if ((e = do_query(m, "CREATE DATABASE IF NOT EXISTS chaos")) ||
	    (e = do_query(m, "CREATE TABLE IF NOT EXISTS chaos.w (writer_id INT NOT NULL, "
	                     "seq BIGINT NOT NULL, executed_on INT NOT NULL, "
	                     "t_client_send BIGINT NOT NULL, t_server DATETIME(6) NOT NULL, "
	                     "PRIMARY KEY (writer_id, seq)) ENGINE=InnoDB")))
		fprintf(stderr, "chaos-client: create chaos.w: %s\n", mysql_error(m));
	mysql_close(m);
	return e ? 1 : 0;
}

static void usage(void)
{
	fprintf(
	    stderr,
	    "usage: chaos-client [-h HOST] [-P PORT] [-u USER] [-p PASS] [--path NAME]\n"
	    "  [--writers N] [--readers N] [--writer-base ID] [--mode persistent|perstmt|txn]\n"
	    "  [--ps] [--pause-ms N] [--timeout-s N] [--seconds N] [--ledger FILE] | --create\n");
	exit(2);
}

static int num(const char *s, int min, int max)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < min || v > max) {
		fprintf(stderr, "chaos-client: bad number '%s' (%d..%d)\n", s, min, max);
		exit(2);
	}
	return (int)v;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"path", 1, NULL, 'n'},        {"writers", 1, NULL, 'w'},   {"readers", 1, NULL, 'r'},
	    {"writer-base", 1, NULL, 'b'}, {"mode", 1, NULL, 'm'},      {"ps", 0, NULL, 'S'},
	    {"pause-ms", 1, NULL, 'z'},    {"timeout-s", 1, NULL, 't'}, {"seconds", 1, NULL, 's'},
	    {"ledger", 1, NULL, 'l'},      {"create", 0, NULL, 'C'},    {NULL, 0, NULL, 0}};
	int opt;
	while ((opt = getopt_long(argc, argv, "h:P:u:p:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			O.host = optarg;
			break;
		case 'P':
			O.port = (unsigned)num(optarg, 1, 65535);
			break;
		case 'u':
			O.user = optarg;
			break;
		case 'p':
			O.pass = optarg;
			break;
		case 'n':
			O.path = optarg;
			break;
		case 'w':
			O.writers = num(optarg, 0, 256);
			break;
		case 'r':
			O.readers = num(optarg, 0, 256);
			break;
		case 'b':
			O.writer_base = num(optarg, 0, 1 << 30);
			break;
		case 'S':
			O.ps = true;
			break;
		case 'z':
			O.pause_ms = num(optarg, 0, 60000);
			break;
		case 't':
			O.timeout_s = num(optarg, 1, 3600);
			break;
		case 's':
			O.seconds = num(optarg, 0, 1 << 30);
			break;
		case 'l':
			O.ledger = optarg;
			break;
		case 'C':
			O.create = true;
			break;
		case 'm':
			if (!strcmp(optarg, "persistent"))
				O.mode = M_PERSISTENT;
			else if (!strcmp(optarg, "perstmt"))
				O.mode = M_PERSTMT;
			else if (!strcmp(optarg, "txn"))
				O.mode = M_TXN;
			else {
				fprintf(stderr, "chaos-client: unknown mode '%s'\n", optarg);
				return 2;
			}
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	if (mysql_library_init(0, NULL, NULL)) {
		fprintf(stderr, "chaos-client: mysql_library_init failed\n");
		return 1;
	}
	if (O.create) {
		int rc = create_table();
		mysql_library_end();
		return rc;
	}
	if (!O.ledger) {
		fprintf(stderr, "chaos-client: --ledger FILE is required\n");
		return 2;
	}
	ledger = fopen(O.ledger, "a");
	if (!ledger) {
		fprintf(stderr, "chaos-client: %s: %s\n", O.ledger, strerror(errno));
		return 1;
	}
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTERM, &sa, NULL) || sigaction(SIGINT, &sa, NULL)) {
		perror("chaos-client: sigaction");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);

	int n = O.writers + O.readers;
	pthread_t *th = calloc((size_t)(n ? n : 1), sizeof(*th));
	if (!th) {
		fprintf(stderr, "chaos-client: out of memory\n");
		return 1;
	}
	int started = 0;
	for (int i = 0; i < n; i++) {
		void *(*fn)(void *) = i < O.writers ? writer_main : reader_main;
		intptr_t id = i < O.writers ? O.writer_base + i : i - O.writers + 1;
		int rc = pthread_create(&th[i], NULL, fn, (void *)id);
		if (rc) {
			fprintf(stderr, "chaos-client: pthread_create: %s\n", strerror(rc));
			atomic_store(&stop, true);
			break;
		}
		started++;
	}
	int64_t end = O.seconds ? now_us() + (int64_t)O.seconds * 1000000 : 0;
	while (!atomic_load(&stop) && (!end || now_us() < end))
		pause_ms(100);
	atomic_store(&stop, true);
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	free(th);
	int rc = fclose(ledger) ? 1 : 0;
	printf("chaos-client %s %s%s: writes ok %ld err %ld unknown %ld connfail %ld, "
	       "reads ok %ld failed %ld\n",
	       O.path, mode_names[O.mode], O.ps ? " ps" : "", atomic_load(&n_ok),
	       atomic_load(&n_err), atomic_load(&n_unknown), atomic_load(&n_connfail),
	       atomic_load(&r_ok), atomic_load(&r_fail));
	mysql_library_end();
	return started == n ? rc : 1;
}
