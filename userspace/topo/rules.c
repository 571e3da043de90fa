/*
 * rules.c - see rules.h. The writer choice is sticky: a returning old
 * primary that missed transactions must not take the writes back just
 * because it has a better priority and is writable. Under the read_only
 * policy the writer chosen last stays while it is live and writable, and
 * is waited for while it is not probed yet (a restart); with failback off
 * (the default) the same holds under the priority policy, and a demoted
 * server (the writer until another became it) is never chosen again by
 * itself. failback on under the priority policy: the best live priority.
 */
#include "topo/rules.h"

#include <stdio.h>

static bool live(const struct rules_backend *b)
{
	return b->health == HEALTH_UP && b->admin != ADMIN_DISABLED;
}

static bool writer_ok(const struct rules_backend *b, enum writer_policy p)
{
	return live(b) && (p == WRITER_POLICY_PRIORITY || !b->read_only);
}

/* Best candidate: enabled before drained (a drained server should not be
 * handed the writes), then lower priority, then config order. */
static bool better(const struct rules_backend *a, const struct rules_backend *b)
{
	bool ad = a->admin == ADMIN_DRAINED, bd = b->admin == ADMIN_DRAINED;
	if (ad != bd)
		return !ad;
	return a->priority < b->priority;
}

/*
 * A server not probed yet (health unknown, for at most `rise` probes) that
 * would beat the chosen one: wait for it rather than pick a worse writer that
 * stickiness would then keep, e.g. at start when replies arrive in any order.
 */
static bool better_pending(const struct rules_input *in, int w)
{
	for (size_t i = 0; i < in->n; i++) {
		const struct rules_backend *b = &in->b[i];
		if ((int)i == w || b->health != HEALTH_UNKNOWN || b->admin == ADMIN_DISABLED)
			continue;
		if (better(b, &in->b[w]) || (b->priority == in->b[w].priority && (int)i < w))
			return true;
	}
	return false;
}

static int choose_writer(const struct rules_input *in)
{
	const struct rules_backend *b = in->b;
	int p = in->prev_writer >= 0 && (size_t)in->prev_writer < in->n ? in->prev_writer : -1;
	bool sticky = in->policy == WRITER_POLICY_READ_ONLY || !in->failback;

	if (p >= 0 && sticky) {
		if (writer_ok(&b[p], in->policy))
			return p;
		if (b[p].health == HEALTH_UNKNOWN && b[p].admin != ADMIN_DISABLED)
			return -1; /* not probed yet: wait for it */
	}
	int w = -1;
	for (size_t i = 0; i < in->n; i++) {
		if (!writer_ok(&b[i], in->policy) || (!in->failback && b[i].demoted))
			continue;
		if (w < 0 || better(&b[i], &b[w]))
			w = (int)i;
	}
	return w >= 0 && better_pending(in, w) ? -1 : w;
}

static enum be_role reader_role(const struct rules_input *in, size_t i, char *why, size_t len)
{
	const struct rules_backend *b = &in->b[i];
	if (b->admin == ADMIN_DISABLED) {
		snprintf(why, len, "disabled");
		return ROLE_NONE;
	}
	if (b->health != HEALTH_UP) {
		snprintf(why, len, "%s", b->health == HEALTH_DOWN ? "down" : "not probed yet");
		return ROLE_NONE;
	}
	if (b->weight <= 0) {
		snprintf(why, len, "weight 0");
		return ROLE_NONE;
	}
	if (!b->replicating || !b->has_lag) {
		snprintf(why, len, "%s", b->read_only ? "replication stopped" : "not a replica");
		return ROLE_NONE;
	}
	if (b->lag_s > in->max_lag_s) {
		snprintf(why, len, "lag %.0fs > %ds", b->lag_s, in->max_lag_s);
		return ROLE_NONE;
	}
	return ROLE_READER;
}

void rules_decide(const struct rules_input *in, struct rules_output *out)
{
	out->writer = choose_writer(in);
	for (size_t i = 0; i < in->n; i++) {
		out->reasons[i][0] = '\0';
		out->extra_writable[i] = false;
		if ((int)i == out->writer) {
			out->roles[i] = ROLE_WRITER;
			continue;
		}
		out->roles[i] = reader_role(in, i, out->reasons[i], RULES_REASON_MAX);
		if (in->policy == WRITER_POLICY_READ_ONLY && out->writer >= 0 &&
		    writer_ok(&in->b[i], in->policy))
			out->extra_writable[i] = true;
	}
}

enum be_health hysteresis_step(struct hysteresis *h, bool ok, int rise, int fall)
{
	if (ok) {
		h->bad = 0;
		if (h->good < rise)
			h->good++;
		if (h->health != HEALTH_UP && h->good >= rise)
			h->health = HEALTH_UP;
	} else {
		h->good = 0;
		if (h->bad < fall)
			h->bad++;
		if (h->health != HEALTH_DOWN && h->bad >= fall)
			h->health = HEALTH_DOWN;
	}
	return h->health;
}
