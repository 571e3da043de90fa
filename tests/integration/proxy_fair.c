/*
 * proxy_fair.c - many sessions through the 6450 proxy at once, each sending
 * the same statement a number of times, with libmysqlclient: all connect
 * first, then start together (a barrier), so that they queue for a backend
 * at its pool_max_per_backend cap. Prints per session and in all how many
 * statements were answered, how many got ERR 1040 (a wait for a slot ran
 * out) or another error, and how long the statements took (the wait for a
 * connection included): the longest, the median, the 99th percentile.
 * With LOG (the daemon's log at debug level) and N0: the sessions are
 * placed, N0 on the proxy's worker 0 and the rest on worker 1 (a session
 * that lands elsewhere, or on a worker that has its share, is closed and
 * another one opened: SO_REUSEPORT picks the worker by a hash), and the
 * figures are printed per worker too. proxy_fair.sh checks the figures.
 *
 *   proxy_fair PORT USER PASSWORD SESSIONS STATEMENTS SQL [LOG N0]
 */
#include <mysql.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

struct sess {
	int i;
	int worker; /* -1: not placed */
	MYSQL *m;
	int ok, err1040, other;
	long *ms; /* each statement's time, STATEMENTS of them */
	long max_ms, first_ms, last_ms;
};

static const char *sql;
static int nstmts;
static pthread_barrier_t start;
static long t_start;

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One statement; its result read whole. 0, or the error number. */
static unsigned run_one(MYSQL *m)
{
	MYSQL_RES *res;

	if (mysql_query(m, sql))
		return mysql_errno(m);
	res = mysql_store_result(m);
	if (!res && mysql_field_count(m) != 0)
		return mysql_errno(m);
	mysql_free_result(res);
	return 0;
}

static void *session(void *arg)
{
	struct sess *s = arg;
	int r = pthread_barrier_wait(&start);

	if (r != 0 && r != PTHREAD_BARRIER_SERIAL_THREAD)
		return NULL;
	s->first_ms = now_ms() - t_start;
	for (int k = 0; k < nstmts; k++) {
		long t0 = now_ms();
		unsigned e = run_one(s->m);
		long d = now_ms() - t0;
		s->ms[k] = d;
		if (d > s->max_ms)
			s->max_ms = d;
		if (e == 0)
			s->ok++;
		else if (e == 1040)
			s->err1040++;
		else {
			s->other++;
			fprintf(stderr, "session %d: %u %s\n", s->i, e, mysql_error(s->m));
			if (e == 2006 || e == 2013)
				break; /* the connection is gone */
		}
	}
	s->last_ms = now_ms() - t_start;
	return NULL;
}

/* The worker that accepted m, from the daemon's debug line "worker N: a
 * client from 127.0.0.1 port P" (P: m's own port); -1 when not found
 * within 2 s. */
static int worker_of(const char *log, MYSQL *m)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	char pat[80], line[512];

	if (getsockname((int)mysql_get_socket(m), (struct sockaddr *)&sa, &sl) < 0)
		return -1;
	snprintf(pat, sizeof(pat), "a client from 127.0.0.1 port %u\n", ntohs(sa.sin_port));
	for (int tries = 0; tries < 40; tries++) {
		FILE *f = fopen(log, "r");
		int w = -1;
		while (f && fgets(line, sizeof(line), f)) {
			const char *p = strstr(line, pat), *q = strstr(line, "proxy: worker ");
			if (p && q && sscanf(q, "proxy: worker %d:", &w) == 1)
				break;
			w = -1;
		}
		if (f)
			fclose(f);
		if (w >= 0)
			return w;
		usleep(50000);
	}
	return -1;
}

static MYSQL *connect_one(const char *port, const char *user, const char *pw)
{
	unsigned timeout = 60;
	MYSQL *m = mysql_init(NULL);

	if (!m)
		return NULL;
	if (mysql_options(m, MYSQL_OPT_READ_TIMEOUT, &timeout) ||
	    !mysql_real_connect(m, "127.0.0.1", user, pw, NULL, (unsigned)atoi(port), NULL, 0)) {
		fprintf(stderr, "connect: %s\n", mysql_error(m));
		mysql_close(m);
		return NULL;
	}
	return m;
}

/* Opens the sessions; with a log, n0 of them on worker 0 and the rest on
 * worker 1, within 400 tries. -1 on failure. */
static int open_sessions(struct sess *ss, int n, char **argv, const char *log, int n0)
{
	int have[2] = {0, 0}, want[2] = {n0, n - n0}, k = 0;

	for (int tries = 0; k < n && tries < 400; tries++) {
		MYSQL *m = connect_one(argv[1], argv[2], argv[3]);
		int w = -1;
		if (!m)
			return -1;
		if (log) {
			w = worker_of(log, m);
			if (w < 0 || w > 1 || have[w] >= want[w]) {
				mysql_close(m);
				continue;
			}
			have[w]++;
		}
		ss[k].m = m;
		ss[k].worker = w;
		k++;
	}
	return k == n ? 0 : -1;
}

/* Per worker: sessions, statements, mean and longest statement time. */
static void per_worker(const struct sess *ss, int n)
{
	for (int w = 0; w < 2; w++) {
		long sum = 0, max = 0;
		int ns = 0, nst = 0;
		for (int i = 0; i < n; i++) {
			if (ss[i].worker != w)
				continue;
			ns++;
			for (int k = 0; k < ss[i].ok + ss[i].err1040 + ss[i].other; k++, nst++) {
				sum += ss[i].ms[k];
				if (ss[i].ms[k] > max)
					max = ss[i].ms[k];
			}
		}
		if (ns)
			printf("worker %d: sessions %d statements %d mean_ms %ld max_ms %ld\n", w,
			       ns, nst, nst ? sum / nst : 0, max);
	}
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int n, ok = 0, e1040 = 0, other = 0, nms = 0;
	const char *log = argc == 9 ? argv[7] : NULL;
	struct sess *ss;
	pthread_t *th;
	long *all, max = 0;

	if (argc != 7 && argc != 9) {
		fprintf(stderr,
		        "usage: proxy_fair PORT USER PASSWORD SESSIONS STATEMENTS SQL [LOG N0]\n");
		return 2;
	}
	n = atoi(argv[4]);
	nstmts = atoi(argv[5]);
	sql = argv[6];
	if (n < 1 || nstmts < 1 || (log && (atoi(argv[8]) < 0 || atoi(argv[8]) > n)))
		return 2;
	ss = calloc((size_t)n, sizeof(*ss));
	th = calloc((size_t)n, sizeof(*th));
	all = calloc((size_t)n * (size_t)nstmts, sizeof(*all));
	if (!ss || !th || !all || mysql_library_init(0, NULL, NULL) ||
	    pthread_barrier_init(&start, NULL, (unsigned)n + 1) != 0) {
		fprintf(stderr, "proxy_fair: out of memory\n");
		return 1;
	}
	for (int i = 0; i < n; i++) {
		ss[i].i = i;
		ss[i].ms = all + (size_t)i * (size_t)nstmts;
	}
	if (open_sessions(ss, n, argv, log, log ? atoi(argv[8]) : 0) < 0) {
		fprintf(stderr, "proxy_fair: could not open the sessions%s\n",
		        log ? " on the workers asked for" : "");
		return 1;
	}
	for (int i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, session, &ss[i]) != 0) {
			fprintf(stderr, "proxy_fair: cannot start a thread\n");
			return 1;
		}
	t_start = now_ms();
	{
		int r = pthread_barrier_wait(&start);
		if (r != 0 && r != PTHREAD_BARRIER_SERIAL_THREAD)
			return 1;
	}
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < n; i++) {
		struct sess *s = &ss[i];
		printf(
		    "session %d: worker %d ok %d err1040 %d other %d max_ms %ld done_at_ms %ld\n",
		    i, s->worker, s->ok, s->err1040, s->other, s->max_ms, s->last_ms);
		ok += s->ok;
		e1040 += s->err1040;
		other += s->other;
		if (s->max_ms > max)
			max = s->max_ms;
		nms += s->ok + s->err1040 + s->other;
		mysql_close(s->m);
	}
	per_worker(ss, n);
	qsort(all, (size_t)n * (size_t)nstmts, sizeof(*all), cmp_long);
	/* statements a broken session did not send are 0 ms: counted in nms
	 * only as far as they ran */
	printf("total: sessions %d statements %d ok %d err1040 %d other %d max_ms %ld "
	       "p50_ms %ld p99_ms %ld\n",
	       n, nms, ok, e1040, other, max, all[(size_t)n * (size_t)nstmts / 2],
	       all[(size_t)n * (size_t)nstmts * 99 / 100]);
	mysql_library_end();
	free(all);
	free(th);
	free(ss);
	return 0;
}
