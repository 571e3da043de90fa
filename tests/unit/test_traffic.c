/*
 * test_traffic.c - the admin socket's traffic window: the p99 of a
 * histogram's bucket counts, rates over the readings kept, a backend
 * forgotten when it is no longer sampled, and the window's length.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "admin/traffic.h"
#include "common/metrics.h"

START_TEST(traffic_window)
{
	struct metrics *m = metrics_new();
	const char *const be[] = {"backend", NULL};
	struct traffic *t = traffic_new(m);
	struct traffic_rates r;
	const double le[] = {0.001, 0.01, 0.1};
	uint64_t counts[4] = {90, 9, 1, 0};
	double p99;

	ck_assert(traffic_p99(le, 3, counts, &p99));
	ck_assert(p99 == 0.01); /* 99 of 100 are at or below 10 ms */
	counts[2] = 0;
	counts[3] = 5;
	ck_assert(traffic_p99(le, 3, counts, &p99));
	ck_assert(p99 == 0.1); /* past the bounds: the last bound */
	memset(counts, 0, sizeof(counts));
	ck_assert(!traffic_p99(le, 3, counts, &p99));

	struct metric_family *st = metrics_family(
	    m, METRIC_COUNTER, "mysteer_proxy_backend_statements_total", "h", be, NULL, 0, 0);
	traffic_begin(t);
	traffic_sample(t, "db1", 100, 1000);
	traffic_end(t);
	ck_assert(traffic_rates(t, "db1", &r));
	ck_assert(r.window_s == 0); /* one reading: no rate yet */
	metric_add(metric_at(st, "db1"), 30);
	traffic_begin(t);
	traffic_sample(t, "db1", 120, 3000);
	traffic_end(t);
	ck_assert(traffic_rates(t, "db1", &r));
	ck_assert(r.window_s == 2);
	ck_assert(r.connections_per_s == 10);
	ck_assert(r.statements_per_s == 15);
	ck_assert(!r.has_p99);
	/* a backend not sampled in a round is forgotten */
	traffic_begin(t);
	traffic_end(t);
	ck_assert(!traffic_rates(t, "db1", &r));
	/* the window keeps the last TRAFFIC_WINDOW_S + 1 readings */
	for (int i = 0; i < 30; i++) {
		traffic_begin(t);
		traffic_sample(t, "db2", (uint64_t)i * 7, 1000 * (int64_t)i);
		traffic_end(t);
	}
	ck_assert(traffic_rates(t, "db2", &r));
	ck_assert(r.window_s == TRAFFIC_WINDOW_S);
	ck_assert(r.connections_per_s == 7);
	traffic_free(t);
	metrics_free(m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("traffic");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, traffic_window);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
