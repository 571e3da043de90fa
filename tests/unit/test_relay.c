/*
 * test_relay.c - the relay moves large streams intact in both directions,
 * propagates half-close, applies backpressure, and relays through its
 * per-backend listeners, in both data path modes.
 */
#define _GNU_SOURCE
#include <check.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/proxyproto.h"
#include "relay/relay.h"

static int modes[] = {RELAY_COPY, RELAY_SPLICE};

static int listen_lo(struct sockaddr_in *sa)
{
	socklen_t len = sizeof(*sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)sa, sizeof(*sa)), 0);
	ck_assert_int_eq(listen(fd, 16), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)sa, &len), 0);
	return fd;
}

/* A connected TCP pair over loopback: *a connects, *b is accepted. */
static void tcp_pair(int *a, int *b)
{
	struct sockaddr_in sa;
	int l = listen_lo(&sa);

	*a = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_eq(connect(*a, (struct sockaddr *)&sa, sizeof(sa)), 0);
	*b = accept(l, NULL, NULL);
	ck_assert_int_ge(*b, 0);
	close(l);
}

static unsigned char pattern(size_t i)
{
	return (unsigned char)((i * 2654435761u) >> 13);
}

struct writer_arg {
	int fd;
	size_t total;
	bool shut;
};

static void *writer(void *p)
{
	struct writer_arg *w = p;
	unsigned char buf[65536];
	size_t sent = 0;

	while (sent < w->total) {
		size_t n = w->total - sent < sizeof(buf) ? w->total - sent : sizeof(buf);
		for (size_t i = 0; i < n; i++)
			buf[i] = pattern(sent + i);
		ssize_t k = write(w->fd, buf, n);
		if (k <= 0)
			return (void *)1;
		sent += k;
	}
	if (w->shut)
		shutdown(w->fd, SHUT_WR);
	return NULL;
}

/* Reads to EOF, checking the pattern; returns bytes read or -1 on mismatch. */
static ssize_t read_check(int fd)
{
	unsigned char buf[65536];
	size_t got = 0;

	for (;;) {
		ssize_t k = read(fd, buf, sizeof(buf));
		if (k < 0)
			return -1;
		if (k == 0)
			return got;
		for (ssize_t i = 0; i < k; i++)
			if (buf[i] != pattern(got + i))
				return -1;
		got += k;
	}
}

struct reader_arg {
	int fd;
	ssize_t got;
};

static void *reader(void *p)
{
	struct reader_arg *a = p;

	a->got = read_check(a->fd);
	return NULL;
}

START_TEST(stream_both_ways_with_half_close)
{
	char err[128];
	struct relay *r = relay_new(modes[_i], 2, err, sizeof(err));
	ck_assert_msg(r != NULL, "%s", err);
	int cli, rc_cli, rc_srv, srv;
	tcp_pair(&cli, &rc_cli);
	tcp_pair(&rc_srv, &srv);
	ck_assert_int_eq(relay_add_pair(r, rc_cli, rc_srv), 0);

	const size_t up = 24u << 20, down = 40u << 20;
	struct writer_arg wc = {cli, up, true}, ws = {srv, down, false};
	pthread_t tc, ts;
	pthread_create(&tc, NULL, writer, &wc);
	pthread_create(&ts, NULL, writer, &ws);
	/* The client reads the download concurrently; the server gets the
	 * whole upload and then EOF (the client's half-close) while its own
	 * download is still flowing. */
	pthread_t tr;
	struct reader_arg rd = {cli, -2};
	pthread_create(&tr, NULL, reader, &rd);
	ck_assert_int_eq(read_check(srv), (ssize_t)up);
	void *res;
	pthread_join(ts, &res);
	ck_assert_ptr_null(res);
	/* After the server answered it closes; the client sees all, then EOF. */
	shutdown(srv, SHUT_WR);
	pthread_join(tr, NULL);
	ck_assert_int_eq(rd.got, (ssize_t)down);
	pthread_join(tc, &res);
	ck_assert_ptr_null(res);

	struct relay_stats st;
	for (int i = 0; i < 100; i++) {
		relay_get_stats(r, &st);
		if (st.active == 0)
			break;
		usleep(10000);
	}
	ck_assert_uint_eq(st.active, 0);
	ck_assert_uint_eq(st.bytes_up, up);
	ck_assert_uint_eq(st.bytes_down, down);
	close(cli);
	close(srv);
	relay_free(r);
}
END_TEST

START_TEST(backpressure_bounds_buffering)
{
	char err[128];
	struct relay *r = relay_new(modes[_i], 2, err, sizeof(err));
	ck_assert_msg(r != NULL, "%s", err);
	int cli, rc_cli, rc_srv, srv;
	tcp_pair(&cli, &rc_cli);
	tcp_pair(&rc_srv, &srv);
	ck_assert_int_eq(relay_add_pair(r, rc_cli, rc_srv), 0);

	/* The server does not read: the client must block, not the relay
	 * buffering all of it. */
	const size_t total = 256u << 20;
	struct writer_arg wc = {cli, total, true};
	pthread_t tc;
	pthread_create(&tc, NULL, writer, &wc);
	usleep(500000);
	struct relay_stats st;
	relay_get_stats(r, &st);
	ck_assert_uint_lt(st.bytes_up, 64u << 20);
	ck_assert_int_eq(read_check(srv), (ssize_t)total);
	void *res;
	pthread_join(tc, &res);
	ck_assert_ptr_null(res);
	close(cli);
	close(srv);
	relay_free(r);
}
END_TEST

/* A small message and the FIN often arrive together: the relay must not take
 * the short read for "nothing more" and miss the EOF (a client sending its
 * last request and shutting down would hang). */
START_TEST(message_with_fin_is_passed_on)
{
	char err[128];
	struct relay *r = relay_new(modes[_i], 2, err, sizeof(err));
	ck_assert_msg(r != NULL, "%s", err);
	for (int i = 0; i < 200; i++) {
		int cli, rc_cli, rc_srv, srv;
		char buf[16] = {0};
		tcp_pair(&cli, &rc_cli);
		tcp_pair(&rc_srv, &srv);
		ck_assert_int_eq(write(cli, "quit", 4), 4);
		ck_assert_int_eq(shutdown(cli, SHUT_WR), 0);
		ck_assert_int_eq(relay_add_pair(r, rc_cli, rc_srv), 0);
		struct pollfd pfd = {.fd = srv, .events = POLLIN};
		size_t got = 0;
		for (;;) {
			ck_assert_int_eq(poll(&pfd, 1, 3000), 1);
			ssize_t k = read(srv, buf + got, sizeof(buf) - got);
			ck_assert_int_ge(k, 0);
			if (k == 0)
				break;
			got += k;
		}
		ck_assert_uint_eq(got, 4);
		ck_assert_int_eq(memcmp(buf, "quit", 4), 0);
		close(srv);
		ck_assert_int_eq(poll(&(struct pollfd){.fd = cli, .events = POLLIN}, 1, 3000), 1);
		ck_assert_int_eq(read(cli, buf, 1), 0);
		close(cli);
	}
	relay_free(r);
}
END_TEST

START_TEST(listener_relays_to_backend)
{
	char err[128];
	struct relay *r = relay_new(modes[_i], 2, err, sizeof(err));
	ck_assert_msg(r != NULL, "%s", err);
	struct sockaddr_in be;
	int bl = listen_lo(&be);
	int lfd = relay_set_backend(r, 7, "127.0.0.1", (struct sockaddr *)&be, sizeof(be));
	ck_assert_int_ge(lfd, 0);
	ck_assert_int_eq(relay_listener_fd(r, 7), lfd);
	ck_assert_int_eq(relay_listener_fd(r, 8), -1);

	struct sockaddr_in la;
	socklen_t len = sizeof(la);
	ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&la, &len), 0);
	int c = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_eq(connect(c, (struct sockaddr *)&la, len), 0);
	int s = accept(bl, NULL, NULL);
	ck_assert_int_ge(s, 0);
	/* MySQL speaks first: the greeting goes server -> client. */
	ck_assert_int_eq(write(s, "hello", 5), 5);
	char buf[8] = {0};
	ck_assert_int_eq(read(c, buf, 5), 5);
	ck_assert_str_eq(buf, "hello");
	ck_assert_int_eq(write(c, "ping", 4), 4);
	ck_assert_int_eq(read(s, buf, 4), 4);
	ck_assert_int_eq(memcmp(buf, "ping", 4), 0);
	close(s);
	ck_assert_int_eq(read(c, buf, 1), 0); /* the server's close reaches the client */
	close(c);

	/* Retargeting keeps the listener; removing closes it. */
	ck_assert_int_eq(relay_set_backend(r, 7, "127.0.0.1", (struct sockaddr *)&be, sizeof(be)),
	                 lfd);
	relay_remove_backend(r, 7);
	ck_assert_int_eq(relay_listener_fd(r, 7), -1);
	close(bl);
	relay_free(r);
}
END_TEST

/* With several threads, the pairs the listener's thread deals out to the
 * others carry their traffic, and the stats add up over all threads. */
START_TEST(listener_pairs_on_every_thread)
{
	enum { N = 12 };
	char err[128];
	struct relay *r = relay_new(modes[_i], 3, err, sizeof(err));
	ck_assert_msg(r != NULL, "%s", err);
	struct sockaddr_in be, la;
	socklen_t len = sizeof(la);
	int bl = listen_lo(&be), c[N], s[N];
	int lfd = relay_set_backend(r, 3, "127.0.0.1", (struct sockaddr *)&be, sizeof(be));
	ck_assert_int_ge(lfd, 0);
	ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&la, &len), 0);
	for (int i = 0; i < N; i++) {
		c[i] = socket(AF_INET, SOCK_STREAM, 0);
		ck_assert_int_eq(connect(c[i], (struct sockaddr *)&la, len), 0);
		s[i] = accept(bl, NULL, NULL); /* the relay's connection, in order */
		ck_assert_int_ge(s[i], 0);
	}
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < N; i++) {
			char out[32], in[8] = {0};
			snprintf(out, sizeof(out), "q%02d%d", i, round);
			ck_assert_int_eq(write(c[i], out, 4), 4);
			ck_assert_int_eq(read(s[i], in, 4), 4);
			ck_assert_int_eq(memcmp(in, out, 4), 0);
			ck_assert_int_eq(write(s[i], "ok", 2), 2);
			ck_assert_int_eq(read(c[i], in, 2), 2);
		}
	}
	struct relay_stats st;
	/* a relay thread counts bytes after it sent them: the client may have
	 * read the last ones just before (seen under valgrind) */
	relay_get_stats(r, &st);
	for (int t = 0; t < 300 && (st.bytes_up < N * 3 * 4 || st.bytes_down < N * 3 * 2); t++) {
		usleep(10000);
		relay_get_stats(r, &st);
	}
	ck_assert_uint_eq(st.accepted, N);
	ck_assert_uint_eq(st.active, N);
	ck_assert_uint_eq(st.bytes_up, N * 3 * 4);
	ck_assert_uint_eq(st.bytes_down, N * 3 * 2);
	for (int i = 0; i < N; i++) {
		close(c[i]);
		close(s[i]);
	}
	for (int t = 0; t < 300 && st.active > 0; t++) {
		usleep(10000);
		relay_get_stats(r, &st);
	}
	ck_assert_uint_eq(st.active, 0);
	close(bl);
	relay_free(r);
}
END_TEST

START_TEST(refused_backend_resets_client)
{
	char err[128];
	struct relay *r = relay_new(modes[_i], 2, err, sizeof(err));
	ck_assert_msg(r != NULL, "%s", err);
	struct sockaddr_in be;
	int bl = listen_lo(&be);
	close(bl); /* nobody listens there now */
	int lfd = relay_set_backend(r, 1, "127.0.0.1", (struct sockaddr *)&be, sizeof(be));
	ck_assert_int_ge(lfd, 0);
	struct sockaddr_in la;
	socklen_t len = sizeof(la);
	ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&la, &len), 0);
	int c = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_eq(connect(c, (struct sockaddr *)&la, len), 0);
	struct pollfd pfd = {.fd = c, .events = POLLIN};
	ck_assert_int_eq(poll(&pfd, 1, 3000), 1); /* never a hang */
	char b;
	ck_assert_int_le(read(c, &b, 1), 0);
	close(c);
	relay_free(r);
}
END_TEST

/* Close-on-demote: relay_close_pairs ends (with a reset) exactly the pairs
 * of that listener and service port, on every thread; the others go on. */
START_TEST(close_pairs_of_one_listener)
{
	enum { N = 6 };
	char err[128];
	struct relay *r = relay_new(modes[_i], 3, err, sizeof(err));
	ck_assert_msg(r != NULL, "%s", err);
	struct sockaddr_in be, la[2];
	int bl = listen_lo(&be), c[N], s[N];
	for (int k = 0; k < 2; k++) {
		socklen_t len = sizeof(la[k]);
		int lfd =
		    relay_set_backend(r, 10 + k, "127.0.0.1", (struct sockaddr *)&be, sizeof(be));
		ck_assert_int_ge(lfd, 0);
		ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&la[k], &len), 0);
	}
	for (int i = 0; i < N; i++) { /* even: listener 10, odd: 11 */
		c[i] = socket(AF_INET, SOCK_STREAM, 0);
		ck_assert_int_eq(connect(c[i], (struct sockaddr *)&la[i % 2], sizeof(la[0])), 0);
		s[i] = accept(bl, NULL, NULL);
		ck_assert_int_ge(s[i], 0);
	}
	struct relay_stats st;
	relay_get_stats(r, &st);
	for (int t = 0; t < 300 && st.active < N; t++) {
		usleep(10000);
		relay_get_stats(r, &st);
	}
	ck_assert_uint_eq(st.active, N);
	/* Another service port: nothing. */
	relay_close_pairs(r, 10, (uint16_t)(ntohs(la[0].sin_port) + 1));
	relay_close_pairs(r, 10, ntohs(la[0].sin_port));
	for (int i = 0; i < N; i += 2) {
		struct pollfd pfd = {.fd = c[i], .events = POLLIN};
		char b;
		ck_assert_int_eq(poll(&pfd, 1, 5000), 1);
		errno = 0;
		ck_assert_int_eq(read(c[i], &b, 1), -1);
		ck_assert_int_eq(errno, ECONNRESET);
	}
	for (int i = 1; i < N; i += 2) {
		char in[4] = {0};
		ck_assert_int_eq(write(c[i], "ping", 4), 4);
		ck_assert_int_eq(read(s[i], in, 4), 4);
		ck_assert_int_eq(memcmp(in, "ping", 4), 0);
	}
	relay_get_stats(r, &st);
	ck_assert_uint_eq(st.active, N / 2);
	for (int i = 0; i < N; i++) {
		close(c[i]);
		close(s[i]);
	}
	close(bl);
	relay_free(r);
}
END_TEST

START_TEST(mode_names)
{
	ck_assert_int_eq(relay_mode_parse("copy"), RELAY_COPY);
	ck_assert_int_eq(relay_mode_parse("splice"), RELAY_SPLICE);
	ck_assert_int_eq(relay_mode_parse("nope"), -1);
	ck_assert_str_eq(relay_mode_name(relay_default_mode()),
	                 relay_default_mode() == RELAY_COPY ? "copy" : "splice");
}
END_TEST

/* The PROXY v2 header: IPv4 pair, and IPv4 with IPv6 (mapped). */
START_TEST(proxy_header_v2)
{
	struct sockaddr_storage a = {0}, b = {0}, c = {0};
	struct sockaddr_in *a4 = (struct sockaddr_in *)&a, *b4 = (struct sockaddr_in *)&b;
	struct sockaddr_in6 *c6 = (struct sockaddr_in6 *)&c;
	static const uint8_t want4[28] = {
	    0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a, 0x21, 0x11,
	    0x00, 0x0c, 10,   0,    0,    5,    127,  0,    0,    1,    0x30, 0x39, 0x19, 0x32};
	uint8_t buf[PP2_MAX];

	a4->sin_family = b4->sin_family = AF_INET;
	inet_pton(AF_INET, "10.0.0.5", &a4->sin_addr);
	inet_pton(AF_INET, "127.0.0.1", &b4->sin_addr);
	a4->sin_port = htons(12345);
	b4->sin_port = htons(6450);
	ck_assert_int_eq(pp2_build(buf, &a, &b), 28);
	ck_assert_mem_eq(buf, want4, 28);
	c6->sin6_family = AF_INET6;
	inet_pton(AF_INET6, "2001:db8::1", &c6->sin6_addr);
	c6->sin6_port = htons(6446);
	ck_assert_int_eq(pp2_build(buf, &a, &c), 52);
	ck_assert_int_eq(buf[13], 0x21);
	ck_assert_int_eq(buf[15], 36);
	ck_assert_int_eq(buf[16 + 10], 0xff); /* ::ffff:10.0.0.5 */
	ck_assert_int_eq(buf[16 + 12], 10);
	ck_assert_int_eq(buf[32 + 15], 1);
	c.ss_family = AF_UNIX;
	ck_assert_int_eq(pp2_build(buf, &a, &c), -1);
}
END_TEST

int main(void)
{

	Suite *s = suite_create("relay");
	TCase *tc = tcase_create("relay");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, stream_both_ways_with_half_close, 0, 2);
	tcase_add_loop_test(tc, backpressure_bounds_buffering, 0, 2);
	tcase_add_loop_test(tc, message_with_fin_is_passed_on, 0, 2);
	tcase_add_loop_test(tc, listener_relays_to_backend, 0, 2);
	tcase_add_loop_test(tc, listener_pairs_on_every_thread, 0, 2);
	tcase_add_loop_test(tc, refused_backend_resets_client, 0, 2);
	tcase_add_loop_test(tc, close_pairs_of_one_listener, 0, 2);
	tcase_add_test(tc, mode_names);
	tcase_add_test(tc, proxy_header_v2);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
