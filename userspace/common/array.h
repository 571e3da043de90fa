/* array.h - growing a flat array by doubling.
 *
 * Several parts keep a malloc'd array with a count and a capacity (timers,
 * metric families and series, relay queues). This is the one place that
 * grows one, so the growth rule and the overflow check are written once.
 */
#ifndef MYSTEER_ARRAY_H
#define MYSTEER_ARRAY_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* Makes room for one more element in `items` (n of cap in use): when full,
 * the capacity doubles (a new array starts at `first`). Evaluates to 0, or to
 * -1 when memory or the capacity's type runs out; then items and cap are
 * unchanged, also for a byte size that would overflow (checked here, before
 * the allocator, which under ASan aborts on it). */
#define ARRAY_RESERVE(items, n, cap, first)                                                        \
	({                                                                                         \
		int rc_ = 0;                                                                       \
		if ((n) >= (cap)) {                                                                \
			size_t want_ = (cap) ? (size_t)(cap)*2 : (size_t)(first);                  \
			__typeof__(cap) newcap_ = (__typeof__(cap))want_;                          \
			void *grown_ = (size_t)newcap_ == want_ && want_ > (size_t)(cap) &&        \
			                       want_ <= SIZE_MAX / sizeof(*(items))                \
			                   ? reallocarray((items), want_, sizeof(*(items)))        \
			                   : NULL;                                                 \
			if (grown_) {                                                              \
				(items) = grown_;                                                  \
				(cap) = newcap_;                                                   \
			} else {                                                                   \
				rc_ = -1;                                                          \
			}                                                                          \
		}                                                                                  \
		rc_;                                                                               \
	})

#endif
