/*
 * test_maps.c - the pure part of the eBPF publisher: topology -> map image
 * (targets, weights, fallback, services), route ids kept by name across
 * reloads, and the close-on-demote diff, plus the error listener's ERR
 * packet and its pause when out of descriptors.
 */
#define _GNU_SOURCE /* pipe2 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/evloop.h"
#include "maps/errlisten.h"
#include "maps/maps.h"

struct fixture {
	struct topology t;
	struct topo_backend b[3];
	struct topo_route r[MS_MAX_ROUTES + 1];
};

static void backend(struct topo_backend *b, uint32_t id, const char *name, uint16_t port,
                    enum be_role role)
{
	struct sockaddr_in *s = (struct sockaddr_in *)&b->addr;

	memset(b, 0, sizeof(*b));
	b->id = id;
	snprintf(b->name, sizeof(b->name), "%s", name);
	snprintf(b->host, sizeof(b->host), "127.0.0.1");
	b->port = port;
	s->sin_family = AF_INET;
	s->sin_port = htons(port);
	s->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	b->addrlen = sizeof(*s);
	b->role = role;
	b->health = HEALTH_UP;
	b->weight = 1;
}

/* db1 writer (id 10), db2 and db3 readers (ids 11, 12), routes rw/ro/split. */
static void fixture_init(struct fixture *f)
{
	memset(f, 0, sizeof(*f));
	backend(&f->b[0], 10, "db1", 3306, ROLE_WRITER);
	backend(&f->b[1], 11, "db2", 3307, ROLE_READER);
	backend(&f->b[2], 12, "db3", 3308, ROLE_READER);
	snprintf(f->r[0].name, TOPO_NAME_MAX, "rw");
	f->r[0].port = 6446;
	f->r[0].role = ROUTE_WRITER;
	snprintf(f->r[1].name, TOPO_NAME_MAX, "ro");
	f->r[1].port = 6447;
	f->r[1].role = ROUTE_READER;
	snprintf(f->r[2].name, TOPO_NAME_MAX, "split");
	f->r[2].port = 6450;
	f->r[2].role = ROUTE_SPLIT;
	f->t.writer = 0;
	f->t.nbackends = 3;
	f->t.backends = f->b;
	f->t.nroutes = 3;
	f->t.routes = f->r;
}

static struct maps_image *build(const struct topology *t, const struct config *cfg)
{
	struct maps_image *img = malloc(sizeof(*img));
	char err[128];

	ck_assert_ptr_nonnull(img);
	ck_assert_int_eq(maps_build_image(t, cfg, NULL, img, err, sizeof(err)), 0);
	return img;
}

/* The image of t with route ids assigned after *ids, which becomes t's. */
static struct maps_image *build_ids(const struct topology *t, struct maps_route_ids *ids)
{
	struct maps_image *img = malloc(sizeof(*img));
	struct maps_route_ids next;
	uint32_t rid[MS_MAX_ROUTES];
	char err[128];

	ck_assert_ptr_nonnull(img);
	ck_assert_int_eq(maps_assign_route_ids(ids, NULL, t, &next, rid, err, sizeof(err)), 0);
	ck_assert_int_eq(maps_build_image(t, NULL, rid, img, err, sizeof(err)), 0);
	*ids = next;
	return img;
}

static void route(struct topo_route *r, const char *name, uint16_t port, enum route_role role)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->port = port;
	r->role = role;
}

START_TEST(writer_and_weighted_readers)
{
	struct fixture f;
	fixture_init(&f);
	f.b[2].weight = 3;
	struct maps_image *img = build(&f.t, NULL);

	ck_assert_uint_eq(img->routes[0].ntargets, 1);
	ck_assert_uint_eq(img->routes[0].target[0], 10);
	ck_assert_uint_eq(img->routes[1].ntargets, 2);
	ck_assert_uint_eq(img->routes[1].target[0], 11);
	ck_assert_uint_eq(img->routes[1].cum_weight[0], 1);
	ck_assert_uint_eq(img->routes[1].target[1], 12);
	ck_assert_uint_eq(img->routes[1].cum_weight[1], 4);
	ck_assert_uint_eq(img->routes[1].total_weight, 4);
	ck_assert(img->routes[1].flags & MS_RT_READER);
	ck_assert(!(img->routes[1].flags & MS_RT_FALLBACK));
	ck_assert(img->routes[2].flags & MS_RT_SPLIT);
	ck_assert_uint_eq(img->backends[11].ep.port, htons(3307));
	ck_assert(img->backends[11].flags & MS_BE_LOCAL);
	ck_assert(!(img->backends[5].flags & MS_BE_PRESENT));
	free(img);
}
END_TEST

START_TEST(weight_zero_and_fallback)
{
	struct fixture f;
	fixture_init(&f);
	f.b[1].weight = 0;
	f.b[2].health = HEALTH_DOWN;
	struct maps_image *img = build(&f.t, NULL);

	ck_assert_uint_eq(img->routes[1].ntargets, 1);
	ck_assert_uint_eq(img->routes[1].target[0], 10);
	ck_assert(img->routes[1].flags & MS_RT_FALLBACK);
	free(img);
}
END_TEST

START_TEST(no_writer_names_the_reason)
{
	struct fixture f;
	fixture_init(&f);
	f.b[0].health = HEALTH_DOWN;
	snprintf(f.b[0].last_error, sizeof(f.b[0].last_error), "Connection refused");
	struct maps_image *img = build(&f.t, NULL);

	ck_assert_uint_eq(img->routes[0].ntargets, 0);
	ck_assert_uint_eq(img->routes[0].reason, MS_REASON_NO_WRITER);
	ck_assert_ptr_nonnull(strstr(img->reason[0], "route rw has no writer"));
	ck_assert_ptr_nonnull(strstr(img->reason[0], "db1 down: Connection refused"));
	/* readers still serve the read route */
	ck_assert_uint_eq(img->routes[1].ntargets, 2);
	free(img);
}
END_TEST

START_TEST(services_per_vip_only)
{
	struct fixture f;
	struct config *cfg = calloc(1, sizeof(*cfg));
	fixture_init(&f);
	ck_assert_ptr_nonnull(cfg);
	((struct sockaddr_in *)&cfg->vips[0])->sin_family = AF_INET;
	((struct sockaddr_in *)&cfg->vips[0])->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	((struct sockaddr_in6 *)&cfg->vips[1])->sin6_family = AF_INET6;
	((struct sockaddr_in6 *)&cfg->vips[1])->sin6_addr = in6addr_loopback;
	cfg->nvips = 2;
	struct maps_image *img = build(&f.t, cfg);

	/* 2 vips x (rw, ro); split is not steered in BPF; no entry for any
	 * other local address (sk_lookup steers the VIPs only) */
	ck_assert_uint_eq(img->nservices, 4);
	size_t v4 = 0, v6 = 0;
	for (size_t i = 0; i < img->nservices; i++) {
		const struct maps_service_entry *e = &img->services[i];
		ck_assert(e->key.port == htons(6446) || e->key.port == htons(6447));
		ck_assert_uint_eq(e->val.route_id, e->key.port == htons(6446) ? 0 : 1);
		v4 += e->key.family == MS_AF_INET;
		v6 += e->key.family == MS_AF_INET6;
	}
	ck_assert_uint_eq(v4, 2);
	ck_assert_uint_eq(v6, 2);
	free(img);
	free(cfg);
}
END_TEST

START_TEST(close_mask_on_promote)
{
	struct fixture a, b;
	uint32_t mask[MS_MAX_BACKENDS];
	fixture_init(&a);
	fixture_init(&b);
	/* promote db2: db1 becomes a reader, db2 the writer */
	b.b[0].role = ROLE_READER;
	b.b[1].role = ROLE_WRITER;
	b.t.writer = 1;

	struct maps_image *ia = build(&a.t, NULL), *ib = build(&b.t, NULL);
	ck_assert_uint_eq(maps_close_mask(ia, &b.t, ib, mask), 1);
	ck_assert_uint_eq(mask[10], 1u << 0); /* db1's rw connections close */
	ck_assert_uint_eq(mask[11], 0);       /* db2 left ro but is a live writer */
	ck_assert_uint_eq(mask[12], 0);
	free(ia);
	free(ib);
}
END_TEST

START_TEST(close_mask_down_drain_disable)
{
	struct fixture a, b;
	uint32_t mask[MS_MAX_BACKENDS];
	fixture_init(&a);
	fixture_init(&b);
	b.b[0].admin = ADMIN_DRAINED; /* drained writer: connections stay */
	b.b[1].health = HEALTH_DOWN;  /* down reader: its ro connections close */
	b.b[2].admin = ADMIN_DISABLED;

	struct maps_image *ia = build(&a.t, NULL), *ib = build(&b.t, NULL);
	ck_assert_uint_eq(maps_close_mask(ia, &b.t, ib, mask), 2);
	ck_assert_uint_eq(mask[10], 0);
	ck_assert_uint_eq(mask[11], 1u << 1);
	ck_assert_uint_eq(mask[12], 1u << 1);
	free(ia);
	free(ib);
}
END_TEST

START_TEST(close_mask_writer_stops_standing_in)
{
	struct fixture a, b;
	uint32_t mask[MS_MAX_BACKENDS];
	fixture_init(&a);
	fixture_init(&b);
	a.b[1].health = HEALTH_DOWN;
	a.b[2].health = HEALTH_DOWN; /* db1 stands in for ro */

	struct maps_image *ia = build(&a.t, NULL), *ib = build(&b.t, NULL);
	ck_assert_uint_eq(maps_close_mask(ia, &b.t, ib, mask), 0);
	ck_assert_uint_eq(maps_close_mask(ia, &a.t, ia, mask), 0);
	free(ia);
	free(ib);
}
END_TEST

/* Fail closed on role, not on a blip: a writer that misses probes keeps its
 * connections while no other server is the writer; they close when another
 * becomes it, and stay when it comes back; a writer up but read_only (its
 * role lost) is closed at once. */
START_TEST(writer_blip_holds)
{
	struct fixture a, b, c, d;
	uint32_t mask[MS_MAX_BACKENDS], held[MS_MAX_BACKENDS] = {0};
	fixture_init(&a);
	fixture_init(&b);
	fixture_init(&c);
	fixture_init(&d);
	b.b[0].health = HEALTH_DOWN; /* db1 missed probes, no writer */
	b.b[0].role = ROLE_NONE;
	b.t.writer = -1;
	c.b[0] = b.b[0]; /* then db2 became the writer */
	c.b[1].role = ROLE_WRITER;
	c.t.writer = 1;
	d.b[0].role = ROLE_NONE; /* db1 up, read_only: no writer */
	d.t.writer = -1;

	struct maps_image *ia = build(&a.t, NULL), *ib = build(&b.t, NULL);
	struct maps_image *ic = build(&c.t, NULL), *id = build(&d.t, NULL);
	maps_close_mask(ia, &b.t, ib, mask);
	ck_assert_uint_eq(mask[10], 1u << 0);
	ck_assert_uint_eq(maps_hold_writer(ib, &b.t, mask, held), 0);
	ck_assert_uint_eq(mask[10], 0);
	ck_assert_uint_eq(held[10], 1u << 0);
	/* still no writer: still held */
	maps_close_mask(ib, &b.t, ib, mask);
	ck_assert_uint_eq(maps_hold_writer(ib, &b.t, mask, held), 0);
	ck_assert_uint_eq(held[10], 1u << 0);
	/* db1 back as the writer: nothing closes, nothing held */
	uint32_t back[MS_MAX_BACKENDS];
	memcpy(back, held, sizeof(back));
	maps_close_mask(ib, &a.t, ia, mask);
	ck_assert_uint_eq(maps_hold_writer(ia, &a.t, mask, back), 0);
	ck_assert_uint_eq(back[10], 0);
	/* db2 the writer instead: db1's held connections close */
	maps_close_mask(ib, &c.t, ic, mask);
	ck_assert_uint_eq(mask[10], 0);
	ck_assert_uint_eq(maps_hold_writer(ic, &c.t, mask, held), 1);
	ck_assert_uint_eq(mask[10], 1u << 0);
	ck_assert_uint_eq(held[10], 0);
	/* up but read_only: no blip, closed at once */
	maps_close_mask(ia, &d.t, id, mask);
	ck_assert_uint_eq(maps_hold_writer(id, &d.t, mask, held), 1);
	ck_assert_uint_eq(mask[10], 1u << 0);
	ck_assert_uint_eq(held[10], 0);
	free(ia);
	free(ib);
	free(ic);
	free(id);
}
END_TEST

/* After a restart the old topology is only the maps: ids may differ from
 * the new daemon's, so backends are matched by address. */
START_TEST(close_mask_adopted_matches_by_address)
{
	struct fixture a, b;
	uint32_t mask[MS_MAX_BACKENDS];
	struct maps_image *old, *cur;
	fixture_init(&a);
	fixture_init(&b);
	/* the new daemon numbered them 20, 21, 22 and db2 was promoted */
	b.b[0].id = 20;
	b.b[1].id = 21;
	b.b[2].id = 22;
	b.b[0].role = ROLE_READER;
	b.b[1].role = ROLE_WRITER;
	b.t.writer = 1;
	old = build(&a.t, NULL);
	cur = build(&b.t, NULL);

	ck_assert_uint_eq(maps_close_mask_adopted(old, &b.t, cur, mask), 1);
	ck_assert_uint_eq(mask[10], 1u << 0); /* old id of db1: its rw connections */
	ck_assert_uint_eq(mask[11], 0);
	ck_assert_uint_eq(mask[12], 0);
	ck_assert_uint_eq(mask[20], 0);
	/* same topology under new ids: nothing to close */
	ck_assert_uint_eq(maps_close_mask_adopted(old, &a.t, old, mask), 0);
	free(old);
	free(cur);
}
END_TEST

/* A reload reorders, adds and removes routes: every remaining route keeps
 * its id (the sockets' marks carry it), a new one takes an id the live
 * generation does not use, and the images agree route by route. */
START_TEST(route_ids_follow_names)
{
	struct fixture a, b, c;
	struct maps_route_ids ids = {0};
	uint32_t mask[MS_MAX_BACKENDS];
	fixture_init(&a);
	fixture_init(&b);
	fixture_init(&c);
	struct maps_image *ia = build_ids(&a.t, &ids);
	ck_assert_str_eq(ia->routes[0].name, "rw");
	ck_assert_str_eq(ia->routes[1].name, "ro");
	ck_assert_str_eq(ids.name[2], "split");

	/* reload: [route:ro] first, split removed, rw2 (6448) added */
	route(&b.r[0], "ro", 6447, ROUTE_READER);
	route(&b.r[1], "rw2", 6448, ROUTE_WRITER);
	route(&b.r[2], "rw", 6446, ROUTE_WRITER);
	struct maps_route_ids prev = ids;
	struct maps_image *ib = build_ids(&b.t, &ids);
	ck_assert_str_eq(ids.name[0], "rw");
	ck_assert_str_eq(ids.name[1], "ro");
	ck_assert_str_eq(ids.name[2], "");    /* split gone */
	ck_assert_str_eq(ids.name[3], "rw2"); /* not 2: the live generation had split there */
	ck_assert_str_eq(prev.name[2], "split");
	ck_assert_uint_eq(ib->routes[0].target[0], 10);
	ck_assert(ib->routes[1].flags & MS_RT_READER);
	ck_assert(!(ib->routes[2].flags & MS_RT_PRESENT));
	ck_assert_uint_eq(ib->routes[3].port, 6448);
	for (size_t i = 0; i < ib->nservices; i++) {
		uint16_t port = ntohs(ib->services[i].key.port);
		ck_assert_uint_eq(ib->services[i].val.route_id, port == 6446   ? 0
		                                                : port == 6447 ? 1
		                                                               : 3);
	}
	/* the writer's and the readers' connections all stay */
	ck_assert_uint_eq(maps_close_mask(ia, &b.t, ib, mask), 0);

	/* the next reload may reuse id 2: no generation uses it now */
	route(&c.r[0], "rw3", 6449, ROUTE_WRITER);
	c.t.nroutes = 1;
	struct maps_image *ic = build_ids(&c.t, &ids);
	ck_assert_str_eq(ids.name[2], "rw3");
	ck_assert_str_eq(ids.name[0], "");
	/* rw and rw2 removed: their connections close; reader connections
	 * to a live reader stay, as when a reader leaves a route */
	ck_assert_uint_eq(maps_close_mask(ib, &c.t, ic, mask), 1);
	ck_assert_uint_eq(mask[10], (1u << 0) | (1u << 3));
	ck_assert_uint_eq(mask[11], 0);
	free(ia);
	free(ib);
	free(ic);
}
END_TEST

/* Two reloads in a row that each replace every route still find ids that
 * neither the live generation nor the one before it (still read, busy)
 * uses; a ninth route is refused. */
START_TEST(route_ids_full_replacement)
{
	struct fixture a, b, c;
	struct maps_route_ids ids = {0}, next;
	bool busy[MS_ROUTE_SLOTS] = {false};
	uint32_t rid[MS_MAX_ROUTES];
	char err[128], name[16];
	fixture_init(&a);
	fixture_init(&b);
	fixture_init(&c);
	for (int i = 0; i < MS_MAX_ROUTES; i++) {
		snprintf(name, sizeof(name), "a%d", i);
		route(&a.r[i], name, (uint16_t)(7000 + i), ROUTE_WRITER);
		snprintf(name, sizeof(name), "b%d", i);
		route(&b.r[i], name, (uint16_t)(7000 + i), ROUTE_WRITER);
		snprintf(name, sizeof(name), "c%d", i);
		route(&c.r[i], name, (uint16_t)(7000 + i), ROUTE_WRITER);
	}
	a.t.nroutes = b.t.nroutes = c.t.nroutes = MS_MAX_ROUTES;
	ck_assert_int_eq(maps_assign_route_ids(&ids, NULL, &a.t, &next, rid, err, sizeof(err)), 0);
	ids = next;
	ck_assert_int_eq(maps_assign_route_ids(&ids, NULL, &b.t, &next, rid, err, sizeof(err)), 0);
	for (int i = 0; i < MS_MAX_ROUTES; i++) {
		ck_assert_uint_ge(rid[i], MS_MAX_ROUTES);
		ck_assert_str_eq(ids.name[rid[i]], "");
	}
	/* a's generation is still read: its ids are busy */
	for (int i = 0; i < MS_ROUTE_SLOTS; i++)
		busy[i] = ids.name[i][0] != 0;
	ids = next;
	ck_assert_int_eq(maps_assign_route_ids(&ids, busy, &c.t, &next, rid, err, sizeof(err)), 0);
	for (int i = 0; i < MS_MAX_ROUTES; i++) {
		ck_assert_uint_ge(rid[i], 2 * MS_MAX_ROUTES);
		ck_assert_str_eq(ids.name[rid[i]], "");
		ck_assert(!busy[rid[i]]);
	}
	route(&b.r[MS_MAX_ROUTES], "b8", 7008, ROUTE_WRITER);
	b.t.nroutes = MS_MAX_ROUTES + 1;
	ck_assert_int_eq(maps_assign_route_ids(&ids, NULL, &b.t, &next, rid, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "routes"));
}
END_TEST

START_TEST(err_packet)
{
	uint8_t buf[64];
	size_t n = maps_err_packet(buf, sizeof(buf), 2003, "no writer");

	ck_assert_uint_eq(n, 4 + 9 + 9);
	ck_assert_uint_eq(buf[0], 18);
	ck_assert_uint_eq(buf[3], 0);
	ck_assert_uint_eq(buf[4], 0xff);
	ck_assert_uint_eq(buf[5] | (buf[6] << 8), 2003);
	ck_assert_int_eq(memcmp(buf + 7, "#HY000no writer", 15), 0);
	/* a long message is cut, never overflows */
	char longmsg[200];
	memset(longmsg, 'x', sizeof(longmsg) - 1);
	longmsg[sizeof(longmsg) - 1] = 0;
	ck_assert_uint_eq(maps_err_packet(buf, sizeof(buf), 2003, longmsg), sizeof(buf));
}
END_TEST

static void stop_loop(struct evloop *l, uint64_t id, void *arg)
{
	evloop_stop(l);
}

static int count_lines(const char *text, const char *what)
{
	int n = 0;

	for (const char *p = text; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

/* Out of descriptors, an error listener pauses its accepts (said once)
 * instead of waking on the same pending connection, failing and saying so
 * again; with descriptors back it serves the connections that waited. */
START_TEST(error_listener_pauses_at_emfile)
{
	struct evloop *l = evloop_new();
	char err[256];
	struct errlisten *e = errl_new(l, "127.0.0.1", err, sizeof(err));
	struct sockaddr_in a;
	socklen_t al = sizeof(a);
	int cl[3], pipefd[2], saved_err;
	struct rlimit was, low;
	char logbuf[16384] = "";
	ssize_t got;

	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(errl_open(e, 0, err, sizeof(err)), 0);
	ck_assert_int_eq(getsockname(errl_fd(e, 0), (struct sockaddr *)&a, &al), 0);
	for (int i = 0; i < 3; i++) {
		cl[i] = socket(AF_INET, SOCK_STREAM, 0);
		ck_assert_int_ge(cl[i], 0);
		ck_assert_int_eq(connect(cl[i], (struct sockaddr *)&a, al), 0);
	}
	ck_assert_int_eq(pipe2(pipefd, O_NONBLOCK), 0);
	saved_err = dup(STDERR_FILENO);
	ck_assert_int_ge(saved_err, 0);
	ck_assert_int_ge(dup2(pipefd[1], STDERR_FILENO), 0);

	/* Every descriptor taken: accept gets EMFILE. They are filled up rather
	 * than the limit lowered and raised again, which valgrind's emulation
	 * of RLIMIT_NOFILE does not undo; a large limit is brought down first
	 * (and back up after, where allowed) to keep the fill short. */
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &was), 0);
	low = was;
	if (low.rlim_cur > 1024)
		low.rlim_cur = 1024;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	int *fill = calloc(low.rlim_cur, sizeof(*fill));
	size_t nfill = 0;
	ck_assert_ptr_nonnull(fill);
	while (nfill < low.rlim_cur && (fill[nfill] = dup(0)) >= 0)
		nfill++;
	ck_assert_int_eq(errno, EMFILE);
	evloop_add_timer(l, 400, stop_loop, NULL);
	evloop_run(l);
	while (nfill > 0)
		close(fill[--nfill]);
	free(fill);
	evloop_add_timer(l, 2500, stop_loop, NULL);
	evloop_run(l);
	(void)setrlimit(RLIMIT_NOFILE, &was);

	dup2(saved_err, STDERR_FILENO);
	close(saved_err);
	got = read(pipefd[0], logbuf, sizeof(logbuf) - 1);
	logbuf[got > 0 ? got : 0] = '\0';
	close(pipefd[0]);
	close(pipefd[1]);
	ck_assert_msg(count_lines(logbuf, "error listener: accept:") == 1, "log: %s", logbuf);
	ck_assert_msg(count_lines(logbuf, "accepts paused") == 1, "log: %s", logbuf);
	/* Under valgrind the kernel's accept succeeds past valgrind's own
	 * descriptor limit and valgrind closes that connection and reports
	 * EMFILE: the waiting clients are gone, so only the pause (above) can
	 * be checked there. */
	const char *preload = getenv("LD_PRELOAD");
	bool valgrind = preload && strstr(preload, "vgpreload");
	if (!valgrind)
		ck_assert_msg(count_lines(logbuf, "accepting again") == 1, "log: %s", logbuf);
	for (int i = 0; i < 3; i++) {
		uint8_t pkt[64];

		if (!valgrind) {
			ck_assert_int_ge(read(cl[i], pkt, sizeof(pkt)), 5);
			ck_assert_uint_eq(pkt[4], 0xff); /* the ERR packet, once accepted */
		}
		close(cl[i]);
	}
	errl_free(e);
	evloop_free(l);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("maps");
	TCase *tc = tcase_create("image");
	tcase_add_test(tc, writer_and_weighted_readers);
	tcase_add_test(tc, weight_zero_and_fallback);
	tcase_add_test(tc, no_writer_names_the_reason);
	tcase_add_test(tc, services_per_vip_only);
	tcase_add_test(tc, route_ids_follow_names);
	tcase_add_test(tc, route_ids_full_replacement);
	tcase_add_test(tc, close_mask_on_promote);
	tcase_add_test(tc, close_mask_down_drain_disable);
	tcase_add_test(tc, close_mask_writer_stops_standing_in);
	tcase_add_test(tc, close_mask_adopted_matches_by_address);
	tcase_add_test(tc, writer_blip_holds);
	tcase_add_test(tc, err_packet);
	tcase_add_test(tc, error_listener_pauses_at_emfile);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
