/*
 * quiesce.h - waiting until every BPF program that is running now has
 * ended: an RCU grace period, as the publisher needs before it rewrites a
 * generation of the maps (steer.c, write_image).
 *
 * Every non-sleepable BPF program runs inside an RCU read-side section, and
 * the kernel waits for them (synchronize_rcu) whenever userspace updates a
 * map-in-map, so that "all programs that could be running use the new
 * value". quiesce_wait() updates a private one-slot ARRAY_OF_MAPS that
 * nothing reads: the update is the wait.
 */
#ifndef MYSTEER_QUIESCE_H
#define MYSTEER_QUIESCE_H

#include <stddef.h>

struct quiesce {
	int outer, inner; /* -1 when not made */
};

/* Makes the maps. 0, or -1 with err. */
int quiesce_init(struct quiesce *q, char *err, size_t errlen);
/* Returns once every BPF program that was running when it was called has
 * ended. 0, or -1 with errno. */
int quiesce_wait(const struct quiesce *q);
void quiesce_free(struct quiesce *q);

#endif
