/*
 * test_views.c - the fleet's views (cluster/views.h): the leader's verdict
 * on a backend from its own probes and the other hosts' views, and a view's
 * JSON made and read back.
 */
#include <check.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/views.h"

#define UP HEALTH_UP
#define DN HEALTH_DOWN
#define UK HEALTH_UNKNOWN

/* own, others, expected verdict and count */
static const struct {
	enum be_health own;
	size_t n;
	enum be_health others[4];
	bool down;
	unsigned live, ndown;
} cases[] = {
    /* the leader alone: its own probes decide, as a lone daemon */
    {DN, 0, {0}, true, 1, 1},
    {UP, 0, {0}, false, 1, 0},
    {UK, 0, {0}, false, 1, 0},
    /* three hosts: the leader cut from the writer alone does not move it */
    {DN, 2, {UP, UP}, false, 3, 1},
    /* the leader and one of two others: a majority */
    {DN, 2, {DN, UP}, true, 3, 2},
    {DN, 2, {DN, DN}, true, 3, 3},
    /* the others see it down, the leader does not: its own probes must agree */
    {UP, 2, {DN, DN}, false, 3, 2},
    {UK, 2, {DN, DN}, false, 3, 2},
    /* a follower cut alone, the leader sees it up */
    {UP, 2, {UP, DN}, false, 3, 1},
    /* two hosts: one half is not a majority */
    {DN, 1, {UP}, false, 2, 1},
    {DN, 1, {DN}, true, 2, 2},
    /* a view that does not know yet (unknown) is live and not down */
    {DN, 2, {UK, UP}, false, 3, 1},
    {DN, 2, {DN, UK}, true, 3, 2},
    /* four others: 2 of 5 is not enough, 3 of 5 is */
    {DN, 4, {DN, UP, UP, UK}, false, 5, 2},
    {DN, 4, {DN, DN, UP, UP}, true, 5, 3},
};

START_TEST(verdict_table)
{
	struct views_count c;
	bool v = views_agree_down(cases[_i].own, cases[_i].others, cases[_i].n, &c);

	ck_assert_msg(v == cases[_i].down, "case %d: verdict %d", _i, v);
	ck_assert_uint_eq(c.live, cases[_i].live);
	ck_assert_uint_eq(c.down, cases[_i].ndown);
}
END_TEST

START_TEST(view_round_trip)
{
	struct topology *t = topo_alloc(3, 0);
	struct json_object *j;
	char *s;

	ck_assert_ptr_nonnull(t);
	strcpy(t->backends[0].name, "db1");
	t->backends[0].health = HEALTH_DOWN;
	strcpy(t->backends[1].name, "db2");
	t->backends[1].health = HEALTH_UP;
	t->backends[1].read_only = true;
	t->backends[1].has_lag = true;
	t->backends[1].lag_s = 1.5;
	strcpy(t->backends[2].name, "db3");
	t->backends[2].health = HEALTH_UNKNOWN;
	s = views_text("host2", t, 1700000000123);
	ck_assert_ptr_nonnull(s);
	j = json_tokener_parse(s);
	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(views_health_of(j, "db1"), HEALTH_DOWN);
	ck_assert_int_eq(views_health_of(j, "db2"), HEALTH_UP);
	ck_assert_int_eq(views_health_of(j, "db3"), HEALTH_UNKNOWN);
	ck_assert_int_eq(views_health_of(j, "db4"), HEALTH_UNKNOWN);
	ck_assert_ptr_nonnull(strstr(s, "\"host\":\"host2\""));
	ck_assert_ptr_nonnull(strstr(s, "\"time\":1700000000123"));
	ck_assert_ptr_nonnull(strstr(s, "\"lag\":1.5"));
	json_object_put(j);
	free(s);
	topo_put(t);
}
END_TEST

START_TEST(view_not_a_view)
{
	static const char *const bad[] = {
	    "{}",
	    "[]",
	    "{\"backends\":7}",
	    "{\"backends\":[7,null,{\"name\":3}]}",
	    "{\"backends\":[{\"name\":\"db1\",\"health\":null}]}",
	    "{\"backends\":[{\"name\":\"db1\",\"health\":\"sideways\"}]}",
	};

	ck_assert_int_eq(views_health_of(NULL, "db1"), HEALTH_UNKNOWN);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct json_object *j = json_tokener_parse(bad[i]);
		ck_assert_ptr_nonnull(j);
		ck_assert_msg(views_health_of(j, "db1") == HEALTH_UNKNOWN, "%s", bad[i]);
		json_object_put(j);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("views");
	TCase *tc = tcase_create("views");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, verdict_table, 0, (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_test(tc, view_round_trip);
	tcase_add_test(tc, view_not_a_view);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
