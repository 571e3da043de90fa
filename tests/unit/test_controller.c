/*
 * test_controller.c - the controller with real probes but no server: a port
 * that refuses connections goes down after `fall` probes, a listener that
 * never answers is bounded by timeout_ms without holding back the other
 * backend, a snapshot is published only on changes, and a probe requested
 * from another thread runs on the loop; the resolver (names looked up off the
 * loop) answers on the loop, every request once, on a bounded pool of threads,
 * and never after it is freed.
 */
#include <check.h>
#include <mysql.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/evloop.h"
#include "common/topology.h"
#include "topo/controller.h"
#include "topo/resolver.h"

static struct config cfg;
static int publishes;
static const struct topology *last_pub;

static void on_publish(const struct topology *t, void *arg)
{
	publishes++;
	topo_put(last_pub);
	last_pub = topo_get(t);
}

static void stop_after(struct evloop *l, uint64_t id, void *arg)
{
	evloop_stop(l);
}

/* A listening socket on an ephemeral loopback port that never accepts: the
 * kernel completes the handshake, the server greeting never comes. */
static int mute_listener(uint16_t *port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(fd, 16), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

/* A port nothing listens on (bound, then closed). */
static uint16_t closed_port(void)
{
	uint16_t port;
	int fd = mute_listener(&port);
	close(fd);
	return port;
}

static void setup(void)
{
	memset(&cfg, 0, sizeof(cfg));
	cfg.interval_ms = 50;
	cfg.timeout_ms = 150;
	cfg.fall = 2;
	cfg.rise = 2;
	cfg.max_replication_lag_s = 10;
	strcpy(cfg.probe_user, "mysteer");
	strcpy(cfg.probe_password, "mysteer");
	publishes = 0;
	last_pub = NULL;
	ck_assert_int_eq(topo_subscribe(on_publish, NULL), 0);
}

static void teardown(void)
{
	topo_unsubscribe(on_publish, NULL);
	topo_put(last_pub);
	last_pub = NULL;
	topo_reset();
}

static struct ctl_backend_spec spec(const char *name, uint16_t port)
{
	struct ctl_backend_spec s = {.port = port, .priority = 100, .weight = 1};
	strcpy(s.name, name);
	strcpy(s.host, "127.0.0.1");
	return s;
}

START_TEST(test_refused_goes_down)
{
	struct evloop *l = evloop_new();
	struct controller *c = controller_new(l);
	struct ctl_backend_spec s = spec("gone", closed_port());
	ck_assert_int_eq(controller_apply(c, &cfg, &s, 1), 0);
	ck_assert_int_eq(publishes, 1); /* the apply itself */
	ck_assert_int_eq(last_pub->backends[0].health, HEALTH_UNKNOWN);
	evloop_add_timer(l, 600, stop_after, NULL);
	evloop_run(l);
	ck_assert_int_eq(last_pub->backends[0].health, HEALTH_DOWN);
	ck_assert_int_eq(last_pub->writer, -1);
	/* unknown -> down is one change: many failed probes, two publishes */
	ck_assert_int_eq(publishes, 2);
	struct topology *snap = controller_snapshot(c);
	ck_assert_ptr_nonnull(strstr(snap->backends[0].last_error, "connect"));
	ck_assert_int_gt(snap->backends[0].last_probe_ms, 0);
	topo_put(snap);
	controller_free(c);
	evloop_free(l);
}
END_TEST

/* Ids an earlier daemon left: a backend at an address a held id meant gets
 * it back, whatever its place in the list; a new one gets a fresh id, never
 * one the maps hold; the state file's id for a name comes back too. */
START_TEST(test_restore_ids)
{
	struct evloop *l = evloop_new();
	struct controller *c = controller_new(l);
	struct topo_prior_ids *p = calloc(1, sizeof(*p));
	struct ctl_backend_spec s[4] = {spec("new", closed_port()), spec("moved", closed_port()),
	                                spec("kept", closed_port()), spec("named", 3306)};
	struct sockaddr_in *a = (struct sockaddr_in *)&p->addr[5];

	strcpy(s[3].host, "db.invalid");
	p->writer_id = -1;
	p->held[5] = true;
	a->sin_family = AF_INET;
	a->sin_port = htons(s[1].port);
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	p->addrlen[5] = sizeof(*a);
	p->held[0] = p->held[2] = true; /* no address known: only held */
	strcpy(p->kept[1].name, "kept");
	strcpy(p->kept[1].host, "127.0.0.1");
	p->kept[1].port = s[2].port;
	strcpy(p->kept[7].name, "named");
	strcpy(p->kept[7].host, "db.invalid");
	p->kept[7].port = 3306;
	controller_restore_ids(c, p);
	ck_assert_int_eq(controller_apply(c, &cfg, s, 4), 0);
	ck_assert_int_eq(last_pub->backends[0].id, 3); /* 0, 1, 2 are held or kept */
	ck_assert_int_eq(last_pub->backends[1].id, 5);
	ck_assert_int_eq(last_pub->backends[2].id, 1);
	ck_assert_int_eq(last_pub->backends[3].id, 7);
	/* The restore is for the first apply only: one added later is fresh. */
	struct ctl_backend_spec s2[5] = {s[0], s[1], s[2], s[3], spec("later", closed_port())};
	ck_assert_int_eq(controller_apply(c, &cfg, s2, 5), 0);
	ck_assert_int_eq(last_pub->backends[4].id, 4);
	free(p);
	controller_free(c);
	evloop_free(l);
}
END_TEST

START_TEST(test_mute_server_bounded)
{
	uint16_t mport;
	int mfd = mute_listener(&mport);
	struct evloop *l = evloop_new();
	struct controller *c = controller_new(l);
	struct ctl_backend_spec s[2] = {spec("mute", mport), spec("gone", closed_port())};
	ck_assert_int_eq(controller_apply(c, &cfg, s, 2), 0);
	uint64_t t0 = mono_ms();
	/* "gone" must be down after ~2 intervals, not after the mute timeouts */
	while (mono_ms() - t0 < 2000) {
		evloop_add_timer(l, 20, stop_after, NULL);
		evloop_run(l);
		if (last_pub->backends[1].health == HEALTH_DOWN)
			break;
	}
	uint64_t gone_ms = mono_ms() - t0;
	ck_assert_int_eq(last_pub->backends[1].health, HEALTH_DOWN);
	/* before the mute one could even fail twice (>= 2 timeouts), and well
	 * under a second even on a loaded machine */
	ck_assert_int_ne(last_pub->backends[0].health, HEALTH_DOWN);
	ck_assert_uint_lt(gone_ms, 1000);
	while (mono_ms() - t0 < 3000 && last_pub->backends[0].health != HEALTH_DOWN) {
		evloop_add_timer(l, 20, stop_after, NULL);
		evloop_run(l);
	}
	ck_assert_int_eq(last_pub->backends[0].health, HEALTH_DOWN);
	struct topology *snap = controller_snapshot(c);
	ck_assert_ptr_nonnull(strstr(snap->backends[0].last_error, "no answer within 150 ms"));
	topo_put(snap);
	controller_free(c);
	evloop_free(l);
	close(mfd);
}
END_TEST

struct async_arg {
	struct controller *c;
	uint32_t id;
};

static void *requester(void *arg)
{
	struct async_arg *a = arg;
	controller_request_probe_async(a->c, a->id);
	return NULL;
}

static void on_wake(struct evloop *l, void *arg)
{
	controller_run_pending(arg);
	evloop_stop(l);
}

START_TEST(test_request_probe_from_thread)
{
	struct evloop *l = evloop_new();
	struct controller *c = controller_new(l);
	ck_assert_int_eq(evloop_set_wake(l, on_wake, c), 0);
	cfg.interval_ms = 60000; /* only the first probe and the requested one */
	cfg.fall = 2;
	struct ctl_backend_spec s = spec("gone", closed_port());
	ck_assert_int_eq(controller_apply(c, &cfg, &s, 1), 0);
	/* the first probe (at once) fails: one of two */
	evloop_add_timer(l, 100, stop_after, NULL);
	evloop_run(l);
	ck_assert_int_eq(last_pub->backends[0].health, HEALTH_UNKNOWN);
	struct async_arg a = {c, last_pub->backends[0].id};
	pthread_t th;
	ck_assert_int_eq(pthread_create(&th, NULL, requester, &a), 0);
	evloop_add_timer(l, 2000, stop_after, NULL);
	evloop_run(l); /* stops at the wake */
	pthread_join(th, NULL);
	/* the requested probe ran (refused at once): the second failure */
	evloop_add_timer(l, 100, stop_after, NULL);
	evloop_run(l);
	ck_assert_int_eq(last_pub->backends[0].health, HEALTH_DOWN);
	controller_free(c);
	evloop_free(l);
}
END_TEST

/* Lookups every millisecond while the backend is removed and added again:
 * a lookup that ends after its backend went must not touch it (valgrind and
 * ASan run this too). */
START_TEST(test_removed_while_resolving)
{
	ck_assert_int_eq(setenv("MYSTEER_TEST_RESOLVE_MS", "1", 1), 0);
	struct evloop *l = evloop_new();
	struct controller *c = controller_new(l);
	ck_assert_int_eq(unsetenv("MYSTEER_TEST_RESOLVE_MS"), 0);
	struct ctl_backend_spec s = spec("named", closed_port());
	strcpy(s.host, "localhost");
	for (int i = 0; i < 20; i++) {
		ck_assert_int_eq(controller_apply(c, &cfg, &s, i % 2 ? 0 : 1), 0);
		evloop_add_timer(l, 10, stop_after, NULL);
		evloop_run(l);
	}
	ck_assert_int_eq(controller_apply(c, &cfg, &s, 1), 0);
	evloop_add_timer(l, 50, stop_after, NULL);
	evloop_run(l);
	struct topology *snap = controller_snapshot(c);
	ck_assert_uint_eq(snap->nbackends, 1);
	ck_assert_str_eq(snap->backends[0].host, "localhost");
	ck_assert_uint_gt(snap->backends[0].addrlen, 0);
	topo_put(snap);
	controller_free(c);
	evloop_free(l);
}
END_TEST

/* A name's first lookup runs off the loop too: apply() returns with the
 * backend unresolved (no address, health unknown, not probed, "resolving" in
 * last_error), and the address arrives on the loop, in place (same id). */
START_TEST(test_first_lookup_async)
{
	struct evloop *l = evloop_new();
	struct controller *c = controller_new(l);
	cfg.fall = 1; /* a skipped probe counted as a failure would show at once */
	struct ctl_backend_spec s = spec("named", closed_port());
	strcpy(s.host, "localhost");
	ck_assert_int_eq(controller_apply(c, &cfg, &s, 1), 0);
	ck_assert_uint_eq(last_pub->nbackends, 1);
	ck_assert_uint_eq(last_pub->backends[0].addrlen, 0);
	ck_assert_int_eq(last_pub->backends[0].health, HEALTH_UNKNOWN);
	ck_assert_ptr_nonnull(strstr(last_pub->backends[0].last_error, "resolving localhost"));
	uint32_t id = last_pub->backends[0].id;
	uint64_t t0 = mono_ms();
	while (mono_ms() - t0 < 5000 && last_pub->backends[0].addrlen == 0) {
		evloop_add_timer(l, 5, stop_after, NULL);
		evloop_run(l);
	}
	ck_assert_uint_gt(last_pub->backends[0].addrlen, 0);
	ck_assert_uint_eq(last_pub->backends[0].id, id);
	ck_assert_ptr_null(strstr(last_pub->backends[0].last_error, "resolving"));
	/* then probed for real: refused, down after fall = 1 */
	while (mono_ms() - t0 < 5000 && last_pub->backends[0].health != HEALTH_DOWN) {
		evloop_add_timer(l, 5, stop_after, NULL);
		evloop_run(l);
	}
	ck_assert_int_eq(last_pub->backends[0].health, HEALTH_DOWN);
	ck_assert_uint_eq(last_pub->backends[0].id, id);
	ck_assert_ptr_nonnull(strstr(last_pub->backends[0].last_error, "connect"));
	controller_free(c);
	evloop_free(l);
}
END_TEST

static struct resolver_result got[4];
static int ngot;

static void on_resolved(void *arg, const struct resolver_result *r)
{
	if (ngot < 4)
		got[ngot] = *r;
	ngot++;
	if (ngot == 2)
		evloop_stop(arg);
}

/* The result of key, among the first n delivered (results come in the order
 * the lookups end, not the order they were submitted). */
static const struct resolver_result *got_key(uint32_t key, int n)
{
	for (int i = 0; i < n && i < 4; i++)
		if (got[i].key == key)
			return &got[i];
	return NULL;
}

START_TEST(test_resolver)
{
	struct evloop *l = evloop_new();
	struct resolver *r = resolver_new(l, on_resolved, l);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(resolver_is_name("localhost"), 1);
	ck_assert_int_eq(resolver_is_name("127.0.0.1"), 0);
	ck_assert_int_eq(resolver_is_name("::1"), 0);
	ngot = 0;
	/* localhost is in /etc/hosts: no DNS server is asked */
	ck_assert_int_eq(resolver_submit(r, 7, "localhost", 3306), 0);
	ck_assert_int_eq(resolver_submit(r, 8, "127.0.0.2", 3307), 0);
	evloop_add_timer(l, 5000, stop_after, NULL);
	evloop_run(l);
	ck_assert_int_eq(ngot, 2);
	const struct resolver_result *r7 = got_key(7, ngot), *r8 = got_key(8, ngot);
	ck_assert_ptr_nonnull(r7);
	ck_assert_int_eq(r7->err, 0);
	ck_assert_uint_gt(r7->naddrs, 0);
	ck_assert_uint_gt(r7->addrlen[0], 0);
	ck_assert_ptr_nonnull(r8);
	ck_assert_int_eq(r8->err, 0);
	ck_assert_uint_eq(r8->naddrs, 1);
	ck_assert_int_eq(r8->addr[0].ss_family, AF_INET);
	const struct sockaddr_in *sin = (const void *)&r8->addr[0];
	ck_assert_uint_eq(ntohl(sin->sin_addr.s_addr), 0x7f000002);
	ck_assert_uint_eq(ntohs(sin->sin_port), 3307);
	/* freed with a request queued or running: the callback never comes */
	ck_assert_int_eq(resolver_submit(r, 9, "localhost", 3306), 0);
	resolver_free(r);
	evloop_add_timer(l, 200, stop_after, NULL);
	evloop_run(l);
	ck_assert_int_eq(ngot, 2);
	evloop_free(l);
}
END_TEST

#define BURST 200
static int burst_seen[BURST], burst_total;

static void on_burst(void *arg, const struct resolver_result *r)
{
	ck_assert_uint_lt(r->key, BURST);
	ck_assert_int_eq(r->err, 0);
	ck_assert_uint_gt(r->naddrs, 0);
	const struct sockaddr_in *sin = (const void *)&r->addr[0];
	if (r->addr[0].ss_family == AF_INET)
		ck_assert_uint_eq(ntohs(sin->sin_port), 1000 + r->key);
	burst_seen[r->key]++;
	if (++burst_total == BURST)
		evloop_stop(arg);
}

/* Threads of this process now (/proc/self/task). */
static int nthreads(void)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");
	int n = -1;
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	fclose(f);
	return n;
}

/*
 * Threads of this process once they settle at `want`, or after `ms`. A joined
 * thread can still be counted for a moment (the kernel wakes the joiner
 * before it unlists the thread), and resolver_free detaches a worker that
 * takes over 500 ms to join, which valgrind's one-thread-at-a-time scheduling
 * can cause on a busy machine: either way it is gone soon after.
 */
static int nthreads_settled(int want, int ms)
{
	int n = nthreads(), waited = 0;

	for (; n != want && waited < ms; waited += 10) {
		usleep(10 * 1000);
		n = nthreads();
	}
	if (waited > 0)
		fprintf(stderr, "measured: threads at %d after %d ms (want %d)\n", n, waited, want);
	return n;
}

/* Many requests at once, in bursts from the loop: each delivered once, with
 * its own key and port, on the loop; no thread before the first request and
 * never more than RESOLVER_THREADS. */
START_TEST(test_resolver_burst)
{
	struct evloop *l = evloop_new();
	int before = nthreads();
	struct resolver *r = resolver_new(l, on_burst, l);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(nthreads(), before);
	memset(burst_seen, 0, sizeof(burst_seen));
	burst_total = 0;
	for (uint32_t k = 0; k < BURST; k++) {
		const char *host = k % 3 == 0 ? "localhost" : k % 3 == 1 ? "127.0.0.1" : "::1";
		ck_assert_int_eq(resolver_submit(r, k, host, (uint16_t)(1000 + k)), 0);
		ck_assert_int_le(nthreads() - before, RESOLVER_THREADS);
	}
	ck_assert_int_gt(nthreads() - before, 0);
	evloop_add_timer(l, 10000, stop_after, NULL);
	evloop_run(l);
	ck_assert_int_eq(burst_total, BURST);
	for (int k = 0; k < BURST; k++)
		ck_assert_int_eq(burst_seen[k], 1);
	ck_assert_int_le(nthreads() - before, RESOLVER_THREADS);
	/* Idle threads are joined: none is left once freed. */
	resolver_free(r);
	ck_assert_int_eq(nthreads_settled(before, 5000), before);
	evloop_add_timer(l, 100, stop_after, NULL);
	evloop_run(l);
	ck_assert_int_eq(burst_total, BURST);
	evloop_free(l);
}
END_TEST

int main(void)
{
	mysql_library_init(0, NULL, NULL);
	Suite *s = suite_create("controller");
	TCase *tc = tcase_create("probes");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, test_refused_goes_down);
	tcase_add_test(tc, test_restore_ids);
	tcase_add_test(tc, test_mute_server_bounded);
	tcase_add_test(tc, test_request_probe_from_thread);
	tcase_add_test(tc, test_resolver);
	tcase_add_test(tc, test_resolver_burst);
	tcase_add_test(tc, test_removed_while_resolving);
	tcase_add_test(tc, test_first_lookup_async);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	mysql_library_end();
	return failed ? 1 : 0;
}
