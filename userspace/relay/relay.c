/*
 * relay.c - the L4 relay thread (see relay.h for the why).
 *
 * Everything about a pair lives on the relay thread; other threads only touch
 * the listener table and the queue of pairs handed in, both under r->mu. Epoll
 * data tells the three kinds of fd apart by the low bits: a pointer to a
 * pair's side (aligned, low bits 00), a listener ((id << 2) | 1) and the wake
 * eventfd (2).
 */
#define _GNU_SOURCE
#include "relay/relay.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/array.h"
#include "common/log.h"
#include "common/proxyproto.h"
#include "common/thread.h"

#define RELAY_BUF    (256 * 1024)
#define RELAY_PIPE   (1024 * 1024)
#define RELAY_BUDGET 32 /* pump rounds per event before yielding to others */
#define TAG_LISTENER 1u
#define TAG_WAKE     2u

/* A connected pair: data unacknowledged this long, or a peer silent this long
 * after keepalive probes began, ends it (a half-open pair does not stay). */
#define RELAY_USER_TIMEOUT_MS 30000
#define RELAY_KEEPIDLE_S      30
#define RELAY_KEEPINTVL_S     10
#define RELAY_KEEPCNT         3
/* Out of descriptors (or at the budget): accepts pause this long; the
 * clients wait in the listen backlog meanwhile. One log line per
 * RELAY_FD_LOG_MS at most. */
#define RELAY_PAUSE_MS  100
#define RELAY_FD_LOG_MS 10000

struct pair;

struct side {
	struct pair *p;
	int idx;
};

/* Moves bytes from fd[i] to fd[1 - i] of its pair. */
struct dir {
	char *buf; /* copy: data in buf[off, len) */
	size_t off, len;
	int pipe[2]; /* splice: inpipe bytes wait in the pipe */
	size_t inpipe, pipe_size;
	bool eof;         /* the source sent FIN */
	bool shut;        /* FIN passed on to the destination */
	bool src_ready;   /* the source may have data: read it */
	bool dst_blocked; /* the destination refused: wait for EPOLLOUT */
	bool fin_seen;    /* poll reported RDHUP: read on until EOF */
};

#define NO_LISTENER UINT32_MAX

struct pair {
	int fd[2];         /* 0: client, 1: backend */
	uint32_t listener; /* the listener id it came from, NO_LISTENER: none */
	uint16_t lport;    /* the client's local (service) port, host order */
	bool connecting;   /* the backend's connect has not completed yet */
	uint64_t deadline; /* of that connect (mono ms) */
	struct side side[2];
	struct dir dir[2];
	bool dead, queued;
	struct pair *next, *prev; /* all pairs */
	struct pair *rnext;       /* ready list or free list */
};

struct listener {
	uint32_t id;
	int fd;
	char bind[64];
	struct sockaddr_storage dst;
	socklen_t dstlen;
	bool pp; /* relay_set_proxy_protocol */
};

/* A pair handed to a thread. */
struct incoming {
	int fd[2];
	uint32_t listener;
	uint16_t lport;
	uint8_t pp[PP2_MAX]; /* the PROXY header to send first, pplen bytes */
	uint8_t pplen;
};

/* Pairs of this listener and service port (0: any) to end. */
struct close_req {
	uint32_t listener;
	uint16_t lport;
};

struct relay {
	enum relay_mode mode;
	int ep, wake_fd;
	pthread_t thread;
	bool running, stop;

	pthread_mutex_t mu; /* listeners, incoming */
	struct listener *ls;
	size_t nls, capls;
	struct incoming *incoming;
	size_t nin, capin;
	struct close_req *closing; /* relay_close_pairs, for the thread */
	size_t nclosing, capclosing;

	/* relay thread only */
	struct pair *pairs;
	struct pair *ready, *graveyard;

	struct relay_stats st;       /* updated with __atomic builtins */
	unsigned connect_timeout_ms; /* __atomic */
	/* descriptors held by the pairs of every thread (in the first relay,
	 * __atomic), and the most they may hold (0: no bound) */
	struct relay *root;
	uint64_t fds, fd_budget;
	size_t nconnecting; /* pairs of this thread whose connect is pending */
	/* accepts paused until (mono ms, 0: not), pauses not logged yet, last log */
	uint64_t paused_until, pauses, fd_logged;
	relay_fail_fn fail_fn; /* set before any listener */
	void *fail_arg;

	/* Threads that only carry pairs handed to them by this one, which
	 * keeps the listeners and deals accepted pairs out in turn. */
	struct relay **shards;
	size_t nshards, next_shard;
};

/* Plain copy beat splice(2) on both the bulk stream and the ping-pong rate
 * here, and a SOCKMAP sk_skb redirect cannot keep a FIN behind data still
 * queued in the kernel: docs/BENCHMARKS.md, "Relay data path". */
enum relay_mode relay_default_mode(void)
{
	return RELAY_COPY;
}

const char *relay_mode_name(enum relay_mode m)
{
	return m == RELAY_SPLICE ? "splice" : "copy";
}

int relay_mode_parse(const char *s)
{
	if (!strcmp(s, "copy"))
		return RELAY_COPY;
	if (!strcmp(s, "splice"))
		return RELAY_SPLICE;
	return -1;
}

static void stat_add(uint64_t *v, uint64_t n)
{
	__atomic_add_fetch(v, n, __ATOMIC_RELAXED);
}

static void stat_sub(uint64_t *v, uint64_t n)
{
	__atomic_sub_fetch(v, n, __ATOMIC_RELAXED);
}

static void set_nodelay(int fd)
{
	int one = 1;

	/* Ping-pong protocols (MySQL) must not wait for Nagle. */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Keepalive and a user timeout: a peer that vanished without a FIN or a
 * reset (host down, black-holed) ends the pair instead of keeping it. */
static void set_keepalive(int fd, unsigned user_timeout_ms)
{
	int one = 1, idle = RELAY_KEEPIDLE_S, intvl = RELAY_KEEPINTVL_S, cnt = RELAY_KEEPCNT;

	(void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms,
	                 sizeof(user_timeout_ms));
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -1;
	return fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* Descriptors a pair holds: two sockets, and two pipes in splice mode. */
static uint64_t pair_fds(const struct relay *r)
{
	return r->mode == RELAY_SPLICE ? 6 : 2;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- pairs (relay thread) ---- */

static int dir_init(struct relay *r, struct dir *d)
{
	d->pipe[0] = d->pipe[1] = -1;
	d->src_ready = true; /* data may be there before the first event */
	if (r->mode == RELAY_COPY) {
		d->buf = malloc(RELAY_BUF);
		return d->buf ? 0 : -1;
	}
	if (pipe2(d->pipe, O_NONBLOCK | O_CLOEXEC) < 0)
		return -1;
	/* A larger pipe means fewer wakeups on bulk transfers; the limit
	 * (pipe-max-size) may refuse it, then the default is kept. */
	(void)fcntl(d->pipe[1], F_SETPIPE_SZ, RELAY_PIPE);
	int sz = fcntl(d->pipe[1], F_GETPIPE_SZ);
	d->pipe_size = sz > 0 ? (size_t)sz : 65536;
	return 0;
}

static void dir_free(struct dir *d)
{
	free(d->buf);
	d->buf = NULL;
	for (int i = 0; i < 2; i++)
		if (d->pipe[i] >= 0)
			close(d->pipe[i]);
	d->pipe[0] = d->pipe[1] = -1;
}

static void pair_kill(struct relay *r, struct pair *p, bool reset)
{
	if (p->dead)
		return;
	p->dead = true;
	if (p->connecting) {
		p->connecting = false;
		r->nconnecting--;
	}
	for (int i = 0; i < 2; i++) {
		if (reset) {
			/* An error on one side reaches the other as a reset, not
			 * as a clean end that could pass for a complete reply. */
			struct linger lg = {.l_onoff = 1, .l_linger = 0};
			(void)setsockopt(p->fd[i], SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		}
		epoll_ctl(r->ep, EPOLL_CTL_DEL, p->fd[i], NULL);
		close(p->fd[i]);
		dir_free(&p->dir[i]);
	}
	if (p->prev)
		p->prev->next = p->next;
	else
		r->pairs = p->next;
	if (p->next)
		p->next->prev = p->prev;
	/* Freed after the current batch of events, which may still name it. */
	p->rnext = r->graveyard;
	r->graveyard = p;
	stat_sub(&r->st.active, 1);
	stat_sub(&r->root->fds, pair_fds(r));
}

/* A pair ends on an error; one whose backend connect had not completed is
 * a connect failure, reported like sockops reports a steered one. */
static bool connect_error(int err)
{
	return err == ETIMEDOUT || err == ECONNREFUSED || err == EHOSTUNREACH ||
	       err == ENETUNREACH || err == EHOSTDOWN;
}

static void pair_fail(struct relay *r, struct pair *p, int err)
{
	if (p->connecting && !p->dead && connect_error(err)) {
		stat_add(&r->st.connect_failed, 1);
		if (r->fail_fn)
			r->fail_fn(p->listener, err, r->fail_arg);
	}
	pair_kill(r, p, true);
}

static uint64_t *dir_bytes(struct relay *r, int i)
{
	return i == 0 ? &r->st.bytes_up : &r->st.bytes_down;
}

/*
 * Syscall economy matters: a MySQL round trip is one small message each way,
 * so the relay must not pay a read that only says EAGAIN. With edge-triggered
 * epoll every arrival of data (or FIN) and every freeing of send space raises
 * a new event, so a direction remembers whether its source may have more
 * (src_ready: cleared by a short read or EAGAIN) and whether its destination
 * refused (dst_blocked: set by a short write or EAGAIN), and only those
 * syscalls that can move bytes are made.
 */
static bool dir_can_move(const struct dir *d, const struct relay *r)
{
	bool room = r->mode == RELAY_COPY ? d->len < RELAY_BUF : d->inpipe < d->pipe_size;
	bool pending = r->mode == RELAY_COPY ? d->off < d->len : d->inpipe > 0;

	return (d->src_ready && !d->eof && room) || (pending && !d->dst_blocked);
}

/* One step of copy mode for direction i. Returns 0, or -1 on an error. */
static int pump_copy(struct relay *r, struct pair *p, int i)
{
	struct dir *d = &p->dir[i];
	int src = p->fd[i], dst = p->fd[1 - i];

	if (d->src_ready && !d->eof && d->len < RELAY_BUF) {
		size_t room = RELAY_BUF - d->len;
		ssize_t n = read(src, d->buf + d->len, room);
		if (n > 0) {
			d->len += n;
			/* A short read emptied the socket: the next arrival
			 * raises a new event. Not so for a FIN that came with
			 * the data: its event is spent, so read on to EOF. */
			if ((size_t)n < room && !d->fin_seen)
				d->src_ready = false;
		} else if (n == 0) {
			d->eof = true;
		} else if (errno == EAGAIN) {
			d->src_ready = false;
		} else if (errno != EINTR) {
			return -1;
		}
	}
	if (d->off < d->len && !d->dst_blocked) {
		ssize_t n = send(dst, d->buf + d->off, d->len - d->off, MSG_NOSIGNAL);
		if (n > 0) {
			d->off += n;
			stat_add(dir_bytes(r, i), n);
			if (d->off < d->len)
				d->dst_blocked = true; /* send buffer full */
		} else if (n < 0 && errno == EAGAIN) {
			d->dst_blocked = true;
		} else if (n < 0 && errno != EINTR) {
			return -1;
		}
		if (d->off == d->len)
			d->off = d->len = 0;
	}
	return 0;
}

static int pump_splice(struct relay *r, struct pair *p, int i)
{
	struct dir *d = &p->dir[i];
	int src = p->fd[i], dst = p->fd[1 - i];
	unsigned fl = SPLICE_F_MOVE | SPLICE_F_NONBLOCK;

	if (d->src_ready && !d->eof && d->inpipe < d->pipe_size) {
		ssize_t n = splice(src, NULL, d->pipe[1], NULL, d->pipe_size - d->inpipe, fl);
		if (n > 0) {
			d->inpipe += n;
		} else if (n == 0) {
			d->eof = true;
		} else if (errno == EAGAIN) {
			/* With data in the pipe, EAGAIN may mean a full pipe
			 * (it counts pages, not bytes): the socket may still
			 * hold data, so only an empty pipe proves it empty. */
			if (d->inpipe == 0)
				d->src_ready = false;
			else if (d->dst_blocked)
				d->src_ready = true;
		} else if (errno != EINTR) {
			return -1;
		}
	}
	if (d->inpipe > 0 && !d->dst_blocked) {
		size_t want = d->inpipe;
		ssize_t n = splice(d->pipe[0], NULL, dst, NULL, want, fl);
		if (n > 0) {
			d->inpipe -= n;
			stat_add(dir_bytes(r, i), n);
			if ((size_t)n < want)
				d->dst_blocked = true;
		} else if (n < 0 && errno == EAGAIN) {
			d->dst_blocked = true;
		} else if (n < 0 && errno != EINTR) {
			return -1;
		}
	}
	return 0;
}

static bool dir_drained(const struct dir *d)
{
	return d->eof && d->off == d->len && d->inpipe == 0;
}

/* Moves what can move in both directions, until nothing can (the
 * edge-triggered contract) or the budget is spent (then the pair goes on the
 * ready list, so one large transfer does not starve the others). */
static void pair_pump(struct relay *r, struct pair *p)
{
	for (int round = 0; round < RELAY_BUDGET; round++) {
		bool more = false;
		for (int i = 0; i < 2; i++) {
			struct dir *d = &p->dir[i];
			if (dir_can_move(d, r)) {
				int rc = r->mode == RELAY_COPY ? pump_copy(r, p, i)
				                               : pump_splice(r, p, i);
				if (rc < 0) {
					pair_fail(r, p, errno);
					return;
				}
			}
			if (dir_drained(d) && !d->shut) {
				/* Half-close: the peer may still answer. */
				if (shutdown(p->fd[1 - i], SHUT_WR) < 0 && errno != ENOTCONN) {
					pair_fail(r, p, errno);
					return;
				}
				d->shut = true;
			}
			more |= dir_can_move(d, r);
		}
		if (p->dir[0].shut && p->dir[1].shut) {
			pair_kill(r, p, false);
			return;
		}
		if (!more)
			return;
	}
	if (!p->queued) {
		p->queued = true;
		p->rnext = r->ready;
		r->ready = p;
	}
}

/* Readiness news for fd idx of a pair: it may have data (or FIN, or an
 * error to report) to read, or room to write into. */
static void pair_event(struct relay *r, struct pair *p, int idx, uint32_t ev)
{
	if (idx == 1 && p->connecting) {
		int err = 0;
		socklen_t len = sizeof(err);

		if (ev & (EPOLLERR | EPOLLHUP)) {
			if (getsockopt(p->fd[1], SOL_SOCKET, SO_ERROR, &err, &len) || !err)
				err = ECONNRESET;
			pair_fail(r, p, err);
			return;
		}
		if (ev & EPOLLOUT) {
			/* Connected: from now on the bound of a live pair. */
			unsigned ut = RELAY_USER_TIMEOUT_MS;
			p->connecting = false;
			r->nconnecting--;
			(void)setsockopt(p->fd[1], IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, sizeof(ut));
		}
	}
	if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		p->dir[idx].src_ready = true;
	if (ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		p->dir[idx].fin_seen = true;
	if (ev & (EPOLLOUT | EPOLLHUP | EPOLLERR))
		p->dir[1 - idx].dst_blocked = false;
	pair_pump(r, p);
}

static int pair_start(struct relay *r, int cfd, int bfd, uint32_t listener, uint16_t lport,
                      const uint8_t *pp, size_t pplen)
{
	struct pair *p = calloc(1, sizeof(*p));

	if (!p)
		return -1;
	p->fd[0] = cfd;
	p->fd[1] = bfd;
	p->listener = listener;
	p->lport = lport;
	p->connecting = listener != NO_LISTENER;
	if (p->connecting) {
		/* TCP_USER_TIMEOUT bounds it too, but in the kernel's retransmit
		 * steps; this is the bound the client sees. */
		p->deadline =
		    now_ms() + __atomic_load_n(&r->root->connect_timeout_ms, __ATOMIC_RELAXED);
		r->nconnecting++;
	}
	for (int i = 0; i < 2; i++) {
		p->side[i].p = p;
		p->side[i].idx = i;
		if (dir_init(r, &p->dir[i]) < 0)
			goto fail;
	}
	/* the PROXY header goes to the backend before anything of the client's */
	if (pplen && r->mode == RELAY_COPY) {
		memcpy(p->dir[0].buf, pp, pplen);
		p->dir[0].len = pplen;
	} else if (pplen) {
		if (write(p->dir[0].pipe[1], pp, pplen) != (ssize_t)pplen)
			goto fail;
		p->dir[0].inpipe = pplen;
	}
	set_nodelay(cfd);
	set_nodelay(bfd);
	set_keepalive(cfd, RELAY_USER_TIMEOUT_MS);
	if (set_nonblock(cfd) < 0 || set_nonblock(bfd) < 0)
		goto fail;
	for (int i = 0; i < 2; i++) {
		struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
		                         .data.ptr = &p->side[i]};
		if (epoll_ctl(r->ep, EPOLL_CTL_ADD, p->fd[i], &ev) < 0) {
			if (i == 1)
				epoll_ctl(r->ep, EPOLL_CTL_DEL, p->fd[0], NULL);
			goto fail;
		}
	}
	p->next = r->pairs;
	if (r->pairs)
		r->pairs->prev = p;
	r->pairs = p;
	stat_add(&r->st.active, 1);
	stat_add(&r->root->fds, pair_fds(r));
	return 0;
fail:
	dir_free(&p->dir[0]);
	dir_free(&p->dir[1]);
	free(p);
	return -1;
}

/* ---- listeners ---- */

static struct listener *find_listener(struct relay *r, uint32_t id)
{
	for (size_t i = 0; i < r->nls; i++)
		if (r->ls[i].id == id)
			return &r->ls[i];
	return NULL;
}

/* A non-blocking connect, bounded by timeout_ms (TCP_USER_TIMEOUT also
 * bounds the SYN retransmissions: a black-holed backend fails with
 * ETIMEDOUT then, not after the ~127 s of the default retries). */
static int connect_backend(const struct sockaddr_storage *dst, socklen_t len, unsigned timeout_ms)
{
	int fd = socket(dst->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	set_keepalive(fd, timeout_ms);
	if (connect(fd, (const struct sockaddr *)dst, len) < 0 && errno != EINPROGRESS) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

static int queue_pair(struct relay *r, int cfd, int bfd, uint32_t listener, uint16_t lport,
                      const uint8_t *pp, size_t pplen);

/* Pairs go to the threads in turn: a thread of its own per core keeps one
 * busy pair, or one preempted thread, from holding up the others. */
static int deal_pair(struct relay *r, int cfd, int bfd, uint32_t listener, uint16_t lport,
                     const uint8_t *pp, size_t pplen)
{
	size_t k = r->next_shard++ % (r->nshards + 1);

	if (k == 0)
		return pair_start(r, cfd, bfd, listener, lport, pp, pplen);
	return queue_pair(r->shards[k - 1], cfd, bfd, listener, lport, pp, pplen);
}

/* The local port of an accepted socket: the service port sk_lookup took it
 * from, which tells the route. */
static uint16_t local_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		return 0;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return 0;
}

/* Out of descriptors, or at the budget (err 0): the listeners stop being
 * watched for RELAY_PAUSE_MS (level-triggered, they would report the same
 * backlog at once again), so the thread neither spins nor floods the log;
 * what the daemon keeps in reserve (probes, admin) stays free. Under r->mu. */
static void accept_pause(struct relay *r, int err)
{
	uint64_t now = now_ms();

	r->pauses++;
	if (now - r->fd_logged >= RELAY_FD_LOG_MS || !r->fd_logged) {
		log_warn("relay: %s (%llu descriptors in pairs, budget %llu): accepts paused, new "
		         "connections wait in the backlog (%llu pause(s) in %u s)",
		         err ? strerror(err) : "at the descriptor budget",
		         (unsigned long long)__atomic_load_n(&r->fds, __ATOMIC_RELAXED),
		         (unsigned long long)r->fd_budget, (unsigned long long)r->pauses,
		         RELAY_FD_LOG_MS / 1000);
		r->fd_logged = now;
		r->pauses = 0;
	}
	if (r->paused_until)
		return;
	r->paused_until = now + RELAY_PAUSE_MS;
	for (size_t i = 0; i < r->nls; i++) {
		struct epoll_event ev = {.events = 0,
		                         .data.u64 = ((uint64_t)r->ls[i].id << 2) | TAG_LISTENER};
		(void)epoll_ctl(r->ep, EPOLL_CTL_MOD, r->ls[i].fd, &ev);
	}
}

static void accept_resume(struct relay *r)
{
	pthread_mutex_lock(&r->mu);
	r->paused_until = 0;
	for (size_t i = 0; i < r->nls; i++) {
		struct epoll_event ev = {.events = EPOLLIN,
		                         .data.u64 = ((uint64_t)r->ls[i].id << 2) | TAG_LISTENER};
		(void)epoll_ctl(r->ep, EPOLL_CTL_MOD, r->ls[i].fd, &ev);
	}
	pthread_mutex_unlock(&r->mu);
}

static bool out_of_fds(int err)
{
	return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
}

static void accept_on(struct relay *r, uint32_t id)
{
	pthread_mutex_lock(&r->mu);
	struct listener *l = find_listener(r, id);
	if (!l || r->paused_until) {
		pthread_mutex_unlock(&r->mu);
		return;
	}
	for (;;) {
		if (r->fd_budget &&
		    __atomic_load_n(&r->fds, __ATOMIC_RELAXED) + pair_fds(r) > r->fd_budget) {
			accept_pause(r, 0);
			break;
		}
		int cfd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (out_of_fds(errno))
				accept_pause(r, errno);
			else if (errno != EAGAIN)
				log_warn("relay: accept on backend %u listener: %s", id,
				         strerror(errno));
			break;
		}
		stat_add(&r->st.accepted, 1);
		/* A connect that fails later (refused) shows up as an error on
		 * the first send/recv and resets the client. */
		int bfd = connect_backend(
		    &l->dst, l->dstlen, __atomic_load_n(&r->connect_timeout_ms, __ATOMIC_RELAXED));
		if (bfd < 0) {
			int e = errno;
			close(cfd);
			if (out_of_fds(e)) {
				/* Not the backend's fault: no report. */
				accept_pause(r, e);
				break;
			}
			stat_add(&r->st.connect_failed, 1);
			log_debug("relay: connect to backend %u: %s", id, strerror(e));
			if (r->fail_fn)
				r->fail_fn(id, e, r->fail_arg);
			continue;
		}
		uint8_t pp[PP2_MAX];
		int pplen = 0;

		if (l->pp && (pplen = pp2_build_fd(pp, cfd)) < 0) {
			/* the client is gone already, or not TCP/IP */
			log_debug("relay: no PROXY header for a client of backend %u", id);
			close(cfd);
			close(bfd);
			continue;
		}
		if (deal_pair(r, cfd, bfd, id, local_port(cfd), pp, (size_t)pplen) < 0) {
			close(cfd);
			close(bfd);
		}
	}
	pthread_mutex_unlock(&r->mu);
}

static int open_listener(const char *bind_addr)
{
	struct sockaddr_storage ss = {0};
	socklen_t len;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

	if (inet_pton(AF_INET, bind_addr, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		len = sizeof(*s4);
	} else if (inet_pton(AF_INET6, bind_addr, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		len = sizeof(*s6);
	} else {
		errno = EINVAL;
		return -1;
	}
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 4096) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int relay_set_backend(struct relay *r, uint32_t id, const char *bind_addr,
                      const struct sockaddr *dst, socklen_t dstlen)
{
	if (dstlen > sizeof(struct sockaddr_storage) || strlen(bind_addr) >= 64) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&r->mu);
	struct listener *l = find_listener(r, id);
	if (l && strcmp(l->bind, bind_addr) != 0) {
		epoll_ctl(r->ep, EPOLL_CTL_DEL, l->fd, NULL);
		close(l->fd);
		*l = r->ls[--r->nls];
		l = NULL;
	}
	if (!l) {
		if (ARRAY_RESERVE(r->ls, r->nls, r->capls, 8) < 0)
			goto fail;
		int fd = open_listener(bind_addr);
		if (fd < 0)
			goto fail;
		struct epoll_event ev = {.events = EPOLLIN,
		                         .data.u64 = ((uint64_t)id << 2) | TAG_LISTENER};
		if (epoll_ctl(r->ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
			close(fd);
			goto fail;
		}
		l = &r->ls[r->nls++];
		memset(l, 0, sizeof(*l));
		l->id = id;
		l->fd = fd;
		snprintf(l->bind, sizeof(l->bind), "%s", bind_addr);
	}
	memcpy(&l->dst, dst, dstlen);
	l->dstlen = dstlen;
	int fd = l->fd;
	pthread_mutex_unlock(&r->mu);
	return fd;
fail:;
	int e = errno;
	pthread_mutex_unlock(&r->mu);
	errno = e;
	return -1;
}

void relay_set_proxy_protocol(struct relay *r, uint32_t id, bool on)
{
	pthread_mutex_lock(&r->mu);
	struct listener *l = find_listener(r, id);
	if (l)
		l->pp = on;
	pthread_mutex_unlock(&r->mu);
}

void relay_remove_backend(struct relay *r, uint32_t id)
{
	pthread_mutex_lock(&r->mu);
	struct listener *l = find_listener(r, id);
	if (l) {
		epoll_ctl(r->ep, EPOLL_CTL_DEL, l->fd, NULL);
		close(l->fd);
		*l = r->ls[--r->nls];
	}
	pthread_mutex_unlock(&r->mu);
}

int relay_listener_fd(struct relay *r, uint32_t id)
{
	pthread_mutex_lock(&r->mu);
	struct listener *l = find_listener(r, id);
	int fd = l ? l->fd : -1;
	pthread_mutex_unlock(&r->mu);
	return fd;
}

size_t relay_backend_ids(struct relay *r, uint32_t *ids, size_t max)
{
	pthread_mutex_lock(&r->mu);
	size_t n = r->nls;
	for (size_t i = 0; i < n && i < max; i++)
		ids[i] = r->ls[i].id;
	pthread_mutex_unlock(&r->mu);
	return n;
}

/* Hands a pair to r's thread. -1 (the fds still the caller's) only when it
 * could not be queued. */
static int queue_pair(struct relay *r, int fd_client, int fd_backend, uint32_t listener,
                      uint16_t lport, const uint8_t *pp, size_t pplen)
{
	pthread_mutex_lock(&r->mu);
	if (ARRAY_RESERVE(r->incoming, r->nin, r->capin, 8) < 0) {
		pthread_mutex_unlock(&r->mu);
		return -1;
	}
	r->incoming[r->nin].fd[0] = fd_client;
	r->incoming[r->nin].fd[1] = fd_backend;
	r->incoming[r->nin].listener = listener;
	r->incoming[r->nin].lport = lport;
	if (pplen) /* pp may be NULL then */
		memcpy(r->incoming[r->nin].pp, pp, pplen);
	r->incoming[r->nin].pplen = (uint8_t)pplen;
	r->nin++;
	pthread_mutex_unlock(&r->mu);
	uint64_t one = 1;
	/* Queued, so the relay owns the fds now whatever happens: the caller
	 * must not close them. An eventfd write cannot fail short of a counter
	 * overflow; say so if it does (the pair starts at the next wakeup). */
	if (write(r->wake_fd, &one, sizeof(one)) != sizeof(one))
		log_warn("relay: waking a relay thread: %s", strerror(errno));
	return 0;
}

int relay_add_pair(struct relay *r, int fd_client, int fd_backend)
{
	pthread_mutex_lock(&r->mu);
	size_t k = r->next_shard++ % (r->nshards + 1);
	pthread_mutex_unlock(&r->mu);
	return queue_pair(k ? r->shards[k - 1] : r, fd_client, fd_backend, NO_LISTENER, 0, NULL, 0);
}

static void close_request(struct relay *r, uint32_t listener, uint16_t lport)
{
	uint64_t one = 1;

	pthread_mutex_lock(&r->mu);
	if (ARRAY_RESERVE(r->closing, r->nclosing, r->capclosing, 8) < 0) {
		pthread_mutex_unlock(&r->mu);
		log_error("relay: out of memory: relayed connections of listener %u not "
		          "closed on demote",
		          listener);
		return;
	}
	r->closing[r->nclosing].listener = listener;
	r->closing[r->nclosing].lport = lport;
	r->nclosing++;
	pthread_mutex_unlock(&r->mu);
	if (write(r->wake_fd, &one, sizeof(one)) != sizeof(one))
		log_warn("relay: waking a relay thread: %s", strerror(errno));
}

void relay_set_fd_budget(struct relay *r, uint64_t fds)
{
	pthread_mutex_lock(&r->mu);
	r->fd_budget = fds;
	pthread_mutex_unlock(&r->mu);
}

void relay_set_connect_timeout(struct relay *r, unsigned ms)
{
	__atomic_store_n(&r->connect_timeout_ms, ms ? ms : RELAY_CONNECT_TIMEOUT_MS,
	                 __ATOMIC_RELAXED);
}

void relay_on_connect_fail(struct relay *r, relay_fail_fn fn, void *arg)
{
	r->fail_fn = fn;
	r->fail_arg = arg;
	for (size_t i = 0; i < r->nshards; i++)
		relay_on_connect_fail(r->shards[i], fn, arg);
}

void relay_close_pairs(struct relay *r, uint32_t id, uint16_t lport)
{
	close_request(r, id, lport);
	for (size_t i = 0; i < r->nshards; i++)
		close_request(r->shards[i], id, lport);
}

/* The close requests queued for this thread (under r->mu): every pair that
 * matches one is ended with a reset, so its client sees an error at once. */
static void run_close_requests(struct relay *r)
{
	size_t n = 0;

	if (!r->nclosing)
		return;
	for (struct pair *p = r->pairs, *next; p; p = next) {
		next = p->next;
		for (size_t i = 0; i < r->nclosing; i++) {
			const struct close_req *c = &r->closing[i];
			if (p->listener == c->listener && (!c->lport || c->lport == p->lport)) {
				pair_kill(r, p, true);
				n++;
				break;
			}
		}
	}
	if (n)
		log_info("relay: closed %zu relayed connection(s) on demote", n);
	r->nclosing = 0;
}

static void stats_add(struct relay_stats *s, struct relay *r)
{
	s->accepted += __atomic_load_n(&r->st.accepted, __ATOMIC_RELAXED);
	s->active += __atomic_load_n(&r->st.active, __ATOMIC_RELAXED);
	s->connect_failed += __atomic_load_n(&r->st.connect_failed, __ATOMIC_RELAXED);
	s->bytes_up += __atomic_load_n(&r->st.bytes_up, __ATOMIC_RELAXED);
	s->bytes_down += __atomic_load_n(&r->st.bytes_down, __ATOMIC_RELAXED);
}

void relay_get_stats(struct relay *r, struct relay_stats *s)
{
	memset(s, 0, sizeof(*s));
	stats_add(s, r);
	for (size_t i = 0; i < r->nshards; i++)
		stats_add(s, r->shards[i]);
}

/* ---- the thread ---- */

static void take_incoming(struct relay *r)
{
	uint64_t v;

	(void)!read(r->wake_fd, &v, sizeof(v));
	pthread_mutex_lock(&r->mu);
	for (size_t i = 0; i < r->nin; i++) {
		struct incoming *in = &r->incoming[i];
		if (pair_start(r, in->fd[0], in->fd[1], in->listener, in->lport, in->pp,
		               in->pplen) < 0) {
			close(in->fd[0]);
			close(in->fd[1]);
		}
	}
	r->nin = 0;
	run_close_requests(r);
	pthread_mutex_unlock(&r->mu);
}

/* Pairs whose backend connect is past its deadline end as a timeout. */
static void check_deadlines(struct relay *r)
{
	uint64_t now = now_ms();

	for (struct pair *p = r->pairs, *next; p && r->nconnecting; p = next) {
		next = p->next;
		if (p->connecting && now >= p->deadline)
			pair_fail(r, p, ETIMEDOUT);
	}
}

static void run_ready(struct relay *r)
{
	struct pair *list = r->ready;

	r->ready = NULL;
	while (list) {
		struct pair *p = list;
		list = p->rnext;
		p->queued = false;
		if (!p->dead)
			pair_pump(r, p);
	}
}

static void bury(struct relay *r)
{
	while (r->graveyard) {
		struct pair *p = r->graveyard;
		r->graveyard = p->rnext;
		free(p);
	}
}

static void *relay_thread(void *arg)
{
	struct relay *r = arg;
	struct epoll_event evs[64];

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		int timeout = r->ready ? 0 : r->nconnecting ? 50 : 1000;
		if (r->paused_until) {
			uint64_t now = now_ms();
			if (now >= r->paused_until) {
				accept_resume(r);
			} else if (r->paused_until - now < (uint64_t)timeout) {
				timeout = (int)(r->paused_until - now);
			}
		}
		int n = epoll_wait(r->ep, evs, 64, timeout);
		if (n < 0 && errno != EINTR) {
			log_error("relay: epoll_wait: %s", strerror(errno));
			break;
		}
		for (int i = 0; i < n; i++) {
			uint64_t u = evs[i].data.u64;
			if ((u & 3) == TAG_WAKE) {
				take_incoming(r);
			} else if ((u & 3) == TAG_LISTENER) {
				accept_on(r, (uint32_t)(u >> 2));
			} else {
				struct side *s = evs[i].data.ptr;
				if (!s->p->dead)
					pair_event(r, s->p, s->idx, evs[i].events);
			}
		}
		run_ready(r);
		if (r->nconnecting)
			check_deadlines(r);
		bury(r);
	}
	return NULL;
}

static struct relay *relay_new_one(enum relay_mode mode, unsigned idx, char *err, size_t errlen)
{
	struct relay *r = calloc(1, sizeof(*r));

	if (!r) {
		snprintf(err, errlen, "relay: out of memory");
		return NULL;
	}
	r->mode = mode;
	r->root = r;
	r->connect_timeout_ms = RELAY_CONNECT_TIMEOUT_MS;
	r->ep = -1;
	r->wake_fd = -1;
	pthread_mutex_init(&r->mu, NULL);
	r->ep = epoll_create1(EPOLL_CLOEXEC);
	r->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (r->ep < 0 || r->wake_fd < 0) {
		snprintf(err, errlen, "relay: epoll/eventfd: %s", strerror(errno));
		goto fail;
	}
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = TAG_WAKE};
	if (epoll_ctl(r->ep, EPOLL_CTL_ADD, r->wake_fd, &ev) < 0) {
		snprintf(err, errlen, "relay: epoll_ctl: %s", strerror(errno));
		goto fail;
	}
	int rc = pthread_create(&r->thread, NULL, relay_thread, r);
	if (rc) {
		snprintf(err, errlen, "relay: thread: %s", strerror(rc));
		goto fail;
	}
	thread_name(r->thread, "mysteer-relay%u", idx);
	r->running = true;
	return r;
fail:
	relay_free(r);
	return NULL;
}

/* Half the cores, at least one: on the 2 shared cores of the bench, where
 * client and servers need the CPU too, two threads measured 1.04-1.13x
 * HAProxy against 1.04-1.18x for one (medians 1.06x and 1.15x over four
 * runs each, docs/RELAY.md); a router with cores to spare gets more. */
unsigned relay_default_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n >= 4 ? (unsigned)(n / 2) : 1;
}

struct relay *relay_new(enum relay_mode mode, unsigned threads, char *err, size_t errlen)
{
	if (threads == 0)
		threads = relay_default_threads();
	struct relay *r = relay_new_one(mode, 0, err, errlen);
	if (!r || threads == 1)
		return r;
	r->shards = calloc(threads - 1, sizeof(*r->shards));
	if (!r->shards) {
		snprintf(err, errlen, "relay: out of memory");
		relay_free(r);
		return NULL;
	}
	for (; r->nshards < threads - 1; r->nshards++) {
		r->shards[r->nshards] = relay_new_one(mode, (unsigned)r->nshards + 1, err, errlen);
		if (!r->shards[r->nshards]) {
			relay_free(r);
			return NULL;
		}
		r->shards[r->nshards]->root = r;
	}
	return r;
}

void relay_free(struct relay *r)
{
	if (!r)
		return;
	if (r->running) {
		uint64_t one = 1;
		__atomic_store_n(&r->stop, true, __ATOMIC_RELEASE);
		(void)!write(r->wake_fd, &one, sizeof(one));
		pthread_join(r->thread, NULL);
	}
	/* After this thread, which deals pairs out to them, has stopped. */
	for (size_t i = 0; i < r->nshards; i++)
		relay_free(r->shards[i]);
	free(r->shards);
	while (r->pairs)
		pair_kill(r, r->pairs, false);
	bury(r);
	for (size_t i = 0; i < r->nls; i++)
		close(r->ls[i].fd);
	for (size_t i = 0; i < r->nin; i++) {
		close(r->incoming[i].fd[0]);
		close(r->incoming[i].fd[1]);
	}
	free(r->ls);
	free(r->incoming);
	free(r->closing);
	if (r->ep >= 0)
		close(r->ep);
	if (r->wake_fd >= 0)
		close(r->wake_fd);
	pthread_mutex_destroy(&r->mu);
	free(r);
}
