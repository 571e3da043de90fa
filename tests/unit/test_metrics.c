/*
 * test_metrics.c - the metrics registry and its two renderings: the
 * Prometheus text format (HELP/TYPE lines, escapes of label values and help,
 * histogram buckets, numbers) and the JSON of `mysteerctl status --json`,
 * which must carry the same figures; bounded label sets; collectors; a
 * series read back without making it.
 */
#include <check.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/metrics.h"

static const char *const L_BACKEND[] = {"backend", NULL};
static const char *const L_ROUTE_PATH[] = {"route", "path", NULL};

START_TEST(text_format)
{
	struct metrics *m = metrics_new();
	ck_assert_ptr_nonnull(m);
	struct metric_family *c =
	    metrics_family(m, METRIC_COUNTER, "mysteer_steered_connections_total",
	                   "Connections steered\nby the kernel, C:\\x", L_ROUTE_PATH, NULL, 0, 0);
	struct metric_family *g = metrics_family(m, METRIC_GAUGE, "mysteer_backend_lag_seconds",
	                                         "Lag", L_BACKEND, NULL, 0, 0);
	static const double bk[] = {0.001, 0.5, 2};
	struct metric_family *h = metrics_family(m, METRIC_HISTOGRAM, "mysteer_probe_seconds",
	                                         "Probe time", L_BACKEND, bk, 3, 0);
	ck_assert_ptr_nonnull(c);
	ck_assert_ptr_nonnull(g);
	ck_assert_ptr_nonnull(h);

	metric_add(metric_at(c, "rw", "connect"), 3);
	metric_inc(metric_at(c, "r\"o\\\nx", "lookup"));
	metric_set(metric_at(g, "db1"), 1.5);
	metric_set(metric_at(g, "db2"), 0.1);
	struct metric_series *hs = metric_at(h, "db1");
	metric_observe(hs, 0.0005);
	metric_observe(hs, 0.25);
	metric_observe(hs, 0.5); /* on a bound: in that bucket */
	metric_observe(hs, 30);
	ck_assert(metric_at(h, "db1") == hs);

	size_t len = 0;
	char *t = metrics_render_text(m, &len);
	ck_assert_ptr_nonnull(t);
	ck_assert_uint_eq(len, strlen(t));
	const char *want =
	    "# HELP mysteer_metrics_series_dropped_total Label sets refused because their family "
	    "was full\n"
	    "# TYPE mysteer_metrics_series_dropped_total counter\n"
	    "mysteer_metrics_series_dropped_total 0\n"
	    "# HELP mysteer_steered_connections_total Connections steered\\nby the kernel, "
	    "C:\\\\x\n"
	    "# TYPE mysteer_steered_connections_total counter\n"
	    "mysteer_steered_connections_total{route=\"rw\",path=\"connect\"} 3\n"
	    "mysteer_steered_connections_total{route=\"r\\\"o\\\\\\nx\",path=\"lookup\"} 1\n"
	    "# HELP mysteer_backend_lag_seconds Lag\n"
	    "# TYPE mysteer_backend_lag_seconds gauge\n"
	    "mysteer_backend_lag_seconds{backend=\"db1\"} 1.5\n"
	    "mysteer_backend_lag_seconds{backend=\"db2\"} 0.1\n"
	    "# HELP mysteer_probe_seconds Probe time\n"
	    "# TYPE mysteer_probe_seconds histogram\n"
	    "mysteer_probe_seconds_bucket{backend=\"db1\",le=\"0.001\"} 1\n"
	    "mysteer_probe_seconds_bucket{backend=\"db1\",le=\"0.5\"} 3\n"
	    "mysteer_probe_seconds_bucket{backend=\"db1\",le=\"2\"} 3\n"
	    "mysteer_probe_seconds_bucket{backend=\"db1\",le=\"+Inf\"} 4\n"
	    "mysteer_probe_seconds_sum{backend=\"db1\"} 30.7505\n"
	    "mysteer_probe_seconds_count{backend=\"db1\"} 4\n";
	ck_assert_str_eq(t, want);
	free(t);

	/* specials in Go's spelling */
	metric_set(metric_at(g, "db1"), NAN);
	metric_set(metric_at(g, "db2"), -INFINITY);
	t = metrics_render_text(m, NULL);
	ck_assert_ptr_nonnull(strstr(t, "{backend=\"db1\"} NaN\n"));
	ck_assert_ptr_nonnull(strstr(t, "{backend=\"db2\"} -Inf\n"));
	free(t);
	metrics_free(m);
}
END_TEST

/* The JSON carries the same series and values as the text. */
START_TEST(json_same_figures)
{
	struct metrics *m = metrics_new();
	struct metric_family *c =
	    metrics_family(m, METRIC_COUNTER, "mysteer_x_total", "X", L_BACKEND, NULL, 0, 0);
	static const double bk[] = {1, 2};
	struct metric_family *h =
	    metrics_family(m, METRIC_HISTOGRAM, "mysteer_y_seconds", "Y", NULL, bk, 2, 0);
	metric_add(metric_at(c, "a\"b"), 7);
	metric_observe(metric_series(h, NULL), 1.5);
	metric_observe(metric_series(h, NULL), 0.25);

	json_object *j = metrics_render_json(m);
	json_object *f, *arr, *s, *v;
	ck_assert(json_object_object_get_ex(j, "mysteer_x_total", &f));
	ck_assert(json_object_object_get_ex(f, "type", &v));
	ck_assert_str_eq(json_object_get_string(v), "counter");
	ck_assert(json_object_object_get_ex(f, "series", &arr));
	ck_assert_uint_eq(json_object_array_length(arr), 1);
	s = json_object_array_get_idx(arr, 0);
	ck_assert(json_object_object_get_ex(s, "value", &v));
	ck_assert_int_eq(json_object_get_int64(v), 7);
	ck_assert(json_object_object_get_ex(s, "labels", &v));
	ck_assert(json_object_object_get_ex(v, "backend", &v));
	ck_assert_str_eq(json_object_get_string(v), "a\"b");

	ck_assert(json_object_object_get_ex(j, "mysteer_y_seconds", &f));
	ck_assert(json_object_object_get_ex(f, "series", &arr));
	s = json_object_array_get_idx(arr, 0);
	ck_assert(json_object_object_get_ex(s, "count", &v));
	ck_assert_int_eq(json_object_get_int64(v), 2);
	ck_assert(json_object_object_get_ex(s, "sum", &v));
	ck_assert(fabs(json_object_get_double(v) - 1.75) < 1e-12);
	ck_assert(json_object_object_get_ex(s, "buckets", &v));
	ck_assert_uint_eq(json_object_array_length(v), 3);
	json_object *last = json_object_array_get_idx(v, 2);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(last, 0)), "+Inf");
	ck_assert_int_eq(json_object_get_int64(json_object_array_get_idx(last, 1)), 2);
	ck_assert_int_eq(
	    json_object_get_int64(json_object_array_get_idx(json_object_array_get_idx(v, 0), 1)),
	    1);
	json_object_put(j);
	metrics_free(m);
}
END_TEST

struct coll {
	struct metric_family *f;
	int calls;
	const char *name;
};

static void collector(struct metrics *m, void *arg)
{
	struct coll *c = arg;
	c->calls++;
	if (c->name)
		metric_set(metric_at(c->f, c->name), c->calls);
}

/* A collected family holds only what the collector set this time. */
START_TEST(collected)
{
	struct metrics *m = metrics_new();
	struct coll c = {0};
	c.f = metrics_family(m, METRIC_GAUGE, "mysteer_backend_up", "Up", L_BACKEND, NULL, 0,
	                     METRIC_COLLECTED);
	ck_assert_int_eq(metrics_add_collector(m, collector, &c), 0);
	c.name = "db1";
	char *t = metrics_render_text(m, NULL);
	ck_assert_ptr_nonnull(strstr(t, "mysteer_backend_up{backend=\"db1\"} 1\n"));
	free(t);
	c.name = "db2";
	t = metrics_render_text(m, NULL);
	ck_assert_ptr_null(strstr(t, "db1"));
	ck_assert_ptr_nonnull(strstr(t, "mysteer_backend_up{backend=\"db2\"} 2\n"));
	free(t);
	c.name = NULL; /* nothing set: the family is left out */
	t = metrics_render_text(m, NULL);
	ck_assert_ptr_null(strstr(t, "mysteer_backend_up"));
	free(t);
	metrics_remove_collector(m, collector, &c);
	t = metrics_render_text(m, NULL);
	ck_assert_int_eq(c.calls, 3);
	free(t);
	metrics_free(m);
}
END_TEST

/* Bad names and clashes are refused; the same family again is the same. */
START_TEST(registration)
{
	struct metrics *m = metrics_new();
	static const char *const bad_label[] = {"__x", NULL};
	static const char *const le[] = {"le", NULL};
	static const char *const dup[] = {"a", "a", NULL};
	static const char *const five[] = {"a", "b", "c", "d", "e", NULL};
	static const double down[] = {2, 1};
	static const double one[] = {1};

	ck_assert_ptr_null(metrics_family(m, METRIC_GAUGE, "9x", "", NULL, NULL, 0, 0));
	ck_assert_ptr_null(metrics_family(m, METRIC_GAUGE, "a-b", "", NULL, NULL, 0, 0));
	ck_assert_ptr_null(metrics_family(m, METRIC_GAUGE, "x", "", bad_label, NULL, 0, 0));
	ck_assert_ptr_null(metrics_family(m, METRIC_GAUGE, "x", "", dup, NULL, 0, 0));
	ck_assert_ptr_null(metrics_family(m, METRIC_GAUGE, "x", "", five, NULL, 0, 0));
	ck_assert_ptr_null(metrics_family(m, METRIC_HISTOGRAM, "h", "", le, one, 1, 0));
	ck_assert_ptr_null(metrics_family(m, METRIC_HISTOGRAM, "h", "", NULL, down, 2, 0));
	ck_assert_ptr_null(metrics_family(m, METRIC_HISTOGRAM, "h", "", NULL, NULL, 0, 0));
	struct metric_family *a = metrics_family(m, METRIC_GAUGE, "x", "", L_BACKEND, NULL, 0, 0);
	ck_assert_ptr_nonnull(a);
	ck_assert(metrics_family(m, METRIC_GAUGE, "x", "", L_BACKEND, NULL, 0, 0) == a);
	ck_assert_ptr_null(metrics_family(m, METRIC_COUNTER, "x", "", L_BACKEND, NULL, 0, 0));
	ck_assert_ptr_null(metrics_family(m, METRIC_GAUGE, "x", "", L_ROUTE_PATH, NULL, 0, 0));
	/* NULL everywhere is a no-op, not a crash */
	metric_inc(metric_at(NULL, "x"));
	metric_observe(NULL, 1);
	ck_assert(metric_value(NULL) == 0);
	metrics_free(m);
}
END_TEST

/* A family holds METRIC_MAX_SERIES label sets; more are refused and counted. */
START_TEST(bounded)
{
	struct metrics *m = metrics_new();
	struct metric_family *f =
	    metrics_family(m, METRIC_COUNTER, "mysteer_many_total", "", L_BACKEND, NULL, 0, 0);
	char name[32];
	for (int i = 0; i < METRIC_MAX_SERIES + 10; i++) {
		snprintf(name, sizeof(name), "b%d", i);
		struct metric_series *s = metric_at(f, name);
		ck_assert(i < METRIC_MAX_SERIES ? s != NULL : s == NULL);
		metric_inc(s);
	}
	char *t = metrics_render_text(m, NULL);
	ck_assert_ptr_nonnull(strstr(t, "mysteer_metrics_series_dropped_total 10\n"));
	ck_assert_ptr_null(strstr(t, "\"b2048\""));
	free(t);
	metrics_free(m);
}
END_TEST

START_TEST(read_back)
{
	struct metrics *m = metrics_new();
	const char *const be[] = {"backend", NULL};
	const char *const db1[] = {"db1", NULL}, *const db9[] = {"db9", NULL};
	const double le[] = {0.001, 0.01, 0.1};
	struct metric_reading r;

	struct metric_family *c = metrics_family(m, METRIC_COUNTER, "t_total", "h", be, NULL, 0, 0);
	struct metric_family *h =
	    metrics_family(m, METRIC_HISTOGRAM, "t_seconds", "h", be, le, 3, 0);
	metric_add(metric_at(c, "db1"), 5);
	metric_observe(metric_at(h, "db1"), 0.005);
	metric_observe(metric_at(h, "db1"), 0.5);
	ck_assert(metrics_read(m, "t_total", db1, &r));
	ck_assert(r.value == 5);
	ck_assert(metrics_read(m, "t_seconds", db1, &r));
	ck_assert(r.value == 2);
	ck_assert_uint_eq(r.nbuckets, 3);
	ck_assert_uint_eq(r.counts[1], 1);               /* 0.005 <= 0.01 */
	ck_assert_uint_eq(r.counts[3], 1);               /* past every bound */
	ck_assert(!metrics_read(m, "t_total", db9, &r)); /* not made by reading */
	ck_assert(!metrics_read(m, "nope_total", db1, &r));
	char *text = metrics_render_text(m, NULL);
	ck_assert_ptr_null(strstr(text, "db9"));
	free(text);
	metrics_free(m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc = tcase_create("registry");
	tcase_add_test(tc, text_format);
	tcase_add_test(tc, json_same_figures);
	tcase_add_test(tc, collected);
	tcase_add_test(tc, registration);
	tcase_add_test(tc, bounded);
	tcase_add_test(tc, read_back);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
