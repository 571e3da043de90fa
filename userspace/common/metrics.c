/*
 * metrics.c - see metrics.h. Values are doubles kept as their bits in
 * 64-bit atomics (a compare-and-swap loop adds), so an update from a proxy
 * worker takes no lock; the registry lock (recursive: collectors run under
 * it) guards only the lists of families, series and collectors.
 */
#define _GNU_SOURCE
#include "common/metrics.h"

#include <json-c/json.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/log.h"

const double metrics_latency_buckets[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                          0.01,   0.025,   0.05,   0.1,   0.25,   0.5,
                                          1,      2.5,     5,      10};
const size_t metrics_latency_nbuckets =
    sizeof(metrics_latency_buckets) / sizeof(metrics_latency_buckets[0]);

struct metric_series {
	struct metric_family *f;
	char *values[METRIC_MAX_LABELS];
	_Atomic uint64_t value; /* double bits: counter, gauge; histogram: sum */
	/* histogram: one count a bucket, the last one past every bound (+Inf) */
	_Atomic uint64_t counts[METRIC_MAX_BUCKETS + 1];
};

struct metric_family {
	struct metrics *m;
	enum metric_type type;
	unsigned flags;
	char *name, *help;
	char *labels[METRIC_MAX_LABELS];
	size_t nlabels;
	double buckets[METRIC_MAX_BUCKETS];
	size_t nbuckets;
	struct metric_series **series;
	size_t nseries, cap;
};

struct collector {
	metrics_collect_fn fn;
	void *arg;
};

struct metrics {
	pthread_mutex_t lock; /* recursive */
	struct metric_family **fams;
	size_t nfams, cap;
	struct collector *cols;
	size_t ncols;
	struct metric_series *dropped; /* mysteer_metrics_series_dropped_total */
};

static uint64_t d2u(double d)
{
	uint64_t u;
	memcpy(&u, &d, sizeof(u));
	return u;
}

static double u2d(uint64_t u)
{
	double d;
	memcpy(&d, &u, sizeof(d));
	return d;
}

static void atomic_add_double(_Atomic uint64_t *p, double v)
{
	uint64_t old = atomic_load_explicit(p, memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(p, &old, d2u(u2d(old) + v),
	                                              memory_order_relaxed, memory_order_relaxed))
		;
}

static void lock(struct metrics *m)
{
	pthread_mutex_lock(&m->lock);
}

static void unlock(struct metrics *m)
{
	pthread_mutex_unlock(&m->lock);
}

/* ---- registry ---- */

struct metrics *metrics_new(void)
{
	struct metrics *m = calloc(1, sizeof(*m));
	pthread_mutexattr_t a;

	if (!m)
		return NULL;
	if (pthread_mutexattr_init(&a) != 0 ||
	    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE) != 0 ||
	    pthread_mutex_init(&m->lock, &a) != 0) {
		free(m);
		return NULL;
	}
	pthread_mutexattr_destroy(&a);
	static const char *const none[] = {NULL};
	struct metric_family *f =
	    metrics_family(m, METRIC_COUNTER, "mysteer_metrics_series_dropped_total",
	                   "Label sets refused because their family was full", none, NULL, 0, 0);
	m->dropped = metric_series(f, NULL);
	return m;
}

static void free_series(struct metric_series *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < METRIC_MAX_LABELS; i++)
		free(s->values[i]);
	free(s);
}

static void free_family(struct metric_family *f)
{
	for (size_t i = 0; i < f->nseries; i++)
		free_series(f->series[i]);
	free(f->series);
	for (size_t i = 0; i < f->nlabels; i++)
		free(f->labels[i]);
	free(f->name);
	free(f->help);
	free(f);
}

void metrics_free(struct metrics *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nfams; i++)
		free_family(m->fams[i]);
	free(m->fams);
	free(m->cols);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static struct metrics *global;
static pthread_once_t global_once = PTHREAD_ONCE_INIT;

static void global_init(void)
{
	global = metrics_new();
}

struct metrics *metrics_global(void)
{
	pthread_once(&global_once, global_init);
	return global;
}

static bool valid_name(const char *s, bool colon)
{
	if (!s || !*s)
		return false;
	for (const char *p = s; *p; p++) {
		bool ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' ||
		          (colon && *p == ':') || (p > s && *p >= '0' && *p <= '9');
		if (!ok)
			return false;
	}
	return true;
}

static bool same_shape(const struct metric_family *f, enum metric_type type,
                       const char *const *labels, size_t nlabels, const double *buckets,
                       size_t nbuckets, unsigned flags)
{
	if (f->type != type || f->nlabels != nlabels || f->flags != flags)
		return false;
	for (size_t i = 0; i < nlabels; i++)
		if (strcmp(f->labels[i], labels[i]) != 0)
			return false;
	if (type == METRIC_HISTOGRAM) {
		if (f->nbuckets != nbuckets)
			return false;
		for (size_t i = 0; i < nbuckets; i++)
			if (f->buckets[i] != buckets[i])
				return false;
	}
	return true;
}

static bool check_family(enum metric_type type, const char *name, const char *const *labels,
                         size_t *nlabels, const double *buckets, size_t nbuckets)
{
	size_t n = 0;

	if (!valid_name(name, true)) {
		log_error("metrics: bad metric name '%s'", name ? name : "");
		return false;
	}
	for (; labels && labels[n]; n++) {
		if (n >= METRIC_MAX_LABELS || !valid_name(labels[n], false) ||
		    strncmp(labels[n], "__", 2) == 0 ||
		    (type == METRIC_HISTOGRAM && strcmp(labels[n], "le") == 0)) {
			log_error("metrics: %s: bad label name or too many labels", name);
			return false;
		}
		for (size_t j = 0; j < n; j++)
			if (strcmp(labels[j], labels[n]) == 0) {
				log_error("metrics: %s: label %s twice", name, labels[n]);
				return false;
			}
	}
	*nlabels = n;
	if (type == METRIC_HISTOGRAM) {
		if (!buckets || nbuckets == 0 || nbuckets > METRIC_MAX_BUCKETS) {
			log_error("metrics: %s: 1 to %d buckets", name, METRIC_MAX_BUCKETS);
			return false;
		}
		for (size_t i = 0; i < nbuckets; i++)
			if (!isfinite(buckets[i]) || (i > 0 && buckets[i] <= buckets[i - 1])) {
				log_error("metrics: %s: buckets must be finite and ascending",
				          name);
				return false;
			}
	}
	return true;
}

struct metric_family *metrics_family(struct metrics *m, enum metric_type type, const char *name,
                                     const char *help, const char *const *labels,
                                     const double *buckets, size_t nbuckets, unsigned flags)
{
	size_t nlabels;
	struct metric_family *f;

	if (!m || !check_family(type, name, labels, &nlabels, buckets, nbuckets))
		return NULL;
	lock(m);
	for (size_t i = 0; i < m->nfams; i++) {
		f = m->fams[i];
		if (strcmp(f->name, name) != 0)
			continue;
		unlock(m);
		if (same_shape(f, type, labels, nlabels, buckets, nbuckets, flags))
			return f;
		log_error("metrics: %s registered twice with different types or labels", name);
		return NULL;
	}
	if (ARRAY_RESERVE(m->fams, m->nfams, m->cap, 32) < 0)
		goto oom;
	f = calloc(1, sizeof(*f));
	if (!f)
		goto oom;
	f->m = m;
	f->type = type;
	f->flags = flags;
	f->name = strdup(name);
	f->help = strdup(help ? help : "");
	f->nlabels = nlabels;
	bool ok = f->name && f->help;
	for (size_t i = 0; i < nlabels; i++)
		ok = (f->labels[i] = strdup(labels[i])) && ok;
	if (type == METRIC_HISTOGRAM) {
		memcpy(f->buckets, buckets, nbuckets * sizeof(*buckets));
		f->nbuckets = nbuckets;
	}
	if (!ok) {
		free_family(f);
		goto oom;
	}
	m->fams[m->nfams++] = f;
	unlock(m);
	/* Without labels it is one series, shown (as 0) from the start. */
	if (!nlabels && !(flags & METRIC_COLLECTED))
		metric_series(f, NULL);
	return f;
oom:
	unlock(m);
	log_error("metrics: %s: out of memory", name);
	return NULL;
}

struct metric_family *metrics_counter(const char *name, const char *help, const char *const *labels,
                                      unsigned flags)
{
	return metrics_family(metrics_global(), METRIC_COUNTER, name, help, labels, NULL, 0, flags);
}

struct metric_family *metrics_gauge(const char *name, const char *help, const char *const *labels,
                                    unsigned flags)
{
	return metrics_family(metrics_global(), METRIC_GAUGE, name, help, labels, NULL, 0, flags);
}

bool metrics_register(const struct metric_def *defs, size_t n, metrics_collect_fn fn, void *arg)
{
	struct metrics *m = metrics_global();

	for (size_t i = 0; i < n; i++)
		*defs[i].family = metrics_family(m, defs[i].type, defs[i].name, defs[i].help,
		                                 defs[i].labels, NULL, 0, METRIC_COLLECTED);
	return metrics_add_collector(m, fn, arg) == 0;
}

struct metric_family *metrics_histogram(const char *name, const char *help,
                                        const char *const *labels, const double *buckets,
                                        size_t nbuckets, unsigned flags)
{
	return metrics_family(metrics_global(), METRIC_HISTOGRAM, name, help, labels, buckets,
	                      nbuckets, flags);
}

/* ---- series ---- */

static bool same_values(const struct metric_series *s, const char *const *values, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s->values[i], values[i] ? values[i] : "") != 0)
			return false;
	return true;
}

struct metric_series *metric_series(struct metric_family *f, const char *const *values)
{
	struct metric_series *s = NULL;

	if (!f)
		return NULL;
	lock(f->m);
	for (size_t i = 0; i < f->nseries; i++)
		if (same_values(f->series[i], values, f->nlabels)) {
			s = f->series[i];
			goto out;
		}
	if (f->nseries >= METRIC_MAX_SERIES) {
		metric_inc(f->m->dropped);
		goto out;
	}
	if (ARRAY_RESERVE(f->series, f->nseries, f->cap, 8) < 0)
		goto out;
	s = calloc(1, sizeof(*s));
	if (!s)
		goto out;
	s->f = f;
	for (size_t i = 0; i < f->nlabels; i++)
		if (!(s->values[i] = strdup(values[i] ? values[i] : ""))) {
			free_series(s);
			s = NULL;
			goto out;
		}
	f->series[f->nseries++] = s;
out:
	unlock(f->m);
	return s;
}

struct metric_series *metric_at(struct metric_family *f, ...)
{
	const char *v[METRIC_MAX_LABELS] = {0};
	va_list ap;

	if (!f)
		return NULL;
	va_start(ap, f);
	for (size_t i = 0; i < f->nlabels; i++)
		v[i] = va_arg(ap, const char *);
	va_end(ap);
	return metric_series(f, v);
}

void metric_add(struct metric_series *s, double v)
{
	if (s && s->f->type != METRIC_HISTOGRAM)
		atomic_add_double(&s->value, v);
}

void metric_inc(struct metric_series *s)
{
	metric_add(s, 1);
}

void metric_set(struct metric_series *s, double v)
{
	if (s && s->f->type != METRIC_HISTOGRAM)
		atomic_store_explicit(&s->value, d2u(v), memory_order_relaxed);
}

void metric_observe(struct metric_series *s, double v)
{
	size_t i = 0;

	if (!s || s->f->type != METRIC_HISTOGRAM || isnan(v))
		return;
	while (i < s->f->nbuckets && v > s->f->buckets[i])
		i++;
	atomic_fetch_add_explicit(&s->counts[i], 1, memory_order_relaxed);
	atomic_add_double(&s->value, v);
}

static uint64_t hist_count(const struct metric_series *s)
{
	uint64_t n = 0;
	for (size_t i = 0; i <= s->f->nbuckets; i++)
		n += atomic_load_explicit(&s->counts[i], memory_order_relaxed);
	return n;
}

double metric_value(const struct metric_series *s)
{
	if (!s)
		return 0;
	if (s->f->type == METRIC_HISTOGRAM)
		return (double)hist_count(s);
	return u2d(atomic_load_explicit(&s->value, memory_order_relaxed));
}

bool metrics_read(struct metrics *m, const char *name, const char *const *values,
                  struct metric_reading *out)
{
	bool found = false;

	memset(out, 0, sizeof(*out));
	if (!m || !name)
		return false;
	lock(m);
	for (size_t i = 0; i < m->nfams && !found; i++) {
		const struct metric_family *f = m->fams[i];

		if (strcmp(f->name, name) != 0)
			continue;
		for (size_t j = 0; j < f->nseries && !found; j++) {
			const struct metric_series *s = f->series[j];

			if (!same_values(s, values, f->nlabels))
				continue;
			found = true;
			out->value = metric_value(s);
			if (f->type != METRIC_HISTOGRAM)
				continue;
			out->nbuckets = f->nbuckets;
			memcpy(out->le, f->buckets, f->nbuckets * sizeof(f->buckets[0]));
			for (size_t k = 0; k <= f->nbuckets; k++)
				out->counts[k] =
				    atomic_load_explicit(&s->counts[k], memory_order_relaxed);
		}
	}
	unlock(m);
	return found;
}

/* ---- collectors ---- */

int metrics_add_collector(struct metrics *m, metrics_collect_fn fn, void *arg)
{
	if (!m)
		return -1;
	lock(m);
	struct collector *c = realloc(m->cols, (m->ncols + 1) * sizeof(*c));
	if (!c) {
		unlock(m);
		return -1;
	}
	m->cols = c;
	m->cols[m->ncols++] = (struct collector){fn, arg};
	unlock(m);
	return 0;
}

void metrics_remove_collector(struct metrics *m, metrics_collect_fn fn, void *arg)
{
	if (!m)
		return;
	lock(m);
	for (size_t i = 0; i < m->ncols; i++)
		if (m->cols[i].fn == fn && m->cols[i].arg == arg) {
			memmove(&m->cols[i], &m->cols[i + 1],
			        (m->ncols - i - 1) * sizeof(*m->cols));
			m->ncols--;
			break;
		}
	unlock(m);
}

/* Under the lock: collected families start empty, then every collector. */
static void collect(struct metrics *m)
{
	for (size_t i = 0; i < m->nfams; i++) {
		struct metric_family *f = m->fams[i];
		if (!(f->flags & METRIC_COLLECTED))
			continue;
		for (size_t j = 0; j < f->nseries; j++)
			free_series(f->series[j]);
		f->nseries = 0;
	}
	for (size_t i = 0; i < m->ncols; i++)
		m->cols[i].fn(m, m->cols[i].arg);
}

/* ---- text rendering ---- */

struct buf {
	char *p;
	size_t len, cap;
	bool failed;
};

static void put(struct buf *b, const char *s, size_t n)
{
	if (b->failed)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->failed = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void puts_(struct buf *b, const char *s)
{
	put(b, s, strlen(s));
}

static void putf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct buf *b, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		put(b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* The exposition format's escapes: backslash and newline everywhere, the
 * double quote in label values too. */
static void put_escaped(struct buf *b, const char *s, bool quote)
{
	for (const char *p = s; *p; p++) {
		if (*p == '\\')
			puts_(b, "\\\\");
		else if (*p == '\n')
			puts_(b, "\\n");
		else if (quote && *p == '"')
			puts_(b, "\\\"");
		else
			put(b, p, 1);
	}
}

/* Shortest form that reads back as the same double; Go's forms of the
 * specials. */
static void fmt_double(double v, char *out, size_t len)
{
	if (isnan(v)) {
		snprintf(out, len, "NaN");
		return;
	}
	if (isinf(v)) {
		snprintf(out, len, v > 0 ? "+Inf" : "-Inf");
		return;
	}
	if (v == floor(v) && fabs(v) < 9007199254740992.0) {
		snprintf(out, len, "%.0f", v);
		return;
	}
	for (int prec = 6; prec <= 17; prec++) {
		snprintf(out, len, "%.*g", prec, v);
		if (strtod(out, NULL) == v)
			return;
	}
}

static void put_double(struct buf *b, double v)
{
	char tmp[64];
	fmt_double(v, tmp, sizeof(tmp));
	puts_(b, tmp);
}

/* {a="x",b="y"} with an extra label (le) when extra is set. */
static void put_labels(struct buf *b, const struct metric_series *s, const char *extra_name,
                       const char *extra_value)
{
	const struct metric_family *f = s->f;
	if (!f->nlabels && !extra_name)
		return;
	puts_(b, "{");
	for (size_t i = 0; i < f->nlabels; i++) {
		putf(b, "%s%s=\"", i ? "," : "", f->labels[i]);
		put_escaped(b, s->values[i], true);
		puts_(b, "\"");
	}
	if (extra_name)
		putf(b, "%s%s=\"%s\"", f->nlabels ? "," : "", extra_name, extra_value);
	puts_(b, "}");
}

static const char *type_name(enum metric_type t)
{
	return t == METRIC_COUNTER ? "counter" : t == METRIC_GAUGE ? "gauge" : "histogram";
}

static void render_family(struct buf *b, const struct metric_family *f)
{
	if (!f->nseries)
		return; /* nothing to say yet */
	puts_(b, "# HELP ");
	puts_(b, f->name);
	puts_(b, " ");
	put_escaped(b, f->help, false);
	putf(b, "\n# TYPE %s %s\n", f->name, type_name(f->type));
	for (size_t i = 0; i < f->nseries; i++) {
		const struct metric_series *s = f->series[i];
		if (f->type != METRIC_HISTOGRAM) {
			puts_(b, f->name);
			put_labels(b, s, NULL, NULL);
			puts_(b, " ");
			put_double(b, metric_value(s));
			puts_(b, "\n");
			continue;
		}
		uint64_t cum = 0;
		double sum = u2d(atomic_load_explicit(&s->value, memory_order_relaxed));
		char le[64];
		for (size_t j = 0; j <= f->nbuckets; j++) {
			cum += atomic_load_explicit(&s->counts[j], memory_order_relaxed);
			if (j < f->nbuckets)
				fmt_double(f->buckets[j], le, sizeof(le));
			else
				snprintf(le, sizeof(le), "+Inf");
			putf(b, "%s_bucket", f->name);
			put_labels(b, s, "le", le);
			putf(b, " %llu\n", (unsigned long long)cum);
		}
		putf(b, "%s_sum", f->name);
		put_labels(b, s, NULL, NULL);
		puts_(b, " ");
		put_double(b, sum);
		putf(b, "\n%s_count", f->name);
		put_labels(b, s, NULL, NULL);
		putf(b, " %llu\n", (unsigned long long)cum);
	}
}

char *metrics_render_text(struct metrics *m, size_t *len)
{
	struct buf b = {0};

	if (!m)
		return NULL;
	lock(m);
	collect(m);
	for (size_t i = 0; i < m->nfams; i++)
		render_family(&b, m->fams[i]);
	unlock(m);
	put(&b, "", 0); /* an empty registry still gives a string */
	if (b.failed) {
		free(b.p);
		return NULL;
	}
	if (len)
		*len = b.len;
	return b.p;
}

/* ---- JSON rendering ---- */

static json_object *jnum(double v)
{
	if (!isfinite(v))
		return NULL; /* JSON has no NaN or infinity */
	if (v == floor(v) && fabs(v) < 9007199254740992.0)
		return json_object_new_int64((int64_t)v);
	return json_object_new_double(v);
}

static json_object *series_json(const struct metric_family *f, const struct metric_series *s)
{
	json_object *o = json_object_new_object(), *labels = json_object_new_object();

	for (size_t i = 0; i < f->nlabels; i++)
		json_object_object_add(labels, f->labels[i], json_object_new_string(s->values[i]));
	json_object_object_add(o, "labels", labels);
	if (f->type != METRIC_HISTOGRAM) {
		json_object_object_add(o, "value", jnum(metric_value(s)));
		return o;
	}
	json_object *bk = json_object_new_array();
	uint64_t cum = 0;
	for (size_t j = 0; j <= f->nbuckets; j++) {
		json_object *pair = json_object_new_array();
		cum += atomic_load_explicit(&s->counts[j], memory_order_relaxed);
		json_object_array_add(pair, j < f->nbuckets ? jnum(f->buckets[j])
		                                            : json_object_new_string("+Inf"));
		json_object_array_add(pair, json_object_new_int64((int64_t)cum));
		json_object_array_add(bk, pair);
	}
	json_object_object_add(o, "count", json_object_new_int64((int64_t)cum));
	json_object_object_add(o, "sum",
	                       jnum(u2d(atomic_load_explicit(&s->value, memory_order_relaxed))));
	json_object_object_add(o, "buckets", bk);
	return o;
}

struct json_object *metrics_render_json(struct metrics *m)
{
	json_object *root = json_object_new_object();

	if (!m || !root)
		return root;
	lock(m);
	collect(m);
	for (size_t i = 0; i < m->nfams; i++) {
		const struct metric_family *f = m->fams[i];
		if (!f->nseries)
			continue; /* as in the text */
		json_object *o = json_object_new_object(), *arr = json_object_new_array();
		json_object_object_add(o, "type", json_object_new_string(type_name(f->type)));
		json_object_object_add(o, "help", json_object_new_string(f->help));
		for (size_t j = 0; j < f->nseries; j++)
			json_object_array_add(arr, series_json(f, f->series[j]));
		json_object_object_add(o, "series", arr);
		json_object_object_add(root, f->name, o);
	}
	unlock(m);
	return root;
}
