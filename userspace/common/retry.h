/*
 * retry.h - a retry delay that doubles after each failure, up to a bound.
 *
 * For work that fails the same way again when tried at once (a login a
 * backend refuses, a listener that cannot be taken): without a pause it
 * would run at every timer tick, for every caller, as long as the cause
 * lasts. Times are milliseconds of whatever clock the owner reads; a
 * success resets the delay.
 */
#ifndef MYSTEER_RETRY_H
#define MYSTEER_RETRY_H

#include <stdbool.h>
#include <stdint.h>

struct retry {
	uint64_t due_ms;   /* not before this */
	uint32_t delay_ms; /* the last pause, 0 after a success */
};

static inline bool retry_due(const struct retry *r, uint64_t now_ms)
{
	return r->delay_ms == 0 || now_ms >= r->due_ms;
}

/* Pauses first_ms after a success, twice the last pause after a failure,
 * at most max_ms. Returns the pause. */
static inline uint32_t retry_failed(struct retry *r, uint64_t now_ms, uint32_t first_ms,
                                    uint32_t max_ms)
{
	r->delay_ms = r->delay_ms ? r->delay_ms * 2 : first_ms;
	if (r->delay_ms > max_ms)
		r->delay_ms = max_ms;
	r->due_ms = now_ms + r->delay_ms;
	return r->delay_ms;
}

static inline void retry_ok(struct retry *r)
{
	r->delay_ms = 0;
}

#endif
