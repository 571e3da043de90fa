/*
 * test_handoff.c - local handoff and the sk_lookup program: parsing
 * /proc/net/tcp{,6}, finding and copying a listener through pidfd_getfd, and
 * (in a private network and mount namespace, with a private bpffs) the
 * program assigning connections to a service address (VIP and port) to the
 * SOCKMAP socket of the chosen backend, or to the route's error listener when
 * it has none; other local addresses and the inactive generation untouched.
 */
#define _GNU_SOURCE
#include <check.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mysteer_abi.h"
#include "relay/handoff.h"
#include "steer_lookup.skel.h"

START_TEST(parse_v4_and_v6_lines)
{
	struct sockaddr_storage ss;
	int st;
	unsigned long ino;
	const char *v4 = "   1: 0100007F:0CEA 00000000:0000 0A 00000000:00000000 00:00000000 "
	                 "00000000   106        0 123456 1 0000000000000000 100 0 0 10 0";
	ck_assert_int_eq(handoff_parse_line(v4, false, &ss, &st, &ino), 0);
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	ck_assert_int_eq(s4->sin_family, AF_INET);
	ck_assert_uint_eq(ntohl(s4->sin_addr.s_addr), 0x7f000001);
	ck_assert_uint_eq(ntohs(s4->sin_port), 3306);
	ck_assert_int_eq(st, 0x0A);
	ck_assert_uint_eq(ino, 123456);
	uid_t uid = 0;
	ck_assert_int_eq(handoff_parse_line_uid(v4, false, &ss, &st, &ino, &uid), 0);
	ck_assert_uint_eq(uid, 106);

	const char *v6 = "   0: 00000000000000000000000001000000:0CEB "
	                 "00000000000000000000000000000000:0000 0A 00000000:00000000 "
	                 "00:00000000 00000000   106        0 777 1 0000000000000000 100 0 0 10 0";
	ck_assert_int_eq(handoff_parse_line(v6, true, &ss, &st, &ino), 0);
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	ck_assert(IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr));
	ck_assert_uint_eq(ntohs(s6->sin6_port), 3307);
	ck_assert_uint_eq(ino, 777);

	const char *hdr = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when "
	                  "retrnsmt   uid  timeout inode";
	ck_assert_int_eq(handoff_parse_line(hdr, false, &ss, &st, &ino), -1);
}
END_TEST

START_TEST(local_addresses)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	struct sockaddr_in6 b = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};

	inet_pton(AF_INET, "127.0.0.5", &a.sin_addr);
	ck_assert(handoff_addr_is_local((struct sockaddr *)&a));
	ck_assert(handoff_addr_is_local((struct sockaddr *)&b));
	inet_pton(AF_INET, "192.0.2.77", &a.sin_addr); /* TEST-NET-1: never ours */
	ck_assert(!handoff_addr_is_local((struct sockaddr *)&a));
}
END_TEST

static int listen_on(int family, const char *addr, struct sockaddr_storage *out)
{
	int fd = socket(family, SOCK_STREAM, 0);
	socklen_t len = sizeof(*out);

	memset(out, 0, sizeof(*out));
	if (family == AF_INET) {
		struct sockaddr_in *s = (struct sockaddr_in *)out;
		s->sin_family = AF_INET;
		inet_pton(AF_INET, addr, &s->sin_addr);
		len = sizeof(*s);
	} else {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)out;
		s->sin6_family = AF_INET6;
		inet_pton(AF_INET6, addr, &s->sin6_addr);
		len = sizeof(*s);
	}
	ck_assert_int_eq(bind(fd, (struct sockaddr *)out, len), 0);
	ck_assert_int_eq(listen(fd, 64), 0);
	len = sizeof(*out);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)out, &len), 0);
	return fd;
}

START_TEST(takes_listener_from_owner)
{
	struct sockaddr_storage ss;
	int l = listen_on(AF_INET, "127.0.0.1", &ss);

	int copy = handoff_take_listener((struct sockaddr *)&ss);
	ck_assert_int_ge(copy, 0);
	ck_assert_int_ne(copy, l);
	ck_assert_uint_eq(handoff_sock_cookie(copy), handoff_sock_cookie(l));
	close(copy);
	/* Only the owner's: ours is taken for our uid and not for another. */
	uid_t uid = 12345;
	long other = -2;
	copy = handoff_take_listener_uid((struct sockaddr *)&ss, (long)getuid(), &uid, &other);
	ck_assert_int_ge(copy, 0);
	ck_assert_uint_eq(uid, getuid());
	ck_assert_int_eq(other, -1);
	close(copy);
	ck_assert_int_eq(
	    handoff_take_listener_uid((struct sockaddr *)&ss, (long)getuid() + 1, &uid, &other),
	    -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_int_eq(other, (long)getuid());
	close(l);
	/* Nobody listens there any more. */
	ck_assert_int_eq(handoff_take_listener((struct sockaddr *)&ss), -1);
	ck_assert_int_eq(errno, ENOENT);

	/* A dual-stack wildcard listener (as mariadbd --bind-address=*) serves
	 * an IPv4 loopback backend address. */
	int w = listen_on(AF_INET6, "::", &ss);
	struct sockaddr_in b = {.sin_family = AF_INET,
	                        .sin_port = ((struct sockaddr_in6 *)&ss)->sin6_port};
	inet_pton(AF_INET, "127.0.0.1", &b.sin_addr);
	copy = handoff_take_listener((struct sockaddr *)&b);
	ck_assert_int_ge(copy, 0);
	ck_assert_uint_eq(handoff_sock_cookie(copy), handoff_sock_cookie(w));
	close(copy);
	close(w);
}
END_TEST

/* --- sk_lookup in a private netns and bpffs --- */

static void private_namespaces(char *pin_dir, size_t len)
{
	ck_assert_int_eq(unshare(CLONE_NEWNET | CLONE_NEWNS), 0);
	ck_assert_int_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	char tmpl[] = "/tmp/bpfB-test-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(tmpl));
	ck_assert_int_eq(mount("bpf", tmpl, "bpf", 0, NULL), 0);
	snprintf(pin_dir, len, "%s", tmpl);
	ck_assert_int_eq(system("ip link set lo up"), 0);
}

static int map_fd(const char *pin_dir, const char *name)
{
	char p[256];

	snprintf(p, sizeof(p), "%s/%s", pin_dir, name);
	int fd = bpf_obj_get(p);
	ck_assert_int_ge(fd, 0);
	return fd;
}

static int connect_addr(const char *ip, uint16_t port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	inet_pton(AF_INET, ip, &a.sin_addr);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	return fd;
}

static int connect_port(uint16_t port)
{
	return connect_addr("127.0.0.1", port);
}

/* A service entry: the VIP ip (IPv4 or IPv6 literal) on port, in gen. */
static void put_service(int fd, uint32_t gen, const char *ip, uint16_t port, uint32_t route)
{
	struct ms_service_key k = {.gen = gen, .port = htons(port)};
	struct ms_service sv = {.route_id = route};

	k.family = strchr(ip, ':') ? MS_AF_INET6 : MS_AF_INET;
	ck_assert_int_eq(inet_pton(k.family == MS_AF_INET ? AF_INET : AF_INET6, ip, k.addr), 1);
	ck_assert_int_eq(bpf_map_update_elem(fd, &k, &sv, 0), 0);
}

START_TEST(sk_lookup_assigns_backend_and_error_listener)
{
	char pin[64];
	private_namespaces(pin, sizeof(pin));

	LIBBPF_OPTS(bpf_object_open_opts, o, .pin_root_path = pin);
	struct steer_lookup *skel = steer_lookup__open_opts(&o);
	ck_assert_ptr_nonnull(skel);
	ck_assert_int_eq(steer_lookup__load(skel), 0); /* the verifier accepts it */
	int ns = open("/proc/self/ns/net", O_RDONLY);
	struct bpf_link *link = bpf_program__attach_netns(skel->progs.ms_sk_lookup, ns);
	ck_assert_ptr_nonnull(link);

	/* Route 0 on port 16446 -> backend 3 (a "server" listener we own,
	 * handed over as a local handoff would). */
	const uint16_t port = 16446;
	__u32 zero = 0, be = 3;
	struct ms_cfg cfg = {.flags = MS_CFG_ENABLED, .abi_version = MS_ABI_VERSION};
	ck_assert_int_eq(bpf_map_update_elem(map_fd(pin, MS_MAP_CFG), &zero, &cfg, 0), 0);
	int svc = map_fd(pin, MS_MAP_SERVICES);
	put_service(svc, 0, "127.0.0.1", port, 0);
	put_service(svc, 0, "::1", port, 0);
	struct ms_route rt = {.flags = MS_RT_PRESENT, .ntargets = 1, .total_weight = 1};
	rt.target[0] = be;
	rt.cum_weight[0] = 1;
	int rfd = map_fd(pin, MS_MAP_ROUTE_SEL);
	ck_assert_int_eq(bpf_map_update_elem(rfd, &zero, &rt, 0), 0);

	struct sockaddr_storage srv_addr, err_addr;
	int srv = listen_on(AF_INET, "127.0.0.1", &srv_addr);
	int errl = listen_on(AF_INET, "127.0.0.1", &err_addr);
	int copy = handoff_take_listener((struct sockaddr *)&srv_addr);
	ck_assert_int_ge(copy, 0);
	/* The backend listens on srv's port: a handoff, counted as "lookup". */
	struct ms_backend bent = {.flags = MS_BE_PRESENT | MS_BE_LOCAL};
	bent.ep.family = MS_AF_INET;
	bent.ep.port = ((struct sockaddr_in *)&srv_addr)->sin_port;
	memcpy(bent.ep.addr, &((struct sockaddr_in *)&srv_addr)->sin_addr, 4);
	ck_assert_int_eq(bpf_map_update_elem(map_fd(pin, MS_MAP_BACKENDS), &be, &bent, 0), 0);
	int sm = map_fd(pin, MS_MAP_SOCKMAP);
	__u64 v = copy;
	ck_assert_int_eq(bpf_map_update_elem(sm, &be, &v, 0), 0);
	close(copy); /* the entry stays: the owner still has the socket */
	__u32 eslot = MS_SOCKMAP_ERR(0);
	v = errl;
	ck_assert_int_eq(bpf_map_update_elem(sm, &eslot, &v, 0), 0);

	/* Nothing listens on the service port itself: only sk_lookup can make
	 * this connect succeed. */
	int c = connect_port(port);
	ck_assert_int_ge(c, 0);
	int a = accept(srv, NULL, NULL);
	ck_assert_int_ge(a, 0);
	struct sockaddr_in loc;
	socklen_t len = sizeof(loc);
	ck_assert_int_eq(getsockname(a, (struct sockaddr *)&loc, &len), 0);
	ck_assert_uint_eq(ntohs(loc.sin_port), port); /* keeps the service port */
	close(a);
	close(c);
	static struct ms_counters cnt;
	ck_assert_int_eq(bpf_map_lookup_elem(map_fd(pin, MS_MAP_COUNTERS), &be, &cnt), 0);
	ck_assert_uint_eq(cnt.by[0][MS_PATH_LOOKUP].steered, 1); /* route 0, handed over */
	ck_assert_uint_eq(cnt.by[0][MS_PATH_RELAY].steered, 0);

	__u64 ck;

	/* IPv6 clients reach a dual-stack [::] listener too. */
	struct sockaddr_storage w_addr;
	int w = listen_on(AF_INET6, "::", &w_addr);
	v = w;
	ck_assert_int_eq(bpf_map_update_elem(sm, &be, &v, 0), 0);
	struct sockaddr_in6 a6 = {
	    .sin6_family = AF_INET6, .sin6_port = htons(port), .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	c = socket(AF_INET6, SOCK_STREAM, 0);
	ck_assert_int_eq(connect(c, (struct sockaddr *)&a6, sizeof(a6)), 0);
	a = accept(w, NULL, NULL);
	ck_assert_int_ge(a, 0);
	close(a);
	close(c);
	c = connect_port(port); /* and IPv4 clients to the same socket */
	ck_assert_int_ge(c, 0);
	a = accept(w, NULL, NULL);
	ck_assert_int_ge(a, 0);
	close(a);
	close(c);
	close(w);
	copy = handoff_take_listener((struct sockaddr *)&srv_addr);
	ck_assert_int_ge(copy, 0);
	v = copy;
	ck_assert_int_eq(bpf_map_update_elem(sm, &be, &v, 0), 0);
	close(copy);

	/* A server with a separate IPV6_V6ONLY listener: IPv6 clients get the
	 * one in steer_sockmap6, IPv4 clients the IPv4 one. */
	int x = socket(AF_INET6, SOCK_STREAM, 0), one = 1;
	ck_assert_int_eq(setsockopt(x, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)), 0);
	struct sockaddr_in6 xa = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	ck_assert_int_eq(bind(x, (struct sockaddr *)&xa, sizeof(xa)), 0);
	ck_assert_int_eq(listen(x, 16), 0);
	int sm6 = map_fd(pin, MS_MAP_SOCKMAP6);
	v = x;
	ck_assert_int_eq(bpf_map_update_elem(sm6, &be, &v, 0), 0);
	c = socket(AF_INET6, SOCK_STREAM, 0);
	ck_assert_int_eq(connect(c, (struct sockaddr *)&a6, sizeof(a6)), 0);
	a = accept(x, NULL, NULL);
	ck_assert_int_ge(a, 0);
	close(a);
	close(c);
	c = connect_port(port);
	ck_assert_int_ge(c, 0);
	a = accept(srv, NULL, NULL);
	ck_assert_int_ge(a, 0);
	close(a);
	close(c);
	close(x); /* leaves steer_sockmap6 by itself */
	ck_assert_int_ne(bpf_map_lookup_elem(sm6, &be, &ck), 0);

	/* The server dies: its entry leaves the map, and connections go to the
	 * error listener instead of a reset. */
	close(srv);
	ck_assert_int_ne(bpf_map_lookup_elem(sm, &be, &ck), 0);
	c = connect_port(port);
	ck_assert_int_ge(c, 0);
	a = accept(errl, NULL, NULL);
	ck_assert_int_ge(a, 0);
	close(a);
	close(c);

	/* A route without targets goes to the error listener too. */
	rt.ntargets = 0;
	ck_assert_int_eq(bpf_map_update_elem(rfd, &zero, &rt, 0), 0);
	c = connect_port(port);
	ck_assert_int_ge(c, 0);
	a = accept(errl, NULL, NULL);
	ck_assert_int_ge(a, 0);
	close(a);
	close(c);

	/* Other ports are untouched, and so is another local address on the
	 * service port: only the VIPs are steered. */
	ck_assert_int_eq(connect_port(port + 1), -1);
	ck_assert_int_eq(connect_addr("127.0.0.2", port), -1);

	/* A service and route written into generation 1 act only once
	 * active_gen flips, and then generation 0's do not. */
	put_service(svc, 1, "127.0.0.2", port, 5);
	__u32 idx = 1 * MS_ROUTE_SLOTS + 5, gen1 = 1;
	ck_assert_int_eq(bpf_map_update_elem(rfd, &idx, &rt, 0), 0); /* no target */
	eslot = MS_SOCKMAP_ERR(5);
	v = errl;
	ck_assert_int_eq(bpf_map_update_elem(sm, &eslot, &v, 0), 0);
	ck_assert_int_eq(connect_addr("127.0.0.2", port), -1);
	ck_assert_int_eq(bpf_map_update_elem(map_fd(pin, MS_MAP_ACTIVE_GEN), &zero, &gen1, 0), 0);
	c = connect_addr("127.0.0.2", port);
	ck_assert_int_ge(c, 0);
	a = accept(errl, NULL, NULL);
	ck_assert_int_ge(a, 0);
	close(a);
	close(c);
	ck_assert_int_eq(connect_port(port), -1);

	bpf_link__destroy(link);
	steer_lookup__destroy(skel);
	close(ns);
	ck_assert_int_eq(umount(pin), 0);
	ck_assert_int_eq(rmdir(pin), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("handoff");
	TCase *tc = tcase_create("handoff");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, parse_v4_and_v6_lines);
	tcase_add_test(tc, local_addresses);
	tcase_add_test(tc, takes_listener_from_owner);
	tcase_add_test(tc, sk_lookup_assigns_backend_and_error_listener);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
