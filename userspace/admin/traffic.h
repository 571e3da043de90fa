/*
 * traffic.h - each backend's traffic over the last seconds, for `mysteerctl
 * status` and `top`: the connections steered to it per second (kernel paths
 * and relay), and the 6450 statements it answered per second, those it
 * answered with an error, and their p99.
 *
 * Every figure behind it is a counter that only grows (the services'
 * backend counters, the proxy's series in the metrics registry), so a rate
 * needs two readings: a sampler on the controller's loop takes one a second
 * and keeps the last TRAFFIC_WINDOW_S + 1 of each backend; a rate is the
 * difference between the newest and the oldest over the time between them.
 */
#ifndef MYSTEER_ADMIN_TRAFFIC_H
#define MYSTEER_ADMIN_TRAFFIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TRAFFIC_WINDOW_S 10

struct traffic;
struct metrics;

struct traffic *traffic_new(struct metrics *m);
void traffic_free(struct traffic *t);

/* One sampling round: traffic_begin, a traffic_sample per live backend (its
 * connections steered so far), traffic_end (forgets backends not sampled). */
void traffic_begin(struct traffic *t);
void traffic_sample(struct traffic *t, const char *backend, uint64_t steered, int64_t now_ms);
void traffic_end(struct traffic *t);

struct traffic_rates {
	double window_s; /* the time the rates are over; 0 until two readings */
	double connections_per_s, statements_per_s, errors_per_s;
	bool has_p99;  /* statements were answered in the window */
	double p99_ms; /* upper bound of the latency bucket holding the 99th percentile */
};
/* The rates of a backend; false when it was never sampled. */
bool traffic_rates(const struct traffic *t, const char *backend, struct traffic_rates *out);

/* The p99 of per-bucket counts (counts[nb] past every bound): the bound of
 * the bucket the 99th percentile falls in, in the bounds' unit; the last
 * bound when it is past them all. false when counts are all 0. Pure. */
bool traffic_p99(const double *le, size_t nb, const uint64_t *counts, double *p99);

#endif
