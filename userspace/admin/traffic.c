/*
 * traffic.c - see traffic.h. The proxy's figures are read from the metrics
 * registry by their names (docs/METRICS.md), so the admin socket needs no
 * hook into the proxy, and shows what /metrics shows.
 */
#include "admin/traffic.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/metrics.h"
#include "common/topology.h"

#define RING (TRAFFIC_WINDOW_S + 1)

struct reading {
	int64_t t_ms;
	uint64_t steered;
	double stmts, errors;
	uint64_t counts[METRIC_MAX_BUCKETS + 1];
};

struct backend_traffic {
	char name[TOPO_NAME_MAX];
	bool sampled; /* in this round */
	size_t nbuckets;
	double le[METRIC_MAX_BUCKETS];
	struct reading ring[RING];
	size_t newest, n;
};

struct traffic {
	struct metrics *m;
	struct backend_traffic *b;
	size_t nb, cap;
};

struct traffic *traffic_new(struct metrics *m)
{
	struct traffic *t = calloc(1, sizeof(*t));

	if (t)
		t->m = m;
	return t;
}

void traffic_free(struct traffic *t)
{
	if (!t)
		return;
	free(t->b);
	free(t);
}

static struct backend_traffic *find(const struct traffic *t, const char *name)
{
	for (size_t i = 0; i < t->nb; i++)
		if (strcmp(t->b[i].name, name) == 0)
			return &t->b[i];
	return NULL;
}

void traffic_begin(struct traffic *t)
{
	for (size_t i = 0; i < t->nb; i++)
		t->b[i].sampled = false;
}

void traffic_sample(struct traffic *t, const char *backend, uint64_t steered, int64_t now_ms)
{
	const char *const label[] = {backend, NULL};
	struct backend_traffic *bt = find(t, backend);
	struct metric_reading mr;

	if (!bt) {
		if (ARRAY_RESERVE(t->b, t->nb, t->cap, 8) < 0)
			return; /* no rates for it: status shows none */
		bt = &t->b[t->nb++];
		memset(bt, 0, sizeof(*bt));
		snprintf(bt->name, sizeof(bt->name), "%s", backend);
	}
	bt->sampled = true;
	bt->newest = bt->n ? (bt->newest + 1) % RING : 0;
	if (bt->n < RING)
		bt->n++;

	struct reading *r = &bt->ring[bt->newest];
	memset(r, 0, sizeof(*r));
	r->t_ms = now_ms;
	r->steered = steered;
	if (metrics_read(t->m, "mysteer_proxy_backend_statements_total", label, &mr))
		r->stmts = mr.value;
	if (metrics_read(t->m, "mysteer_proxy_backend_errors_total", label, &mr))
		r->errors = mr.value;
	if (metrics_read(t->m, "mysteer_proxy_statement_duration_seconds", label, &mr)) {
		bt->nbuckets = mr.nbuckets;
		memcpy(bt->le, mr.le, sizeof(bt->le));
		memcpy(r->counts, mr.counts, sizeof(r->counts));
	}
}

void traffic_end(struct traffic *t)
{
	size_t keep = 0;

	for (size_t i = 0; i < t->nb; i++)
		if (t->b[i].sampled)
			t->b[keep++] = t->b[i];
	t->nb = keep;
}

bool traffic_p99(const double *le, size_t nb, const uint64_t *counts, double *p99)
{
	uint64_t total = 0, seen = 0;

	for (size_t k = 0; k <= nb; k++)
		total += counts[k];
	if (total == 0 || nb == 0)
		return false;
	/* the smallest k whose cumulative count reaches 99 % of the total */
	uint64_t want = (uint64_t)ceil((double)total * 0.99);
	for (size_t k = 0; k < nb; k++) {
		seen += counts[k];
		if (seen >= want) {
			*p99 = le[k];
			return true;
		}
	}
	*p99 = le[nb - 1];
	return true;
}

/* A counter that went down (a series removed and made again) counts from 0. */
static double grew(double newer, double older)
{
	return newer >= older ? newer - older : newer;
}

bool traffic_rates(const struct traffic *t, const char *backend, struct traffic_rates *out)
{
	const struct backend_traffic *bt = find(t, backend);

	memset(out, 0, sizeof(*out));
	if (!bt)
		return false;
	if (bt->n < 2)
		return true;

	const struct reading *now = &bt->ring[bt->newest];
	const struct reading *then = &bt->ring[(bt->newest + RING - (bt->n - 1)) % RING];
	double s = (double)(now->t_ms - then->t_ms) / 1000.0;
	uint64_t delta[METRIC_MAX_BUCKETS + 1];

	if (s <= 0)
		return true;
	out->window_s = s;
	out->connections_per_s = grew((double)now->steered, (double)then->steered) / s;
	out->statements_per_s = grew(now->stmts, then->stmts) / s;
	out->errors_per_s = grew(now->errors, then->errors) / s;
	for (size_t k = 0; k <= bt->nbuckets; k++)
		delta[k] = now->counts[k] >= then->counts[k] ? now->counts[k] - then->counts[k]
		                                             : now->counts[k];
	double p99;
	if (traffic_p99(bt->le, bt->nbuckets, delta, &p99)) {
		out->has_p99 = true;
		out->p99_ms = p99 * 1000.0;
	}
	return true;
}
