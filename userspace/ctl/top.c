/*
 * top.c - `mysteerctl top`: the daemon's status redrawn each second, with
 * the counters turned into rates, for the operator who wants one screen
 * that shows where the traffic goes. Plain ANSI (clear, home) rather than
 * curses: one table, no windows, and nothing to install.
 *
 * Rates come from two status samples: the difference of a counter over the
 * time between them. A backend that appears, or a counter that went down
 * (a daemon restart, a reused id), shows "-" for that round.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "ctl/ctl.h"

#define TOP_MAX_BACKENDS 256

struct top_sample {
	char name[TOPO_NAME_MAX];
	int64_t steered, failures, opened;
};

struct top {
	struct top_sample prev[TOP_MAX_BACKENDS];
	size_t nprev;
	double prev_s; /* monotonic seconds of prev */
};

static volatile sig_atomic_t top_stop;

static void on_sigint(int sig)
{
	(void)sig;
	top_stop = 1;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int64_t jint(json_object *o, const char *key)
{
	json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v))
		return -1;
	return json_object_get_int64(v);
}

static const char *jtext(json_object *o, const char *key, const char *dflt)
{
	json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
		return dflt;
	return json_object_get_string(v);
}

static const struct top_sample *find_prev(const struct top *t, const char *name)
{
	for (size_t i = 0; i < t->nprev; i++)
		if (!strcmp(t->prev[i].name, name))
			return &t->prev[i];
	return NULL;
}

/* A rate as text: "-" without a previous sample or when the counter fell. */
static void rate(char *buf, size_t len, int64_t now, const int64_t *before, double dt)
{
	if (!before || now < 0 || *before < 0 || now < *before || dt <= 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.1f", (double)(now - *before) / dt);
}

/* A number of the status's traffic object, or dflt when absent or null. */
static void traffic_cell(char *buf, size_t len, json_object *tr, const char *key, const char *fmt,
                         const char *dflt)
{
	json_object *v;

	if (tr && json_object_object_get_ex(tr, key, &v) &&
	    (json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)))
		snprintf(buf, len, fmt, json_object_get_double(v));
	else
		snprintf(buf, len, "%s", dflt);
}

/* One frame: a header, then a row per backend. Updates t's samples. */
static void top_frame(struct top *t, json_object *st, FILE *out)
{
	json_object *arr, *pool = NULL;
	double now = mono_s(), dt = t->prev_s > 0 ? now - t->prev_s : 0;
	struct top_sample next[TOP_MAX_BACKENDS];
	size_t n = 0;
	time_t wall = time(NULL);
	char clock[16];

	strftime(clock, sizeof(clock), "%H:%M:%S", localtime(&wall));
	json_object_object_get_ex(st, "pool", &pool);
	fprintf(out, "\033[H\033[2Jmysteer top  %s  writer %s  (q quits)\n\n", clock,
	        jtext(st, "writer", "none"));
	fprintf(out, "%-12s %-7s %-8s %5s %7s %10s %8s %7s %5s %10s %8s %8s\n", "BACKEND", "ROLE",
	        "STATE", "LAG", "ACTIVE", "STEERED/s", "FAILS/s", "IN_USE", "IDLE", "OPENED/s",
	        "STMT/s", "P99");
	if (json_object_object_get_ex(st, "backends", &arr) &&
	    json_object_is_type(arr, json_type_array))
		n = json_object_array_length(arr);
	if (n > TOP_MAX_BACKENDS)
		n = TOP_MAX_BACKENDS;
	for (size_t i = 0; i < n; i++) {
		json_object *b = json_object_array_get_idx(arr, i), *p = NULL;
		const char *name = jtext(b, "name", "?");
		const struct top_sample *was = find_prev(t, name);
		struct top_sample *s = &next[i];
		char steered[16], fails[16], opened[16], lag[16], stmts[16], p99[16];
		json_object *tr = NULL;

		if (pool)
			json_object_object_get_ex(pool, name, &p);
		snprintf(s->name, sizeof(s->name), "%s", name);
		s->steered = jint(b, "steered");
		s->failures = jint(b, "connect_failures");
		s->opened = jint(p, "opened");
		rate(steered, sizeof(steered), s->steered, was ? &was->steered : NULL, dt);
		rate(fails, sizeof(fails), s->failures, was ? &was->failures : NULL, dt);
		rate(opened, sizeof(opened), s->opened, was ? &was->opened : NULL, dt);
		if (jint(b, "lag_s") >= 0)
			snprintf(lag, sizeof(lag), "%llds", (long long)jint(b, "lag_s"));
		else
			snprintf(lag, sizeof(lag), "-");
		/* 6450 statements: the daemon's rates over its traffic window */
		json_object_object_get_ex(b, "traffic", &tr);
		traffic_cell(stmts, sizeof(stmts), tr, "statements_per_s", "%.1f", "-");
		traffic_cell(p99, sizeof(p99), tr, "p99_ms", "%.1fms", "-");
		fprintf(out, "%-12s %-7s %-8s %5s %7lld %10s %8s %7lld %5lld %10s %8s %8s\n", name,
		        jtext(b, "role", "-"), jtext(b, "state", "-"), lag,
		        (long long)jint(b, "active"), steered, fails, (long long)jint(p, "in_use"),
		        (long long)jint(p, "idle"), opened, stmts, p99);
	}
	memcpy(t->prev, next, n * sizeof(next[0]));
	t->nprev = n;
	t->prev_s = now;
	fflush(out);
}

/* Waits up to ms for a key; returns it, 0 for none, -1 at end of input. */
static int wait_key(int ms)
{
	struct pollfd pfd = {.fd = STDIN_FILENO, .events = POLLIN};
	char c;
	int r = poll(&pfd, 1, ms);

	if (r <= 0)
		return 0;
	if (read(STDIN_FILENO, &c, 1) != 1)
		return -1;
	return (unsigned char)c;
}

int ctl_top(const char *socket_path, int interval_ms, FILE *out)
{
	static struct top t; /* large: off the stack */
	struct termios saved, raw;
	bool tty = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved) == 0;
	bool input = true;
	char err[600];
	int rc = CTL_EXIT_OK;

	memset(&t, 0, sizeof(t));
	signal(SIGINT, on_sigint);
	signal(SIGTERM, on_sigint);
	if (tty) {
		raw = saved;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	}
	while (!top_stop) {
		json_object *req = json_object_new_object(), *st = NULL;

		if (!req) {
			rc = CTL_EXIT_FAILED;
			break;
		}
		json_object_object_add(req, "cmd", json_object_new_string("status"));
		if (ctl_call(socket_path, req, &st, err, sizeof(err))) {
			json_object_put(req);
			fprintf(stderr, "mysteerctl: %s\n", err);
			rc = CTL_EXIT_FAILED;
			break;
		}
		json_object_put(req);
		top_frame(&t, st, out);
		json_object_put(st);
		/* Input at its end (not a terminal): keep drawing until a signal. */
		int k = 0;
		if (input)
			k = wait_key(interval_ms);
		else
			usleep((useconds_t)interval_ms * 1000);
		if (k == 'q' || k == 'Q')
			break;
		if (k < 0)
			input = false;
	}
	if (tty)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
	return rc;
}
