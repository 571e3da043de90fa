/*
 * relay_bench.c - measures the three candidate data paths of the L4 relay
 * over loopback, in a network namespace of its own: a plain read/write copy
 * and splice(2) through a pipe (both in userspace/relay/relay.c, on the relay
 * thread), and a SOCKMAP sk_skb verdict program redirecting each segment to
 * the other socket of the pair (bpf/relay_skb.bpf.c, no userspace at all).
 * A direct connection (no relay) is the reference.
 *
 * Two figures per path: the throughput of one large stream (default 1 GiB)
 * and the rate of 64-byte request/response round trips on one connection,
 * which is what a MySQL client does. Output: one line per path with the
 * median over the rounds and the best round, e.g.
 *   relay_bench path=splice stream_MBps=2345.6 pingpong_rps=34567 best_...
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "relay/relay.h"
#include "relay_skb.skel.h"

enum path { P_DIRECT, P_COPY, P_SPLICE, P_SOCKMAP, P_COUNT };
static const char *const path_names[P_COUNT] = {"direct", "copy", "splice", "sockmap"};

static size_t opt_bytes = 1ul << 30;
static double opt_seconds = 3.0;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "relay_bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* A loopback TCP connection: *a connects, *b is the accepted end. */
static void tcp_pair(int *a, int *b)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	int l = socket(AF_INET, SOCK_STREAM, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) || listen(l, 4) ||
	    getsockname(l, (struct sockaddr *)&sa, &len))
		die("listen");
	*a = socket(AF_INET, SOCK_STREAM, 0);
	if (*a < 0 || connect(*a, (struct sockaddr *)&sa, sizeof(sa)))
		die("connect");
	*b = accept(l, NULL, NULL);
	if (*b < 0)
		die("accept");
	close(l);
	nodelay(*a);
	nodelay(*b);
}

struct sockmap_path {
	struct relay_skb *skel;
	int socks, peers;
};

static uint64_t cookie(int fd)
{
	uint64_t c = 0;
	socklen_t len = sizeof(c);

	if (getsockopt(fd, SOL_SOCKET, SO_COOKIE, &c, &len))
		die("SO_COOKIE");
	return c;
}

static void sockmap_init(struct sockmap_path *s)
{
	s->skel = relay_skb__open_and_load();
	if (!s->skel)
		die("load relay_skb");
	s->socks = bpf_map__fd(s->skel->maps.relay_socks);
	s->peers = bpf_map__fd(s->skel->maps.relay_peer);
	if (bpf_prog_attach(bpf_program__fd(s->skel->progs.relay_verdict), s->socks,
	                    BPF_SK_SKB_STREAM_VERDICT, 0))
		die("attach sk_skb verdict");
}

static void sockmap_pair(struct sockmap_path *s, int a, int b)
{
	uint64_t ca = cookie(a), cb = cookie(b), fa = a, fb = b;

	if (bpf_map_update_elem(s->peers, &ca, &cb, 0) ||
	    bpf_map_update_elem(s->peers, &cb, &ca, 0) ||
	    bpf_map_update_elem(s->socks, &ca, &fa, 0) ||
	    bpf_map_update_elem(s->socks, &cb, &fb, 0))
		die("sockmap pair");
}

/* The chain client -> [relay a|b] -> server for one path. */
struct chain {
	int client, server;
	int a, b; /* relay ends (sockmap and direct: ours to close) */
	struct relay *relay;
};

static void chain_open(enum path p, struct chain *c, struct sockmap_path *sm)
{
	char err[128];

	memset(c, 0, sizeof(*c));
	c->a = c->b = -1;
	if (p == P_DIRECT) {
		tcp_pair(&c->client, &c->server);
		return;
	}
	tcp_pair(&c->client, &c->a);
	tcp_pair(&c->b, &c->server);
	if (p == P_SOCKMAP) {
		sockmap_pair(sm, c->a, c->b);
		return;
	}
	c->relay = relay_new(p == P_COPY ? RELAY_COPY : RELAY_SPLICE, 1, err, sizeof(err));
	if (!c->relay) {
		fprintf(stderr, "relay_bench: %s\n", err);
		exit(1);
	}
	if (relay_add_pair(c->relay, c->a, c->b))
		die("relay_add_pair");
	c->a = c->b = -1; /* the relay owns them */
}

static void chain_close(struct chain *c)
{
	close(c->client);
	close(c->server);
	if (c->a >= 0)
		close(c->a);
	if (c->b >= 0)
		close(c->b);
	relay_free(c->relay);
}

struct sender {
	int fd;
	size_t total;
};

static void *send_all(void *arg)
{
	struct sender *s = arg;
	static char buf[256 * 1024];
	size_t sent = 0;

	while (sent < s->total) {
		size_t n = s->total - sent < sizeof(buf) ? s->total - sent : sizeof(buf);
		ssize_t k = write(s->fd, buf, n);
		if (k <= 0)
			die("stream write");
		sent += k;
	}
	return NULL;
}

static double run_stream(enum path p, struct sockmap_path *sm)
{
	struct chain c;
	static char buf[256 * 1024];
	size_t got = 0;
	pthread_t t;

	chain_open(p, &c, sm);
	struct sender s = {c.client, opt_bytes};
	double t0 = now_s();
	pthread_create(&t, NULL, send_all, &s);
	while (got < opt_bytes) {
		ssize_t k = read(c.server, buf, sizeof(buf));
		if (k <= 0)
			die("stream read");
		got += k;
	}
	double dt = now_s() - t0;
	pthread_join(t, NULL);
	chain_close(&c);
	return got / dt / 1e6;
}

static int read_full(int fd, char *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t k = read(fd, buf + got, n - got);
		if (k <= 0)
			return -1;
		got += k;
	}
	return 0;
}

static void *echo(void *arg)
{
	int fd = *(int *)arg;
	char buf[64];

	while (read_full(fd, buf, sizeof(buf)) == 0)
		if (write(fd, buf, sizeof(buf)) != sizeof(buf))
			break;
	return NULL;
}

static double run_pingpong(enum path p, struct sockmap_path *sm)
{
	struct chain c;
	char buf[64] = {1};
	pthread_t t;
	uint64_t n = 0;

	chain_open(p, &c, sm);
	pthread_create(&t, NULL, echo, &c.server);
	double t0 = now_s(), end = t0 + opt_seconds, t1;
	do {
		for (int i = 0; i < 256; i++) {
			if (write(c.client, buf, sizeof(buf)) != sizeof(buf) ||
			    read_full(c.client, buf, sizeof(buf)))
				die("ping-pong");
		}
		n += 256;
		t1 = now_s();
	} while (t1 < end);
	shutdown(c.client, SHUT_WR);
	shutdown(c.server, SHUT_RDWR); /* ends the echo thread in every path */
	pthread_join(t, NULL);
	chain_close(&c);
	return n / (t1 - t0);
}

#define MAX_ROUNDS 32

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * Half-close over the SOCKMAP path: the relay can only learn of the client's
 * FIN from poll() on its socket and pass it on with shutdown(SHUT_WR), while
 * redirected data may still wait in the kernel's queue for the other socket.
 * Sends `bytes` then FIN, and returns how many bytes arrived before EOF.
 */
static void *fin_forwarder(void *arg)
{
	int *ab = arg;
	struct pollfd p = {.fd = ab[0], .events = POLLRDHUP};

	while (poll(&p, 1, -1) == 1 && !(p.revents & (POLLRDHUP | POLLHUP)))
		;
	shutdown(ab[1], SHUT_WR);
	return NULL;
}

static size_t run_fin_check(struct sockmap_path *sm, size_t bytes)
{
	struct chain c;
	static char buf[256 * 1024];
	pthread_t ts, tf;
	size_t got = 0;
	ssize_t k;

	chain_open(P_SOCKMAP, &c, sm);
	int ab[2] = {c.a, c.b};
	pthread_create(&tf, NULL, fin_forwarder, ab);
	struct sender s = {c.client, bytes};
	pthread_create(&ts, NULL, send_all, &s);
	pthread_join(ts, NULL);
	shutdown(c.client, SHUT_WR);
	struct pollfd p = {.fd = c.server, .events = POLLIN};
	while (poll(&p, 1, 3000) == 1 && (k = read(c.server, buf, sizeof(buf))) > 0)
		got += k;
	pthread_join(tf, NULL);
	chain_close(&c);
	return got;
}

static void own_netns(void)
{
	if (unshare(CLONE_NEWNET)) {
		fprintf(stderr,
		        "relay_bench: unshare(CLONE_NEWNET): %s (run as root, or "
		        "--no-netns)\n",
		        strerror(errno));
		exit(1);
	}
	if (system("ip link set lo up") != 0) {
		fprintf(stderr, "relay_bench: ip link set lo up failed\n");
		exit(1);
	}
}

static void usage(void)
{
	fprintf(stderr,
	        "usage: relay_bench [--bytes N] [--seconds S] [--rounds R] [--path NAME]... "
	        "[--no-netns]\n"
	        "  paths: direct copy splice sockmap (default: all, interleaved)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"bytes", required_argument, 0, 'b'},  {"seconds", required_argument, 0, 's'},
	    {"rounds", required_argument, 0, 'r'}, {"path", required_argument, 0, 'p'},
	    {"no-netns", no_argument, 0, 'n'},     {0, 0, 0, 0},
	};
	bool want[P_COUNT] = {false}, any = false, netns = true;
	int rounds = 3, o;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'b':
			opt_bytes = strtoull(optarg, NULL, 0);
			break;
		case 's':
			opt_seconds = atof(optarg);
			break;
		case 'r':
			rounds = atoi(optarg);
			break;
		case 'n':
			netns = false;
			break;
		case 'p': {
			int i;
			for (i = 0; i < P_COUNT && strcmp(optarg, path_names[i]); i++)
				;
			if (i == P_COUNT)
				usage();
			want[i] = any = true;
			break;
		}
		default:
			usage();
		}
	}
	if (!any)
		for (int i = 0; i < P_COUNT; i++)
			want[i] = true;
	if (netns)
		own_netns();
	struct sockmap_path sm = {0};
	if (want[P_SOCKMAP])
		sockmap_init(&sm);

	/* Rounds interleave the paths so a noisy neighbour on the shared
	 * cores hits all of them alike; the median and the best are kept. */
	if (rounds < 1 || rounds > MAX_ROUNDS)
		usage();
	double mb_of[P_COUNT][MAX_ROUNDS], rps_of[P_COUNT][MAX_ROUNDS];
	double best_mb[P_COUNT] = {0}, best_rps[P_COUNT] = {0};
	for (int r = 0; r < rounds; r++) {
		for (int p = 0; p < P_COUNT; p++) {
			if (!want[p])
				continue;
			double mb = run_stream(p, &sm), rps = run_pingpong(p, &sm);
			fprintf(stderr, "# round %d %s: %.1f MB/s, %.0f round trips/s\n", r + 1,
			        path_names[p], mb, rps);
			mb_of[p][r] = mb;
			rps_of[p][r] = rps;
			if (mb > best_mb[p])
				best_mb[p] = mb;
			if (rps > best_rps[p])
				best_rps[p] = rps;
		}
	}
	if (want[P_SOCKMAP]) {
		int ok = 0, n = 10;
		for (int i = 0; i < n; i++) {
			size_t got = run_fin_check(&sm, 16u << 20);
			fprintf(stderr, "# sockmap half-close: %zu of %u bytes before EOF\n", got,
			        16u << 20);
			ok += got == 16u << 20;
		}
		printf("relay_bench path=sockmap half_close_intact=%d/%d\n", ok, n);
	}
	for (int p = 0; p < P_COUNT; p++)
		if (want[p])
			printf("relay_bench path=%s stream_MBps=%.1f pingpong_rps=%.0f "
			       "best_stream_MBps=%.1f best_pingpong_rps=%.0f rounds=%d\n",
			       path_names[p], median(mb_of[p], rounds), median(rps_of[p], rounds),
			       best_mb[p], best_rps[p], rounds);
	relay_skb__destroy(sm.skel);
	return 0;
}
