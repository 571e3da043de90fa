/*
 * evloop.h - a tiny epoll event loop: file descriptors and millisecond timers.
 *
 * One loop per thread; not thread-safe except evloop_wake(), which another
 * thread may call to run a callback on the loop's thread (eventfd).
 */
#ifndef MYSTEER_EVLOOP_H
#define MYSTEER_EVLOOP_H

#include <stdint.h>

#define EV_READ  1u
#define EV_WRITE 2u

struct evloop;
typedef void (*ev_fd_fn)(struct evloop *l, int fd, unsigned events, void *arg);
typedef void (*ev_timer_fn)(struct evloop *l, uint64_t timer_id, void *arg);
typedef void (*ev_wake_fn)(struct evloop *l, void *arg);

struct evloop *evloop_new(void);
void evloop_free(struct evloop *l);

int evloop_add_fd(struct evloop *l, int fd, unsigned events, ev_fd_fn fn, void *arg);
int evloop_mod_fd(struct evloop *l, int fd, unsigned events);
void evloop_del_fd(struct evloop *l, int fd);

/* One-shot timer after ms; returns an id > 0, or 0 on failure. */
uint64_t evloop_add_timer(struct evloop *l, uint64_t ms, ev_timer_fn fn, void *arg);
void evloop_del_timer(struct evloop *l, uint64_t id);

/* Set once: fn runs on the loop thread after any thread calls evloop_wake(). */
int evloop_set_wake(struct evloop *l, ev_wake_fn fn, void *arg);
void evloop_wake(struct evloop *l);

/* Runs until evloop_stop(); returns 0, or -1 on an epoll error. */
int evloop_run(struct evloop *l);
void evloop_stop(struct evloop *l);

/* CLOCK_MONOTONIC in ms / µs. */
uint64_t mono_ms(void);
uint64_t mono_us(void);

#endif
