/*
 * quiesce.c - see quiesce.h. The thread sleeps on an eventfd for a request,
 * waits, and answers on a second eventfd that the loop watches.
 */
#define _GNU_SOURCE
#include "maps/quiesce.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "common/evloop.h"
#include "common/log.h"
#include "common/thread.h"

struct quiesce {
	int outer, inner; /* the map-in-map and the map it holds */
	struct evloop *loop;
	quiesce_done_fn done;
	void *arg;
	int req_fd, done_fd; /* eventfds: loop -> thread, thread -> loop */
	pthread_t thread;
	bool has_thread, busy;
	atomic_bool stop;
	atomic_int err; /* errno of the thread's last wait, 0 when it worked */
};

int quiesce_wait(struct quiesce *q)
{
	__u32 zero = 0;

	return bpf_map_update_elem(q->outer, &zero, &q->inner, BPF_ANY) ? -1 : 0;
}

static void *waiter(void *arg)
{
	struct quiesce *q = arg;
	uint64_t v;

	for (;;) {
		if (read(q->req_fd, &v, sizeof(v)) != (ssize_t)sizeof(v)) {
			if (errno == EINTR)
				continue;
			atomic_store(&q->err, errno);
			break;
		}
		if (atomic_load(&q->stop))
			break;
		atomic_store(&q->err, quiesce_wait(q) ? errno : 0);
		v = 1;
		if (write(q->done_fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
			break; /* the loop would wait forever: nothing to tell it with */
	}
	return NULL;
}

static void on_done(struct evloop *l, int fd, unsigned events, void *arg)
{
	struct quiesce *q = arg;
	uint64_t v;
	int err;

	if (read(fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
		return; /* spurious: nothing written yet */
	q->busy = false;
	err = atomic_load(&q->err);
	if (err)
		log_error("quiesce: wait for BPF programs: %s", strerror(err));
	q->done(q->arg);
}

static int start_thread(struct quiesce *q, char *err, size_t errlen)
{
	int rc;

	q->req_fd = eventfd(0, EFD_CLOEXEC);
	q->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (q->req_fd < 0 || q->done_fd < 0) {
		snprintf(err, errlen, "quiesce: eventfd: %s", strerror(errno));
		return -1;
	}
	if (evloop_add_fd(q->loop, q->done_fd, EV_READ, on_done, q)) {
		snprintf(err, errlen, "quiesce: evloop_add_fd failed");
		return -1;
	}
	rc = pthread_create(&q->thread, NULL, waiter, q);
	if (rc) {
		evloop_del_fd(q->loop, q->done_fd);
		snprintf(err, errlen, "quiesce: thread: %s", strerror(rc));
		return -1;
	}
	q->has_thread = true;
	thread_name(q->thread, "mysteer-quiesce");
	return 0;
}

struct quiesce *quiesce_new(struct evloop *l, quiesce_done_fn done, void *arg, char *err,
                            size_t errlen)
{
	LIBBPF_OPTS(bpf_map_create_opts, o);
	struct quiesce *q = calloc(1, sizeof(*q));

	if (!q) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	q->outer = q->req_fd = q->done_fd = -1;
	q->loop = l;
	q->done = done;
	q->arg = arg;
	q->inner = bpf_map_create(BPF_MAP_TYPE_ARRAY, "ms_quiesce_in", 4, 4, 1, NULL);
	if (q->inner >= 0) {
		o.inner_map_fd = q->inner;
		q->outer = bpf_map_create(BPF_MAP_TYPE_ARRAY_OF_MAPS, "ms_quiesce", 4, 4, 1, &o);
	}
	if (q->outer < 0) {
		snprintf(err, errlen, "create the map-in-map that waits for BPF programs: %s",
		         strerror(errno));
		quiesce_free(q);
		return NULL;
	}
	if (l && start_thread(q, err, errlen)) {
		quiesce_free(q);
		return NULL;
	}
	return q;
}

int quiesce_start(struct quiesce *q)
{
	uint64_t v = 1;

	if (!q->has_thread || q->busy) {
		errno = q->has_thread ? EBUSY : EINVAL;
		return -1;
	}
	if (write(q->req_fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
		return -1;
	q->busy = true;
	return 0;
}

bool quiesce_busy(const struct quiesce *q)
{
	return q && q->busy;
}

void quiesce_free(struct quiesce *q)
{
	uint64_t v = 1;

	if (!q)
		return;
	if (q->has_thread) {
		atomic_store(&q->stop, true);
		evloop_del_fd(q->loop, q->done_fd);
		if (write(q->req_fd, &v, sizeof(v)) != (ssize_t)sizeof(v)) {
			/* The thread may still use q: left to it, not freed. */
			log_error("quiesce: cannot stop the thread: %s", strerror(errno));
			pthread_detach(q->thread);
			return;
		}
		pthread_join(q->thread, NULL);
	}
	if (q->req_fd >= 0)
		close(q->req_fd);
	if (q->done_fd >= 0)
		close(q->done_fd);
	if (q->outer >= 0)
		close(q->outer);
	if (q->inner >= 0)
		close(q->inner);
	free(q);
}
