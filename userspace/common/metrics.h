/*
 * metrics.h - the one registry of mysteer's figures: counters, gauges and
 * histograms with a fixed set of label names each. Every part of the daemon
 * registers its families here; the Prometheus endpoint (/metrics) and
 * `mysteerctl status --json` ("metrics") both render this registry, so the
 * two never disagree and no second place lists the figures.
 *
 * Two ways to feed a family:
 * - a series kept here and updated where the event happens (metric_add,
 *   metric_observe): the series pointer stays valid for the registry's life
 *   and updates are lock-free atomics, so hot paths keep the pointer;
 * - a collector, called at every render, that sets figures kept elsewhere
 *   (eBPF maps, the topology snapshot, /proc). Its families are registered
 *   "collected": their series are dropped before each collection, so a
 *   backend that went leaves no series behind. A collector must not keep
 *   series pointers of a collected family.
 *
 * Labels are bounded: a family holds at most METRIC_MAX_SERIES label sets;
 * past that a new set is refused (NULL, and a no-op update) and counted in
 * mysteer_metrics_series_dropped_total. Label values come from the config
 * (backend, route, user names) or fixed lists (path, decision, reason).
 *
 * Thread-safe. Collectors run on the rendering thread with the registry
 * locked (they may call every function here except the render ones).
 */
#ifndef MYSTEER_METRICS_H
#define MYSTEER_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct json_object;
struct metrics;
struct metric_family;
struct metric_series;

enum metric_type { METRIC_COUNTER = 0, METRIC_GAUGE, METRIC_HISTOGRAM };

#define METRIC_MAX_LABELS  4
#define METRIC_MAX_BUCKETS 24
#define METRIC_MAX_SERIES  2048

/* Family flags. */
#define METRIC_COLLECTED 1u /* set by a collector at each render (see above) */

struct metrics *metrics_new(void);
void metrics_free(struct metrics *m);
/* The process's registry (the daemon's one): made on first use, never freed. */
struct metrics *metrics_global(void);

/*
 * Registers a family, or returns the one of that name when type, labels,
 * buckets and flags match (a part started again). NULL with a log line for a
 * bad name, a clash or no memory; every function below takes NULL as a no-op,
 * so a figure missing never stops the daemon. labels: NULL-terminated label
 * names, or NULL for none. buckets: ascending upper bounds of a histogram
 * (+Inf is implied), NULL for the others.
 */
struct metric_family *metrics_family(struct metrics *m, enum metric_type type, const char *name,
                                     const char *help, const char *const *labels,
                                     const double *buckets, size_t nbuckets, unsigned flags);

/* Shorthands for the global registry. */
struct metric_family *metrics_counter(const char *name, const char *help, const char *const *labels,
                                      unsigned flags);
struct metric_family *metrics_gauge(const char *name, const char *help, const char *const *labels,
                                    unsigned flags);
struct metric_family *metrics_histogram(const char *name, const char *help,
                                        const char *const *labels, const double *buckets,
                                        size_t nbuckets, unsigned flags);

/* A collector: fn(m, arg) at every render. */
typedef void (*metrics_collect_fn)(struct metrics *m, void *arg);

/* One family of a part's table of collected figures (counters and gauges). */
struct metric_def {
	struct metric_family **family; /* where the family is kept */
	enum metric_type type;
	const char *name, *help;
	const char *const *labels;
};
/* Registers every family of defs as METRIC_COLLECTED in the global registry,
 * then fn as their collector. Returns true once the collector is in. */
bool metrics_register(const struct metric_def *defs, size_t n, metrics_collect_fn fn, void *arg);

/* The series of these label values (one a label name, in order), made at
 * first use; NULL when the family is full or out of memory. */
struct metric_series *metric_series(struct metric_family *f, const char *const *values);
/* The same with the values as arguments (as many as the family has labels). */
struct metric_series *metric_at(struct metric_family *f, ...);

void metric_add(struct metric_series *s, double v); /* counters: v >= 0 */
void metric_inc(struct metric_series *s);
void metric_set(struct metric_series *s, double v); /* gauges, and collected counters */
void metric_observe(struct metric_series *s, double v);
/* Current value (counter, gauge) or observation count (histogram). */
double metric_value(const struct metric_series *s);

/* A series' figures at one moment, for a reader that turns them into rates
 * (the admin socket's traffic window). */
struct metric_reading {
	double value;    /* counter, gauge; histogram: the observation count */
	size_t nbuckets; /* histogram: the bounds in le[]; counts has one more */
	double le[METRIC_MAX_BUCKETS];
	uint64_t counts[METRIC_MAX_BUCKETS + 1]; /* per bucket, not cumulative; last: +Inf */
};
/* Reads the series of `values` in the family called `name`, making neither
 * (collectors are not run: a collected figure reads as of the last render).
 * false when there is no such series. */
bool metrics_read(struct metrics *m, const char *name, const char *const *values,
                  struct metric_reading *out);

int metrics_add_collector(struct metrics *m, metrics_collect_fn fn, void *arg);
void metrics_remove_collector(struct metrics *m, metrics_collect_fn fn, void *arg);

/* Runs the collectors and renders the Prometheus text exposition format
 * (version 0.0.4) into a malloc'd string (*len its length); NULL on no
 * memory. */
char *metrics_render_text(struct metrics *m, size_t *len);
/* The same figures as one JSON object: {"NAME": {"type", "help", "series":
 * [{"labels": {..}, "value": V} | {"labels", "count", "sum", "buckets":
 * [[le, cumulative count], ..]}]}}; le of the last bucket is "+Inf". */
struct json_object *metrics_render_json(struct metrics *m);

/* Default buckets in seconds: probes and statements (100 µs .. 10 s). */
extern const double metrics_latency_buckets[];
extern const size_t metrics_latency_nbuckets;

#endif
