/*
 * rules.h - the topology rules (docs/STEERING.md) as pure functions: which backend
 * is the writer, which are readers, and the rise/fall hysteresis of health.
 * No I/O, no clock, no globals, so that tests/unit/test_topo.c can check them
 * as a table.
 */
#ifndef MYSTEER_TOPO_RULES_H
#define MYSTEER_TOPO_RULES_H

#include <stdbool.h>
#include <stddef.h>

#include "common/topology.h"
#include "config/config.h"

struct rules_backend {
	int priority;
	int weight;
	enum be_admin admin;
	enum be_health health; /* after hysteresis */
	bool read_only;
	bool replicating; /* IO and SQL threads running */
	bool has_lag;
	double lag_s;
	bool demoted; /* was the writer until another server became it */
};

struct rules_input {
	size_t n;
	const struct rules_backend *b; /* config order breaks priority ties */
	/* index of the writer chosen last, -1: none; kept while there is no
	 * writer (it missed probes, or at start before it is probed) */
	int prev_writer;
	enum writer_policy policy;
	int max_lag_s;
	bool failback; /* off: a demoted server is never chosen by itself */
};

#define RULES_REASON_MAX 96

struct rules_output {
	int writer;          /* index, -1: none */
	enum be_role *roles; /* n entries, filled by rules_decide */
	/* n entries: why a backend has no role ("" when it has one or is down) */
	char (*reasons)[RULES_REASON_MAX];
	/* n entries: writable but not the writer (two writers): warn */
	bool *extra_writable;
};

void rules_decide(const struct rules_input *in, struct rules_output *out);

/* Rise/fall hysteresis: counts good/bad probes in a row. */
struct hysteresis {
	enum be_health health;
	int good, bad;
};

/* Feeds one probe result; returns the new health. */
enum be_health hysteresis_step(struct hysteresis *h, bool ok, int rise, int fall);

#endif
