/*
 * evloop.c - see evloop.h. epoll for descriptors, a deadline-sorted array for
 * timers (a few hundred at most: two per probed backend), an eventfd for
 * wake-ups from other threads.
 *
 * Descriptor slots carry a generation that is also stored in the epoll event,
 * so an event already fetched for a descriptor that a callback removed (and
 * maybe re-added) in the same batch is dropped instead of misdelivered.
 */
#include "common/evloop.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/array.h"

struct fd_slot {
	ev_fd_fn fn;
	void *arg;
	uint32_t gen;
	bool used;
};

struct ev_timer {
	uint64_t due_ms;
	uint64_t id;
	ev_timer_fn fn;
	void *arg;
};

struct evloop {
	int epfd;
	int wakefd;
	ev_wake_fn wake_fn;
	void *wake_arg;
	struct fd_slot *fds;
	size_t nfds;
	struct ev_timer *timers; /* sorted by due_ms, then id */
	size_t ntimers, captimers;
	uint64_t next_timer_id;
	uint32_t next_gen;
	volatile bool stop;
};

uint64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t mono_ms(void)
{
	return mono_us() / 1000u;
}

struct evloop *evloop_new(void)
{
	struct evloop *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->wakefd = -1;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		free(l);
		return NULL;
	}
	l->next_timer_id = 1;
	l->next_gen = 1;
	return l;
}

void evloop_free(struct evloop *l)
{
	if (!l)
		return;
	if (l->wakefd >= 0)
		close(l->wakefd);
	close(l->epfd);
	free(l->fds);
	free(l->timers);
	free(l);
}

static int grow_fds(struct evloop *l, int fd)
{
	if ((size_t)fd < l->nfds)
		return 0;
	size_t n = l->nfds ? l->nfds : 64;
	while (n <= (size_t)fd)
		n *= 2;
	struct fd_slot *s = realloc(l->fds, n * sizeof(*s));
	if (!s)
		return -1;
	memset(s + l->nfds, 0, (n - l->nfds) * sizeof(*s));
	l->fds = s;
	l->nfds = n;
	return 0;
}

static uint32_t ep_events(unsigned events)
{
	uint32_t e = 0;
	if (events & EV_READ)
		e |= EPOLLIN | EPOLLRDHUP;
	if (events & EV_WRITE)
		e |= EPOLLOUT;
	return e;
}

static int ep_ctl(struct evloop *l, int op, int fd, unsigned events)
{
	struct epoll_event ev = {.events = ep_events(events)};
	ev.data.u64 = (uint64_t)(uint32_t)fd | ((uint64_t)l->fds[fd].gen << 32);
	return epoll_ctl(l->epfd, op, fd, &ev);
}

int evloop_add_fd(struct evloop *l, int fd, unsigned events, ev_fd_fn fn, void *arg)
{
	if (fd < 0 || !fn || grow_fds(l, fd) < 0)
		return -1;
	struct fd_slot *s = &l->fds[fd];
	if (s->used) {
		errno = EEXIST;
		return -1;
	}
	*s = (struct fd_slot){.fn = fn, .arg = arg, .gen = l->next_gen++, .used = true};
	if (ep_ctl(l, EPOLL_CTL_ADD, fd, events) < 0) {
		s->used = false;
		return -1;
	}
	return 0;
}

int evloop_mod_fd(struct evloop *l, int fd, unsigned events)
{
	if (fd < 0 || (size_t)fd >= l->nfds || !l->fds[fd].used) {
		errno = ENOENT;
		return -1;
	}
	return ep_ctl(l, EPOLL_CTL_MOD, fd, events);
}

void evloop_del_fd(struct evloop *l, int fd)
{
	if (fd < 0 || (size_t)fd >= l->nfds || !l->fds[fd].used)
		return;
	l->fds[fd].used = false;
	/* The descriptor may already be closed; then the kernel dropped it. */
	(void)epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
}

uint64_t evloop_add_timer(struct evloop *l, uint64_t ms, ev_timer_fn fn, void *arg)
{
	if (!fn)
		return 0;
	if (ARRAY_RESERVE(l->timers, l->ntimers, l->captimers, 64) < 0)
		return 0;
	struct ev_timer nt = {
	    .due_ms = mono_ms() + ms, .id = l->next_timer_id++, .fn = fn, .arg = arg};
	/* Later ids sort after equal deadlines, so timers fire in the order set. */
	size_t lo = 0, hi = l->ntimers;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (l->timers[mid].due_ms <= nt.due_ms)
			lo = mid + 1;
		else
			hi = mid;
	}
	memmove(&l->timers[lo + 1], &l->timers[lo], (l->ntimers - lo) * sizeof(nt));
	l->timers[lo] = nt;
	l->ntimers++;
	return nt.id;
}

void evloop_del_timer(struct evloop *l, uint64_t id)
{
	for (size_t i = 0; i < l->ntimers; i++) {
		if (l->timers[i].id != id)
			continue;
		memmove(&l->timers[i], &l->timers[i + 1],
		        (l->ntimers - i - 1) * sizeof(l->timers[0]));
		l->ntimers--;
		return;
	}
}

static void on_wake(struct evloop *l, int fd, unsigned events, void *arg)
{
	uint64_t v;
	ssize_t r = read(fd, &v, sizeof(v));
	(void)r;
	if (l->wake_fn)
		l->wake_fn(l, l->wake_arg);
}

int evloop_set_wake(struct evloop *l, ev_wake_fn fn, void *arg)
{
	if (l->wakefd >= 0)
		return -1;
	l->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (l->wakefd < 0)
		return -1;
	l->wake_fn = fn;
	l->wake_arg = arg;
	if (evloop_add_fd(l, l->wakefd, EV_READ, on_wake, NULL) < 0) {
		close(l->wakefd);
		l->wakefd = -1;
		return -1;
	}
	return 0;
}

void evloop_wake(struct evloop *l)
{
	uint64_t one = 1;
	if (l->wakefd < 0)
		return;
	ssize_t r = write(l->wakefd, &one, sizeof(one));
	(void)r; /* only fails when the counter is saturated: a wake is pending */
}

/* Fires the timers due now; a callback may add or delete timers. */
static void run_timers(struct evloop *l)
{
	uint64_t now = mono_ms();
	uint64_t last_id = l->next_timer_id; /* timers added by callbacks wait */
	while (l->ntimers && l->timers[0].due_ms <= now && !l->stop) {
		struct ev_timer t = l->timers[0];
		if (t.id >= last_id)
			break;
		memmove(&l->timers[0], &l->timers[1], (l->ntimers - 1) * sizeof(t));
		l->ntimers--;
		t.fn(l, t.id, t.arg);
	}
}

static int next_timeout(struct evloop *l)
{
	if (!l->ntimers)
		return -1;
	uint64_t now = mono_ms();
	if (l->timers[0].due_ms <= now)
		return 0;
	uint64_t d = l->timers[0].due_ms - now;
	return d > 60000 ? 60000 : (int)d;
}

int evloop_run(struct evloop *l)
{
	struct epoll_event evs[64];
	l->stop = false;
	while (!l->stop) {
		int n = epoll_wait(l->epfd, evs, 64, next_timeout(l));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		for (int i = 0; i < n && !l->stop; i++) {
			int fd = (int)(uint32_t)evs[i].data.u64;
			uint32_t gen = (uint32_t)(evs[i].data.u64 >> 32);
			if ((size_t)fd >= l->nfds || !l->fds[fd].used || l->fds[fd].gen != gen)
				continue;
			unsigned e = 0;
			if (evs[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
				e |= EV_READ;
			if (evs[i].events & (EPOLLOUT | EPOLLHUP | EPOLLERR))
				e |= EV_WRITE;
			l->fds[fd].fn(l, fd, e, l->fds[fd].arg);
		}
		run_timers(l);
	}
	return 0;
}

void evloop_stop(struct evloop *l)
{
	l->stop = true;
}
