/*
 * connrate.c - new-connection rate benchmark for `make bench`.
 *
 * sysbench keeps its connections open, so it cannot show what a router costs
 * a client that connects per request (PHP, CGI, serverless), which is where
 * connect steering and the 6450 pool are meant to win. This tool loops
 * connect, `SELECT 1`, close with libmysqlclient on T threads and reports
 * connections/s and the p50/p99 of the connect time (mysql_real_connect:
 * TCP handshake plus MySQL authentication, as an application sees it).
 *
 * Output is one line of key=value pairs so that bench.sh can parse it:
 *   connrate conns=N errors=E secs=S rate=R p50_us=X p99_us=Y
 * Exit status: 0 when at least one connection succeeded and errors stayed
 * under 1%, 1 otherwise, 2 on usage errors.
 *
 * With -i N it instead opens N connections and keeps them idle until stdin
 * reaches EOF (or the process is killed), printing `idle open=N errors=E`
 * once all are open: the bench reads the router's RSS meanwhile, since the
 * cost of an idle client is memory, not CPU.
 */
#include <errno.h>
#include <getopt.h>
#include <mysql.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct opts {
	const char *host;
	unsigned int port;
	const char *user;
	const char *password;
	long total; /* connections over all threads; 0 = until the deadline */
	int threads;
	double seconds; /* deadline; 0 = until `total` is reached */
	int verbose;
	long idle; /* -i: connections to open and hold */
};

struct worker {
	pthread_t tid;
	const struct opts *o;
	uint32_t *lat_us; /* connect latencies of this thread */
	long n_lat;
	long cap;
	long errors;
	char last_error[256];
};

static atomic_long next_ticket;
static double deadline;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int record_latency(struct worker *w, double secs)
{
	if (w->n_lat == w->cap) {
		long cap = w->cap ? w->cap * 2 : 4096;
		uint32_t *p = realloc(w->lat_us, (size_t)cap * sizeof(*p));

		if (!p)
			return -1;
		w->lat_us = p;
		w->cap = cap;
	}
	w->lat_us[w->n_lat++] = (uint32_t)(secs * 1e6 + 0.5);
	return 0;
}

static void note_error(struct worker *w, MYSQL *m)
{
	w->errors++;
	snprintf(w->last_error, sizeof(w->last_error), "%u %s", mysql_errno(m), mysql_error(m));
}

/* One connect, SELECT 1, close. Returns 0 on success. */
static int one_cycle(struct worker *w)
{
	const struct opts *o = w->o;
	unsigned int timeout = 10;
	MYSQL *m = mysql_init(NULL);
	double t0;
	int rc = -1;

	if (!m) {
		w->errors++;
		snprintf(w->last_error, sizeof(w->last_error), "mysql_init: out of memory");
		return -1;
	}
	mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
	mysql_options(m, MYSQL_OPT_READ_TIMEOUT, &timeout);
	t0 = now_s();
	if (!mysql_real_connect(m, o->host, o->user, o->password, NULL, o->port, NULL, 0)) {
		note_error(w, m);
		goto out;
	}
	if (record_latency(w, now_s() - t0) < 0) {
		w->errors++;
		goto out;
	}
	if (mysql_query(m, "SELECT 1")) {
		note_error(w, m);
		goto out;
	}
	MYSQL_RES *res = mysql_store_result(m);

	if (!res) {
		note_error(w, m);
		goto out;
	}
	mysql_free_result(res);
	rc = 0;
out:
	mysql_close(m);
	return rc;
}

static int more_work(const struct opts *o)
{
	if (o->seconds > 0 && now_s() >= deadline)
		return 0;
	if (o->total > 0 && atomic_fetch_add(&next_ticket, 1) >= o->total)
		return 0;
	return 1;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	if (mysql_thread_init())
		return NULL;
	while (more_work(w->o))
		one_cycle(w);
	mysql_thread_end();
	return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile of a sorted array. */
static uint32_t percentile(const uint32_t *v, long n, double p)
{
	long rank;

	if (n == 0)
		return 0;
	rank = (long)(p / 100.0 * (double)n + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return v[rank - 1];
}

static void usage(FILE *f)
{
	fprintf(f, "usage: connrate [-h HOST] [-P PORT] [-u USER] [-p PASSWORD] [-n TOTAL]\n"
	           "                [-t THREADS] [-s SECONDS] [-v] [-i IDLE]\n"
	           "  loops connect, SELECT 1, close; prints conns/s and p50/p99 connect time.\n"
	           "  -n and -s both bound the run (whichever comes first); default -n 2000.\n"
	           "  -i IDLE: open IDLE connections and hold them until stdin closes.\n");
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	int c;

	*o = (struct opts){.host = "127.0.0.1",
	                   .port = 3306,
	                   .user = "app",
	                   .password = "app",
	                   .total = 0,
	                   .threads = 4,
	                   .seconds = 0};
	while ((c = getopt(argc, argv, "h:P:u:p:n:t:s:vi:")) != -1) {
		switch (c) {
		case 'h':
			o->host = optarg;
			break;
		case 'P':
			o->port = (unsigned int)strtoul(optarg, NULL, 10);
			break;
		case 'u':
			o->user = optarg;
			break;
		case 'p':
			o->password = optarg;
			break;
		case 'n':
			o->total = strtol(optarg, NULL, 10);
			break;
		case 't':
			o->threads = atoi(optarg);
			break;
		case 's':
			o->seconds = strtod(optarg, NULL);
			break;
		case 'v':
			o->verbose = 1;
			break;
		case 'i':
			o->idle = strtol(optarg, NULL, 10);
			break;
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind != argc || o->threads < 1 || o->threads > 1024 || o->port == 0 ||
	    o->port > 65535 || o->total < 0 || o->seconds < 0 || o->idle < 0) {
		usage(stderr);
		return -1;
	}
	if (o->total == 0 && o->seconds == 0)
		o->total = 2000;
	return 0;
}

/*
 * Opens o->idle connections one after another (the rate does not matter here)
 * and holds them until stdin closes. Returns the exit status.
 */
static int hold_idle(const struct opts *o)
{
	MYSQL **conns = calloc((size_t)o->idle, sizeof(*conns));
	long open = 0, errors = 0;
	char buf[64];
	unsigned int timeout = 30;

	if (!conns) {
		fprintf(stderr, "connrate: out of memory\n");
		return 1;
	}
	for (long i = 0; i < o->idle; i++) {
		MYSQL *m = mysql_init(NULL);

		if (!m) {
			errors++;
			continue;
		}
		mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
		if (!mysql_real_connect(m, o->host, o->user, o->password, NULL, o->port, NULL, 0)) {
			if (errors++ == 0)
				fprintf(stderr, "connrate: idle connect: %u %s\n", mysql_errno(m),
				        mysql_error(m));
			mysql_close(m);
			continue;
		}
		conns[open++] = m;
	}
	printf("idle open=%ld errors=%ld\n", open, errors);
	fflush(stdout);
	while (fgets(buf, sizeof(buf), stdin))
		;
	for (long i = 0; i < open; i++)
		mysql_close(conns[i]);
	free(conns);
	return open == o->idle ? 0 : 1;
}

/* Joins the per-thread latency arrays into one sorted array. */
static uint32_t *merge_latencies(struct worker *w, int n, long *count)
{
	long total = 0, off = 0;
	uint32_t *all;

	for (int i = 0; i < n; i++)
		total += w[i].n_lat;
	all = malloc((size_t)(total ? total : 1) * sizeof(*all));
	if (!all)
		return NULL;
	for (int i = 0; i < n; i++) {
		memcpy(all + off, w[i].lat_us, (size_t)w[i].n_lat * sizeof(*all));
		off += w[i].n_lat;
	}
	qsort(all, (size_t)total, sizeof(*all), cmp_u32);
	*count = total;
	return all;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct worker *w;
	long conns, errors = 0;
	uint32_t *all;
	double t0, secs;
	int started = 0;

	if (parse_opts(argc, argv, &o) < 0)
		return 2;
	if (mysql_library_init(0, NULL, NULL)) {
		fprintf(stderr, "connrate: mysql_library_init failed\n");
		return 1;
	}
	if (o.idle > 0)
		return hold_idle(&o);
	w = calloc((size_t)o.threads, sizeof(*w));
	if (!w) {
		fprintf(stderr, "connrate: out of memory\n");
		return 1;
	}
	t0 = now_s();
	deadline = t0 + o.seconds;
	for (int i = 0; i < o.threads; i++) {
		w[i].o = &o;
		if (pthread_create(&w[i].tid, NULL, worker_main, &w[i])) {
			fprintf(stderr, "connrate: pthread_create: %s\n", strerror(errno));
			break;
		}
		started++;
	}
	for (int i = 0; i < started; i++)
		pthread_join(w[i].tid, NULL);
	secs = now_s() - t0;

	all = merge_latencies(w, started, &conns);
	if (!all) {
		fprintf(stderr, "connrate: out of memory\n");
		return 1;
	}
	for (int i = 0; i < started; i++) {
		errors += w[i].errors;
		if (w[i].errors && (o.verbose || conns == 0))
			fprintf(stderr, "connrate: thread %d: %ld errors, last: %s\n", i,
			        w[i].errors, w[i].last_error);
		free(w[i].lat_us);
	}
	printf("connrate conns=%ld errors=%ld secs=%.3f rate=%.1f p50_us=%u p99_us=%u\n", conns,
	       errors, secs, secs > 0 ? (double)conns / secs : 0.0, percentile(all, conns, 50),
	       percentile(all, conns, 99));
	free(all);
	free(w);
	mysql_library_end();
	if (conns == 0 || (double)errors > 0.01 * (double)(conns + errors))
		return 1;
	return 0;
}
