/*
 * quiesce.h - waiting until every BPF program that is running now has
 * ended: an RCU grace period, as the publisher needs before it rewrites a
 * generation of the maps (steer.c).
 *
 * Every non-sleepable BPF program runs inside an RCU read-side section, and
 * the kernel waits for them (synchronize_rcu) whenever userspace updates a
 * map-in-map, so that "all programs that could be running use the new
 * value". The wait updates a private one-slot ARRAY_OF_MAPS that nothing
 * reads: the update is the wait.
 *
 * A grace period takes milliseconds (tens under load), so the daemon waits
 * on a thread of this module (quiesce_start) and is told on its event loop
 * when it is over; quiesce_wait blocks the caller instead (start, stop,
 * tests). One wait at a time; all calls from the loop's thread.
 */
#ifndef MYSTEER_QUIESCE_H
#define MYSTEER_QUIESCE_H

#include <stdbool.h>
#include <stddef.h>

struct evloop;
struct quiesce;

/* Called on the loop when a wait begun with quiesce_start is over. */
typedef void (*quiesce_done_fn)(void *arg);

/* The maps, and the waiting thread when l is given (else only quiesce_wait
 * works). NULL with err on failure. */
struct quiesce *quiesce_new(struct evloop *l, quiesce_done_fn done, void *arg, char *err,
                            size_t errlen);
/* Joins the thread, after a wait it runs has ended. */
void quiesce_free(struct quiesce *q);

/* Returns once every BPF program that was running when it was called has
 * ended. 0, or -1 with errno. */
int quiesce_wait(struct quiesce *q);

/* The same wait on the thread; done(arg) runs on the loop once it is over
 * (also when it failed: the failure is logged). -1 with errno EBUSY while
 * one runs, or on failure. */
int quiesce_start(struct quiesce *q);
bool quiesce_busy(const struct quiesce *q);

#endif
