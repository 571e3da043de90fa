/*
 * test_topo.c - the topology rules (topo/rules.h) as a table, the rise/fall
 * hysteresis, and route targets (common/topology.c).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/topology.h"
#include "topo/rules.h"

/* The table leaves the fields it does not set (demoted, failback) false. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#define UP HEALTH_UP
#define DN HEALTH_DOWN
#define UK HEALTH_UNKNOWN
#define EN ADMIN_ENABLED
#define DR ADMIN_DRAINED
#define DI ADMIN_DISABLED
#define W  ROLE_WRITER
#define R  ROLE_READER
#define N  ROLE_NONE
#define RO WRITER_POLICY_READ_ONLY
#define PR WRITER_POLICY_PRIORITY

/* A primary: writable, not replicating. A replica: read_only, replicating. */
#define PRIM(prio, h, adm)                                                                         \
	{                                                                                          \
		prio, 1, adm, h, false, false, false, 0                                            \
	}
#define REPL(prio, h, adm, lag)                                                                    \
	{                                                                                          \
		prio, 1, adm, h, true, true, true, lag                                             \
	}

/* A primary that was the writer until another became it. */
#define PRIMD(prio, h, adm)                                                                        \
	{                                                                                          \
		prio, 1, adm, h, false, false, false, 0, true                                      \
	}

struct rcase {
	const char *what;
	enum writer_policy policy;
	int prev;
	size_t n;
	struct rules_backend b[4];
	int writer;
	enum be_role roles[4];
	const char *reason_has[4]; /* substring expected in reasons[i], or NULL */
	bool failback;
};

static const struct rcase cases[] = {
    {"one primary, two replicas",
     RO,
     -1,
     3,
     {PRIM(100, UP, EN), REPL(200, UP, EN, 0), REPL(300, UP, EN, 1)},
     0,
     {W, R, R},
     {0}},
    {"primary down: no writer, replicas still read",
     RO,
     0,
     3,
     {PRIM(100, DN, EN), REPL(200, UP, EN, 0), REPL(300, UP, EN, 0)},
     -1,
     {N, R, R},
     {"down"}},
    {"priority policy takes the best live server whatever read_only",
     PR,
     0,
     3,
     {PRIM(100, DN, EN), REPL(200, UP, EN, 0), REPL(300, UP, EN, 0)},
     1,
     {N, W, R},
     {0}},
    {"priority policy: lower priority wins even read_only",
     PR,
     -1,
     2,
     {REPL(50, UP, EN, 0), PRIM(100, UP, EN)},
     0,
     {W, N},
     {0}},
    {"read_only policy: best priority among writable",
     RO,
     -1,
     3,
     {REPL(10, UP, EN, 0), PRIM(300, UP, EN), PRIM(200, UP, EN)},
     2,
     {R, N, W},
     {0}},
    {"sticky writer: the returning better primary gets no writes",
     RO,
     1,
     2,
     {PRIM(100, UP, EN), PRIM(200, UP, EN)},
     1,
     {N, W},
     {"not a replica"}},
    {"sticky writer lost when it turns read_only",
     RO,
     1,
     2,
     {PRIM(100, UP, EN), REPL(200, UP, EN, 0)},
     0,
     {W, R},
     {0}},
    {"lag beyond max leaves the readers",
     RO,
     0,
     3,
     {PRIM(100, UP, EN), REPL(200, UP, EN, 12), REPL(300, UP, EN, 10)},
     0,
     {W, N, R},
     {0, "lag 12s > 10s"}},
    {"drained reader keeps its role, disabled has none",
     RO,
     0,
     3,
     {PRIM(100, UP, EN), REPL(200, UP, DR, 0), REPL(300, UP, DI, 0)},
     0,
     {W, R, N},
     {0, 0, "disabled"}},
    {"disabled primary is no writer",
     RO,
     0,
     2,
     {PRIM(100, UP, DI), REPL(200, UP, EN, 0)},
     -1,
     {N, R},
     {"disabled"}},
    {"drained primary stays the writer (promote another first)",
     RO,
     0,
     2,
     {PRIM(100, UP, DR), REPL(200, UP, EN, 0)},
     0,
     {W, R},
     {0}},
    {"a new writer prefers enabled over drained",
     RO,
     -1,
     2,
     {PRIM(100, UP, DR), PRIM(200, UP, EN)},
     1,
     {N, W},
     {0}},
    {"all down",
     RO,
     0,
     3,
     {PRIM(100, DN, EN), REPL(200, DN, EN, 0), REPL(300, DN, EN, 0)},
     -1,
     {N, N, N},
     {"down", "down", "down"}},
    {"unknown health is not live",
     RO,
     -1,
     2,
     {PRIM(100, UK, EN), REPL(200, UK, EN, 0)},
     -1,
     {N, N},
     {"not probed", "not probed"}},
    {"replication stopped: no reader",
     RO,
     0,
     2,
     {PRIM(100, UP, EN), {200, 1, EN, UP, true, false, false, 0}},
     0,
     {W, N},
     {0, "replication stopped"}},
    {"weight 0 is never a reader",
     RO,
     0,
     2,
     {PRIM(100, UP, EN), {200, 0, EN, UP, true, true, true, 0}},
     0,
     {W, N},
     {0, "weight 0"}},
    {"a better server not probed yet: wait for it",
     RO,
     -1,
     2,
     {PRIM(100, UK, EN), PRIM(200, UP, EN)},
     -1,
     {N, N},
     {"not probed"}},
    {"a worse server not probed yet does not hold the choice",
     RO,
     -1,
     2,
     {PRIM(100, UP, EN), PRIM(200, UK, EN)},
     0,
     {W, N},
     {0, "not probed"}},
    {"sticky writer is kept while a better one is unknown",
     RO,
     1,
     2,
     {PRIM(100, UK, EN), PRIM(200, UP, EN)},
     1,
     {N, W},
     {0}},
    {"ties go to config order", RO, -1, 2, {PRIM(100, UP, EN), PRIM(100, UP, EN)}, 0, {W, N}, {0}},
    {"failback off: a demoted primary is not the writer when the writer is down",
     RO,
     1,
     2,
     {PRIMD(100, UP, EN), PRIM(200, DN, EN)},
     -1,
     {N, N},
     {0},
     false},
    {"failback on: a demoted primary may be the writer again",
     RO,
     1,
     2,
     {PRIMD(100, UP, EN), PRIM(200, DN, EN)},
     0,
     {W, N},
     {0},
     true},
    {"the writer of the last run is waited for until it is probed",
     RO,
     1,
     2,
     {PRIM(100, UP, EN), PRIM(200, UK, EN)},
     -1,
     {N, N},
     {0},
     false},
    {"priority policy, failback off: the writer stays when a better one is back",
     PR,
     1,
     2,
     {PRIMD(100, UP, EN), REPL(200, UP, EN, 0)},
     1,
     {N, W},
     {0},
     false},
    {"priority policy, failback on: the best priority takes the writes back",
     PR,
     1,
     2,
     {PRIMD(100, UP, EN), REPL(200, UP, EN, 0)},
     0,
     {W, R},
     {0},
     true},
    {"priority policy, failback off: a demoted server is passed over",
     PR,
     1,
     3,
     {PRIMD(100, UP, EN), PRIM(200, DN, EN), REPL(300, UP, EN, 0)},
     2,
     {N, N, W},
     {0},
     false},
};

START_TEST(test_rules_table)
{
	const struct rcase *c = &cases[_i];
	enum be_role roles[4];
	char reasons[4][RULES_REASON_MAX];
	bool extra[4];
	struct rules_input in = {c->n, c->b, c->prev, c->policy, 10, c->failback};
	struct rules_output out = {.roles = roles, .reasons = reasons, .extra_writable = extra};
	rules_decide(&in, &out);
	ck_assert_msg(out.writer == c->writer, "%s: writer %d, expected %d", c->what, out.writer,
	              c->writer);
	for (size_t i = 0; i < c->n; i++) {
		ck_assert_msg(roles[i] == c->roles[i], "%s: backend %zu role %d, expected %d",
		              c->what, i, roles[i], c->roles[i]);
		if (c->reason_has[i])
			ck_assert_msg(strstr(reasons[i], c->reason_has[i]),
			              "%s: backend %zu reason '%s' lacks '%s'", c->what, i,
			              reasons[i], c->reason_has[i]);
	}
}
END_TEST

START_TEST(test_two_writers_warn)
{
	struct rules_backend b[2] = {PRIM(100, UP, EN), PRIM(200, UP, EN)};
	enum be_role roles[2];
	char reasons[2][RULES_REASON_MAX];
	bool extra[2];
	struct rules_input in = {2, b, 1, RO, 10};
	struct rules_output out = {.roles = roles, .reasons = reasons, .extra_writable = extra};
	rules_decide(&in, &out);
	ck_assert_int_eq(out.writer, 1);
	ck_assert(extra[0]);
	ck_assert(!extra[1]);
}
END_TEST

START_TEST(test_hysteresis)
{
	struct hysteresis h = {0};
	/* rise 2: one good probe is not enough */
	ck_assert_int_eq(hysteresis_step(&h, true, 2, 3), UK);
	ck_assert_int_eq(hysteresis_step(&h, true, 2, 3), UP);
	/* fall 3: two bad are not enough, a good one in between resets */
	ck_assert_int_eq(hysteresis_step(&h, false, 2, 3), UP);
	ck_assert_int_eq(hysteresis_step(&h, false, 2, 3), UP);
	ck_assert_int_eq(hysteresis_step(&h, true, 2, 3), UP);
	ck_assert_int_eq(hysteresis_step(&h, false, 2, 3), UP);
	ck_assert_int_eq(hysteresis_step(&h, false, 2, 3), UP);
	ck_assert_int_eq(hysteresis_step(&h, false, 2, 3), DN);
	/* flapping does not bring it back */
	ck_assert_int_eq(hysteresis_step(&h, true, 2, 3), DN);
	ck_assert_int_eq(hysteresis_step(&h, false, 2, 3), DN);
	ck_assert_int_eq(hysteresis_step(&h, true, 2, 3), DN);
	ck_assert_int_eq(hysteresis_step(&h, true, 2, 3), UP);
}
END_TEST

START_TEST(test_hysteresis_first_failures)
{
	struct hysteresis h = {0};
	ck_assert_int_eq(hysteresis_step(&h, false, 2, 2), UK);
	ck_assert_int_eq(hysteresis_step(&h, false, 2, 2), DN);
	struct hysteresis one = {0};
	ck_assert_int_eq(hysteresis_step(&one, true, 1, 1), UP);
	ck_assert_int_eq(hysteresis_step(&one, false, 1, 1), DN);
}
END_TEST

static struct topology *mk_topo(void)
{
	struct topology *t = topo_alloc(3, 3);
	ck_assert_ptr_nonnull(t);
	const char *names[] = {"db1", "db2", "db3"};
	for (int i = 0; i < 3; i++) {
		strcpy(t->backends[i].name, names[i]);
		t->backends[i].health = HEALTH_UP;
		t->backends[i].weight = 1;
		t->backends[i].role = i == 0 ? ROLE_WRITER : ROLE_READER;
	}
	t->writer = 0;
	t->routes[0] = (struct topo_route){"rw", 6446, ROUTE_WRITER};
	t->routes[1] = (struct topo_route){"ro", 6447, ROUTE_READER};
	t->routes[2] = (struct topo_route){"split", 6450, ROUTE_SPLIT};
	return t;
}

START_TEST(test_route_targets)
{
	struct topology *t = mk_topo();
	int idx[8];
	ck_assert_uint_eq(topo_route_targets(t, &t->routes[0], idx, 8), 1);
	ck_assert_int_eq(idx[0], 0);
	ck_assert_uint_eq(topo_route_targets(t, &t->routes[1], idx, 8), 2);
	ck_assert_int_eq(idx[0], 1);
	ck_assert_int_eq(idx[1], 2);
	ck_assert_uint_eq(topo_route_targets(t, &t->routes[2], idx, 8), 3);
	/* a drained reader gets no new connections */
	t->backends[1].admin = ADMIN_DRAINED;
	ck_assert_uint_eq(topo_route_targets(t, &t->routes[1], idx, 8), 1);
	ck_assert_int_eq(idx[0], 2);
	/* no reader left: the writer stands in */
	t->backends[2].health = HEALTH_DOWN;
	ck_assert_uint_eq(topo_route_targets(t, &t->routes[1], idx, 8), 1);
	ck_assert_int_eq(idx[0], 0);
	/* no writer: rw has no target */
	t->writer = -1;
	ck_assert_uint_eq(topo_route_targets(t, &t->routes[0], idx, 8), 0);
	ck_assert_str_eq(topo_state_name(&t->backends[1]), "drained");
	ck_assert_str_eq(topo_state_name(&t->backends[2]), "down");
	topo_put(t);
}
END_TEST

/* The one rule of who takes new connections, as the map image, the proxy
 * and the status all read it. */
START_TEST(test_usable_predicates)
{
	struct topology *t = mk_topo();
	struct topo_backend *r = &t->backends[1];
	int idx[8];

	ck_assert(topo_reader_usable(r));
	ck_assert(!topo_reader_usable(&t->backends[0])); /* the writer is no reader */
	r->weight = 0;                                   /* out of the rotation, not drained */
	ck_assert(!topo_reader_usable(r));
	ck_assert_uint_eq(topo_route_targets(t, &t->routes[1], idx, 8), 1);
	ck_assert_int_eq(idx[0], 2);
	r->weight = 1;
	r->health = HEALTH_DOWN;
	ck_assert(!topo_reader_usable(r));
	r->health = HEALTH_UP;
	r->admin = ADMIN_DISABLED;
	ck_assert(!topo_reader_usable(r));
	ck_assert_ptr_eq(topo_usable_writer(t), &t->backends[0]);
	t->backends[0].admin = ADMIN_DRAINED;
	ck_assert_ptr_null(topo_usable_writer(t));
	t->backends[0].admin = ADMIN_ENABLED;
	t->writer = -1;
	ck_assert_ptr_null(topo_usable_writer(t));
	ck_assert_ptr_null(topo_usable_writer(NULL));
	topo_put(t);
}
END_TEST

static int calls;
static uint64_t seen_gen;
static void sub(const struct topology *t, void *arg)
{
	calls++;
	seen_gen = t->generation;
	ck_assert_ptr_eq(arg, &calls);
}

START_TEST(test_publish_refcount)
{
	calls = 0;
	ck_assert_int_eq(topo_subscribe(sub, &calls), 0);
	struct topology *a = mk_topo();
	topo_publish(a);
	ck_assert_int_eq(calls, 1);
	const struct topology *cur = topo_current();
	ck_assert_ptr_eq(cur, a);
	ck_assert_uint_eq(cur->generation, seen_gen);
	struct topology *b = mk_topo();
	topo_publish(b);
	ck_assert_int_eq(calls, 2);
	ck_assert_uint_eq(b->generation, cur->generation + 1);
	/* the old snapshot stays valid while referenced */
	ck_assert_str_eq(topo_find(cur, "db2")->name, "db2");
	ck_assert_ptr_null(topo_find(cur, "nope"));
	topo_put(cur);
	topo_unsubscribe(sub, &calls);
	topo_publish(mk_topo());
	ck_assert_int_eq(calls, 2);
	topo_reset();
	ck_assert_ptr_null(topo_current());
}
END_TEST

START_TEST(test_enum_names)
{
	ck_assert_str_eq(topo_role_name(ROLE_WRITER), "writer");
	ck_assert_str_eq(topo_role_name(ROLE_READER), "reader");
	ck_assert_str_eq(topo_role_name((enum be_role)9), "none");
	ck_assert_str_eq(topo_health_name(HEALTH_DOWN), "down");
	ck_assert_str_eq(topo_health_name((enum be_health)-1), "unknown");
	ck_assert_str_eq(topo_admin_name(ADMIN_DISABLED), "disabled");
	ck_assert_str_eq(topo_admin_name((enum be_admin)3), "enabled");
	ck_assert_str_eq(topo_route_role_name(ROUTE_SPLIT), "split");
	ck_assert_str_eq(topo_route_role_name((enum route_role)3), "writer");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("topo");
	TCase *tc = tcase_create("rules");
	tcase_add_loop_test(tc, test_rules_table, 0, (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_test(tc, test_two_writers_warn);
	tcase_add_test(tc, test_enum_names);
	tcase_add_test(tc, test_hysteresis);
	tcase_add_test(tc, test_hysteresis_first_failures);
	tcase_add_test(tc, test_route_targets);
	tcase_add_test(tc, test_usable_predicates);
	tcase_add_test(tc, test_publish_refcount);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
