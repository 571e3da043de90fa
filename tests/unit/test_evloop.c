/*
 * test_evloop.c - the event loop: timer order and deletion, descriptor
 * events, removal inside a callback, and wake-ups from another thread; and
 * the array growth the loop's timers (and other parts) use, and the
 * non-blocking socket step every handler on a loop takes.
 */
#include <check.h>
#include <pthread.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/array.h"
#include "common/evloop.h"
#include "common/io.h"

static int order[8], norder;

static void t_rec(struct evloop *l, uint64_t id, void *arg)
{
	order[norder++] = (int)(intptr_t)arg;
}

static void t_stop(struct evloop *l, uint64_t id, void *arg)
{
	evloop_stop(l);
}

START_TEST(test_timers_order_and_delete)
{
	struct evloop *l = evloop_new();
	ck_assert_ptr_nonnull(l);
	norder = 0;
	/* Each timer counts from its own evloop_add_timer call, so t0 is taken
	 * before the first, and deadlines are 100 ms apart: a slow add
	 * (valgrind, a loaded machine) neither makes the last one look early
	 * nor swaps two of them. */
	uint64_t t0 = mono_ms();
	evloop_add_timer(l, 300, t_rec, (void *)3);
	evloop_add_timer(l, 100, t_rec, (void *)1);
	uint64_t gone = evloop_add_timer(l, 200, t_rec, (void *)99);
	evloop_add_timer(l, 200, t_rec, (void *)2);
	evloop_add_timer(l, 400, t_stop, NULL);
	evloop_del_timer(l, gone);
	ck_assert_int_eq(evloop_run(l), 0);
	ck_assert_uint_ge(mono_ms() - t0, 399);
	ck_assert_int_eq(norder, 3);
	ck_assert_int_eq(order[0], 1);
	ck_assert_int_eq(order[1], 2);
	ck_assert_int_eq(order[2], 3);
	evloop_free(l);
}
END_TEST

static int reads;
static void on_read(struct evloop *l, int fd, unsigned ev, void *arg)
{
	char b[16];
	ck_assert(ev & EV_READ);
	ck_assert_int_gt(read(fd, b, sizeof(b)), 0);
	reads++;
	/* removing itself inside the callback must be safe */
	evloop_del_fd(l, fd);
	evloop_stop(l);
}

START_TEST(test_fd_event)
{
	struct evloop *l = evloop_new();
	int p[2];
	ck_assert_int_eq(pipe(p), 0);
	reads = 0;
	ck_assert_int_eq(evloop_add_fd(l, p[0], EV_READ, on_read, NULL), 0);
	ck_assert_int_eq(evloop_add_fd(l, p[0], EV_READ, on_read, NULL), -1);
	ck_assert_int_eq(write(p[1], "x", 1), 1);
	evloop_add_timer(l, 2000, t_stop, NULL);
	evloop_run(l);
	ck_assert_int_eq(reads, 1);
	close(p[0]);
	close(p[1]);
	evloop_free(l);
}
END_TEST

static int wakes;
static void on_wake(struct evloop *l, void *arg)
{
	wakes++;
	evloop_stop(l);
}

static void *waker(void *arg)
{
	usleep(20000);
	evloop_wake(arg);
	return NULL;
}

START_TEST(test_wake_from_thread)
{
	struct evloop *l = evloop_new();
	pthread_t th;
	wakes = 0;
	ck_assert_int_eq(evloop_set_wake(l, on_wake, NULL), 0);
	ck_assert_int_eq(evloop_set_wake(l, on_wake, NULL), -1);
	evloop_add_timer(l, 5000, t_stop, NULL);
	ck_assert_int_eq(pthread_create(&th, NULL, waker, l), 0);
	uint64_t t0 = mono_ms();
	evloop_run(l);
	pthread_join(th, NULL);
	ck_assert_int_eq(wakes, 1);
	ck_assert_uint_lt(mono_ms() - t0, 4000);
	evloop_free(l);
}
END_TEST

START_TEST(test_array_reserve)
{
	int *v = NULL;
	size_t n = 0, cap = 0;

	for (int i = 0; i < 100; i++) {
		ck_assert_int_eq(ARRAY_RESERVE(v, n, cap, 4), 0);
		v[n++] = i;
	}
	ck_assert_uint_eq(cap, 128); /* 4, 8, ..., 128 */
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(v[i], i);
	free(v);

	/* The capacity's own type runs out: refused, nothing changed. */
	char *c = malloc(200);
	unsigned char ccap = 200, cn = 200;
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(ARRAY_RESERVE(c, cn, ccap, 8), -1);
	ck_assert_uint_eq(ccap, 200);
	free(c);

	/* A byte size that overflows: refused, nothing changed. */
	struct big {
		char b[1 << 20];
	} *big = NULL;
	volatile size_t huge = SIZE_MAX / 4; /* not folded into the call */
	size_t bcap = huge, bn = bcap;
	ck_assert_int_eq(ARRAY_RESERVE(big, bn, bcap, 1), -1);
	ck_assert_ptr_null(big);
	ck_assert_uint_eq(bcap, SIZE_MAX / 4);
}
END_TEST

START_TEST(test_io_steps)
{
	int sv[2];
	char buf[8];
	size_t n = 99;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	ck_assert_int_eq(io_recv_step(sv[0], buf, sizeof(buf), &n), IO_AGAIN);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(io_send_step(sv[1], "abc", 3, &n), IO_MOVED);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(io_recv_step(sv[0], buf, sizeof(buf), &n), IO_MOVED);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(memcmp(buf, "abc", 3), 0);
	close(sv[1]);
	ck_assert_int_eq(io_recv_step(sv[0], buf, sizeof(buf), &n), IO_CLOSED);
	ck_assert_int_eq(errno, 0); /* the end of the stream, not an error */
	/* A closed peer is IO_CLOSED with EPIPE, not a SIGPIPE. */
	ck_assert_int_eq(io_send_step(sv[0], "x", 1, &n), IO_CLOSED);
	ck_assert_int_eq(errno, EPIPE);
	close(sv[0]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("evloop");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_timers_order_and_delete);
	tcase_add_test(tc, test_fd_event);
	tcase_add_test(tc, test_wake_from_thread);
	tcase_add_test(tc, test_array_reserve);
	tcase_add_test(tc, test_io_steps);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
