/*
 * classify_bench.c - classify-bench: the classifier against the regex
 * baseline (regex_rules.h), in-process on one core, I/O excluded for both.
 *
 * Two mixes are generated in memory: (a) "oltp", the statements sysbench's
 * oltp_read_write sends in text mode (10 point selects, 4 range selects, 2
 * updates, a delete and an insert between BEGIN and COMMIT, with random ids
 * and sysbench's 120/60-character c/pad strings); (b) "long", 4 KB multi-row
 * INSERTs, SELECTs with long IN lists and SELECTs with big JSON literals,
 * one third each. Every implementation classifies every statement of a mix
 * several times; the best repetition is reported (the machine is shared).
 *
 * Output, CSV: classifier,<mix>,<impl>,<stmts_per_s>,<mb_per_s> for impl
 * mysteer and pcre2, then classifier,<mix>,ratio,<stmts ratio>,<mb ratio>.
 *   --quick                 ~2 s in total
 *   --write-file FILE N     write N oltp statements one a line, and exit
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "classify/classify.h"
#include "regex_rules.h"

struct mix {
	const char *name;
	char *buf;
	size_t len, cap;
	size_t *off; /* statement i is buf[off[i], off[i+1]) */
	size_t n, ncap;
};

static unsigned long long rng = 0x9e3779b97f4a7c15ull;

static unsigned rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void add(struct mix *m, const char *s, size_t n)
{
	if (m->len + n > m->cap) {
		m->cap = (m->cap + n) * 2;
		m->buf = realloc(m->buf, m->cap);
		if (!m->buf)
			die("realloc");
	}
	if (m->n + 2 > m->ncap) {
		m->ncap = m->ncap ? m->ncap * 2 : 1024;
		m->off = realloc(m->off, m->ncap * sizeof(*m->off));
		if (!m->off)
			die("realloc");
	}
	if (m->n == 0)
		m->off[0] = 0;
	memcpy(m->buf + m->len, s, n);
	m->len += n;
	m->off[++m->n] = m->len;
}

/* sysbench's c and pad values: groups of 11 digits joined by '-'. */
static char *digits(char *p, int groups)
{
	for (int g = 0; g < groups; g++) {
		if (g)
			*p++ = '-';
		for (int i = 0; i < 11; i++)
			*p++ = (char)('0' + rnd(10));
	}
	*p = '\0';
	return p;
}

#define TABLES 10
#define ROWS   1000000

static void oltp_txn(struct mix *m)
{
	char s[512], c[128], pad[64];
	int n;
	unsigned t = 1 + rnd(TABLES), id, lo;

#define ADD()                                                                                      \
	do {                                                                                       \
		add(m, s, (size_t)n);                                                              \
	} while (0)
	n = snprintf(s, sizeof(s), "BEGIN");
	ADD();
	for (int i = 0; i < 10; i++) {
		n = snprintf(s, sizeof(s), "SELECT c FROM sbtest%u WHERE id=%u", t, 1 + rnd(ROWS));
		ADD();
	}
	lo = 1 + rnd(ROWS - 100);
	n = snprintf(s, sizeof(s), "SELECT c FROM sbtest%u WHERE id BETWEEN %u AND %u", t, lo,
	             lo + 99);
	ADD();
	lo = 1 + rnd(ROWS - 100);
	n = snprintf(s, sizeof(s), "SELECT SUM(k) FROM sbtest%u WHERE id BETWEEN %u AND %u", t, lo,
	             lo + 99);
	ADD();
	lo = 1 + rnd(ROWS - 100);
	n = snprintf(s, sizeof(s), "SELECT c FROM sbtest%u WHERE id BETWEEN %u AND %u ORDER BY c",
	             t, lo, lo + 99);
	ADD();
	lo = 1 + rnd(ROWS - 100);
	n = snprintf(s, sizeof(s),
	             "SELECT DISTINCT c FROM sbtest%u WHERE id BETWEEN %u AND %u ORDER BY c", t, lo,
	             lo + 99);
	ADD();
	n = snprintf(s, sizeof(s), "UPDATE sbtest%u SET k=k+1 WHERE id=%u", t, 1 + rnd(ROWS));
	ADD();
	digits(c, 10);
	n = snprintf(s, sizeof(s), "UPDATE sbtest%u SET c='%s' WHERE id=%u", t, c, 1 + rnd(ROWS));
	ADD();
	id = 1 + rnd(ROWS);
	n = snprintf(s, sizeof(s), "DELETE FROM sbtest%u WHERE id=%u", t, id);
	ADD();
	digits(c, 10);
	digits(pad, 5);
	n = snprintf(s, sizeof(s),
	             "INSERT INTO sbtest%u (id, k, c, pad) VALUES (%u, %u, '%s', '%s')", t, id,
	             1 + rnd(ROWS), c, pad);
	ADD();
	n = snprintf(s, sizeof(s), "COMMIT");
	ADD();
#undef ADD
}

static void gen_oltp(struct mix *m, size_t nstmts)
{
	m->name = "oltp";
	while (m->n < nstmts)
		oltp_txn(m);
}

#define LONG_SZ 4096

static void long_insert(struct mix *m)
{
	char s[LONG_SZ + 512], c[128], pad[64];
	size_t n = (size_t)sprintf(s, "INSERT INTO sbtest%u (id, k, c, pad) VALUES ", 1 + rnd(10));

	for (int row = 0; n < LONG_SZ - 220; row++) {
		digits(c, 10);
		digits(pad, 5);
		n += (size_t)sprintf(s + n, "%s(%u, %u, '%s', '%s')", row ? ", " : "", rnd(ROWS),
		                     rnd(ROWS), c, pad);
	}
	add(m, s, n);
}

static void long_in_list(struct mix *m)
{
	char s[LONG_SZ + 64];
	size_t n = (size_t)sprintf(s, "SELECT id, k, c FROM sbtest%u WHERE id IN (", 1 + rnd(10));

	for (int i = 0; n < LONG_SZ - 16; i++)
		n += (size_t)sprintf(s + n, "%s%u", i ? ", " : "", rnd(ROWS));
	n += (size_t)sprintf(s + n, ")");
	add(m, s, n);
}

static void long_json(struct mix *m)
{
	char s[LONG_SZ + 512];
	size_t n =
	    (size_t)sprintf(s, "SELECT id FROM docs WHERE JSON_CONTAINS(doc, '{\"items\": [");

	for (int i = 0; n < LONG_SZ - 200; i++)
		n += (size_t)sprintf(s + n,
		                     "%s{\"id\": %u, \"name\": \"item %u\", \"note\": "
		                     "\"5\\\\\" screen, it\\'s fine\", \"tags\": [\"a\", \"b\"]}",
		                     i ? ", " : "", rnd(ROWS), rnd(1000));
	n += (size_t)sprintf(s + n, "]}') ORDER BY id LIMIT 10");
	add(m, s, n);
}

static void gen_long(struct mix *m, size_t nstmts)
{
	m->name = "long";
	for (size_t i = 0; i < nstmts; i++) {
		switch (i % 3) {
		case 0:
			long_insert(m);
			break;
		case 1:
			long_in_list(m);
			break;
		default:
			long_json(m);
			break;
		}
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static volatile unsigned long sink;

static double run_ours(const struct mix *m)
{
	unsigned long w = 0;
	double t0 = now_s();

	for (size_t i = 0; i < m->n; i++) {
		struct cls_result r;

		cls_classify(NULL, m->buf + m->off[i], m->off[i + 1] - m->off[i], &r);
		w += r.token != CLS_READ;
	}
	sink = w;
	return now_s() - t0;
}

static double run_regex(struct rx_rules *rx, const struct mix *m)
{
	unsigned long w = 0;
	double t0 = now_s();

	for (size_t i = 0; i < m->n; i++)
		w += rx_is_write(rx, m->buf + m->off[i], m->off[i + 1] - m->off[i]);
	sink = w;
	return now_s() - t0;
}

static size_t differences(struct rx_rules *rx, const struct mix *m)
{
	size_t d = 0;

	for (size_t i = 0; i < m->n; i++) {
		struct cls_result r;
		const char *s = m->buf + m->off[i];
		size_t n = m->off[i + 1] - m->off[i];

		cls_classify(NULL, s, n, &r);
		d += (r.token != CLS_READ) != rx_is_write(rx, s, n);
	}
	return d;
}

static void bench(struct rx_rules *rx, const struct mix *m, int reps)
{
	double ours = 1e30, base = 1e30, mb = m->len / 1e6;

	for (int r = 0; r < reps; r++) {
		double a = run_ours(m), b = run_regex(rx, m);

		ours = a < ours ? a : ours;
		base = b < base ? b : base;
	}
	printf("# %s: %zu statements, %.1f MB, %zu read/write decisions differ from the regex "
	       "rules\n",
	       m->name, m->n, mb, differences(rx, m));
	printf("classifier,%s,mysteer,%.0f,%.1f\n", m->name, m->n / ours, mb / ours);
	printf("classifier,%s,pcre2,%.0f,%.1f\n", m->name, m->n / base, mb / base);
	printf("classifier,%s,ratio,%.2f,%.2f\n", m->name, base / ours, base / ours);
	fflush(stdout);
}

static int write_file(const char *path, size_t n)
{
	struct mix m = {0};
	FILE *f = fopen(path, "w");

	if (!f)
		die(path);
	gen_oltp(&m, n);
	for (size_t i = 0; i < n; i++) {
		fwrite(m.buf + m.off[i], 1, m.off[i + 1] - m.off[i], f);
		fputc('\n', f);
	}
	if (fclose(f) != 0)
		die(path);
	free(m.buf);
	free(m.off);
	return 0;
}

static void pin_one_core(void)
{
	cpu_set_t set;
	int cpu = sched_getcpu();

	CPU_ZERO(&set);
	CPU_SET(cpu < 0 ? 0 : cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		perror("sched_setaffinity (continuing unpinned)");
}

int main(int argc, char **argv)
{
	bool quick = false;
	struct rx_rules rx;
	struct mix oltp = {0}, lng = {0};
	int reps;

	if (argc == 4 && !strcmp(argv[1], "--write-file"))
		return write_file(argv[2], strtoul(argv[3], NULL, 10));
	if (argc == 2 && !strcmp(argv[1], "--quick")) {
		quick = true;
	} else if (argc != 1) {
		fputs("usage: classify-bench [--quick] | --write-file FILE N\n", stderr);
		return 2;
	}
	if (rx_init(&rx) < 0)
		return 1;
	pin_one_core();
	gen_oltp(&oltp, quick ? 100000 : 400000);
	gen_long(&lng, quick ? 3000 : 12000);
	reps = quick ? 3 : 7;
	bench(&rx, &oltp, reps);
	bench(&rx, &lng, reps);
	rx_free(&rx);
	free(oltp.buf);
	free(oltp.off);
	free(lng.buf);
	free(lng.off);
	return 0;
}
