/*
 * test_quiesce.c - quiesce_wait() returns only after every BPF program that
 * was running when it was called has ended: what the map publisher relies on
 * to never rewrite a generation a program still reads (no torn route however
 * close two publishes land).
 *
 * A thread on one CPU runs bpf/test_quiesce.bpf.c (an empty bpf_loop of
 * about 200 ms) through BPF_PROG_TEST_RUN; once the program has counted its
 * start, the main thread, on another CPU, waits (quiesce_wait, or
 * quiesce_start and its callback on an event loop, as the daemon does) and
 * then finds the program's end counted. Needs root (it loads a program) and
 * two CPUs; nothing is attached anywhere. Under valgrind, which runs one thread
 * at a time (the main thread's wait for the start would starve the runner),
 * it says so and checks nothing.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <valgrind/valgrind.h>

#include "common/evloop.h"
#include "maps/quiesce.h"
#include "test_quiesce.skel.h"

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

struct run {
	int prog_fd;
	int rc;
	uint64_t us; /* how long the run took */
};

/* Pins the calling thread to one CPU. */
static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	ck_assert_int_eq(pthread_setaffinity_np(pthread_self(), sizeof(set), &set), 0);
}

static void *run_prog(void *arg)
{
	struct run *r = arg;
	unsigned char pkt[64] = {0};
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = pkt, .data_size_in = sizeof(pkt), .repeat = 1);
	uint64_t t0 = now_us();

	r->rc = bpf_prog_test_run_opts(r->prog_fd, &o);
	r->us = now_us() - t0;
	return NULL;
}

/* The asynchronous wait: quiesce_start, then the loop until its callback. */
struct async {
	struct evloop *loop;
	struct quiesce *q;
	bool done;
};

static void on_done(void *arg)
{
	struct async *a = arg;

	a->done = true;
	evloop_stop(a->loop);
}

static void on_deadline(struct evloop *l, uint64_t id, void *arg)
{
	evloop_stop(l);
}

static int wait_async(struct async *a)
{
	uint64_t timer;

	a->done = false;
	if (quiesce_start(a->q))
		return -1;
	ck_assert(quiesce_busy(a->q));
	timer = evloop_add_timer(a->loop, 10000, on_deadline, NULL);
	evloop_run(a->loop);
	evloop_del_timer(a->loop, timer);
	ck_assert_msg(a->done, "the wait's callback did not run within 10 s");
	ck_assert(!quiesce_busy(a->q));
	return 0;
}

/* Runs the program once in a thread; returns once it counted its start.
 * Returns 0 when it was still running when wait ran, 1 when it had already
 * ended (a run too short to show anything), -1 on a failure. a: wait
 * through the loop, else quiesce_wait on q. */
static int one_round(struct test_quiesce *skel, struct quiesce *q, struct async *a,
                     uint64_t *wait_us)
{
	volatile __u64 *started = &skel->bss->started, *ended = &skel->bss->ended;
	struct run r = {.prog_fd = bpf_program__fd(skel->progs.ms_test_spin)};
	__u64 s0 = *started, e0 = *ended, e_before;
	pthread_attr_t attr;
	cpu_set_t set;
	uint64_t t0, deadline = now_us() + 10 * 1000000;
	pthread_t th;

	/* The program holds its CPU to its end: the runner on CPU 1, this
	 * thread on CPU 0 (pinned by the caller). */
	CPU_ZERO(&set);
	CPU_SET(1, &set);
	ck_assert_int_eq(pthread_attr_init(&attr), 0);
	ck_assert_int_eq(pthread_attr_setaffinity_np(&attr, sizeof(set), &set), 0);
	ck_assert_int_eq(pthread_create(&th, &attr, run_prog, &r), 0);
	pthread_attr_destroy(&attr);
	while (*started == s0 && now_us() < deadline)
		;
	ck_assert_msg(*started != s0, "the program did not start within 10 s");
	e_before = *ended;
	t0 = now_us();
	ck_assert_int_eq(a ? wait_async(a) : quiesce_wait(q), 0);
	*wait_us = now_us() - t0;
	/* The point: a program that was running when the wait began has ended
	 * by the time it returns. */
	ck_assert_uint_eq(*ended, e0 + 1);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(r.rc, 0);
	printf("measured: program ran %llu us, %s took %llu us, %s when it began\n",
	       (unsigned long long)r.us, a ? "quiesce_start + callback" : "quiesce_wait",
	       (unsigned long long)*wait_us, e_before == e0 ? "running" : "already ended");
	return e_before == e0 ? 0 : 1;
}

START_TEST(wait_outlasts_a_running_program)
{
	struct test_quiesce *skel;
	struct quiesce *q;
	struct async a = {0};
	char err[256];
	uint64_t wait_us;
	int seen_running = 0, seen_async = 0;

	if (RUNNING_ON_VALGRIND) {
		printf("skipped under valgrind: it runs one thread at a time\n");
		return;
	}
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		printf("skipped: one CPU, the program would hold it to its end\n");
		return;
	}
	pin(0);
	skel = test_quiesce__open();
	ck_assert_ptr_nonnull(skel);
	ck_assert_int_eq(test_quiesce__load(skel), 0);
	a.loop = evloop_new();
	ck_assert_ptr_nonnull(a.loop);
	q = quiesce_new(a.loop, on_done, &a, err, sizeof(err));
	ck_assert_msg(q, "%s", err);
	a.q = q;

	/* Size the run to about 200 ms: long enough for the main thread to see
	 * it running on a loaded machine, short enough not to hold a core
	 * long. */
	struct run r = {.prog_fd = bpf_program__fd(skel->progs.ms_test_spin)};
	run_prog(&r);
	ck_assert_int_eq(r.rc, 0);
	__u32 rounds = r.us ? (__u32)(200000 / r.us) + 1 : 64;
	skel->data->rounds = rounds > 64 ? 64 : rounds;
	printf("measured: one round of 2^23 iterations took %llu us; %u rounds\n",
	       (unsigned long long)r.us, skel->data->rounds);

	/* Each round asserts the ordering; at least one must have caught the
	 * program running when the wait began, or nothing was shown. */
	for (int i = 0; i < 10 && seen_running < 2; i++)
		seen_running += one_round(skel, q, NULL, &wait_us) == 0;
	ck_assert_msg(seen_running >= 1, "the program always ended before the wait began");
	for (int i = 0; i < 10 && seen_async < 2; i++)
		seen_async += one_round(skel, q, &a, &wait_us) == 0;
	ck_assert_msg(seen_async >= 1, "the program always ended before the async wait began");

	quiesce_free(q);
	evloop_free(a.loop);
	test_quiesce__destroy(skel);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("quiesce");
	TCase *tc = tcase_create("quiesce");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, wait_outlasts_a_running_program);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
