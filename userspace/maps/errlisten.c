/*
 * errlisten.c - see errlisten.h. Every accepted connection gets one small
 * packet and is closed at once, so nothing is kept per connection; the write
 * cannot block because the packet is far smaller than any socket buffer.
 * Out of file descriptors, a listener stops accepting for a while instead
 * of spinning: level-triggered, its pending connection would wake the loop
 * at once again, each time with the same error.
 */
#define _GNU_SOURCE
#include "maps/errlisten.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/evloop.h"
#include "common/log.h"
#include "maps/maps.h"

/* ER_UNKNOWN_ERROR: libmariadb refuses client-range codes (2003) from a server
 * as a malformed packet, so a server code it is; the message names the reason. */
#define ERRL_CODE 1105
/* Accepts paused this long at EMFILE and the like, doubling up to the max. */
#define ERRL_PAUSE_MS     50
#define ERRL_PAUSE_MAX_MS 1000

struct errl_route {
	struct errlisten *owner;
	int fd;
	char msg[256];
	uint64_t resume_timer; /* accepts paused (out of descriptors) until it fires */
	uint64_t pause_ms;     /* the next pause; 0 after an accept that worked */
};

struct errlisten {
	struct evloop *loop;
	struct sockaddr_storage addr;
	socklen_t addrlen;
	struct errl_route r[MS_ROUTE_SLOTS];
};

size_t maps_err_packet(uint8_t *buf, size_t len, uint16_t code, const char *msg)
{
	size_t mlen = strlen(msg), plen;

	if (len < 13)
		return 0;
	if (mlen > len - 13)
		mlen = len - 13;
	plen = 1 + 2 + 1 + 5 + mlen;
	buf[0] = (uint8_t)plen;
	buf[1] = (uint8_t)(plen >> 8);
	buf[2] = (uint8_t)(plen >> 16);
	buf[3] = 0; /* sequence id */
	buf[4] = 0xff;
	buf[5] = (uint8_t)code;
	buf[6] = (uint8_t)(code >> 8);
	buf[7] = '#';
	memcpy(buf + 8, "HY000", 5);
	memcpy(buf + 13, msg, mlen);
	return 4 + plen;
}

static void resume_accepts(struct evloop *l, uint64_t id, void *arg)
{
	struct errl_route *r = arg;

	r->resume_timer = 0;
	if (r->fd >= 0 && evloop_mod_fd(l, r->fd, EV_READ) < 0)
		log_warn("error listener: cannot watch its socket again: %s", strerror(errno));
}

/* Out of descriptors (or kernel memory): no accept until a timer says so.
 * Said once per run of pauses; the run ends with an accept that works. */
static void pause_accepts(struct evloop *l, struct errl_route *r, int err)
{
	if (!r->pause_ms)
		log_warn("error listener: accept: %s: accepts paused, retried every %d to %d ms",
		         strerror(err), ERRL_PAUSE_MS, ERRL_PAUSE_MAX_MS);
	r->pause_ms = r->pause_ms ? r->pause_ms * 2 : ERRL_PAUSE_MS;
	if (r->pause_ms > ERRL_PAUSE_MAX_MS)
		r->pause_ms = ERRL_PAUSE_MAX_MS;
	if (r->resume_timer)
		return;
	r->resume_timer = evloop_add_timer(l, r->pause_ms, resume_accepts, r);
	if (r->resume_timer && evloop_mod_fd(l, r->fd, 0) < 0) {
		evloop_del_timer(l, r->resume_timer);
		r->resume_timer = 0;
	}
}

static bool out_of_fds(int err)
{
	return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
}

static void on_accept(struct evloop *l, int fd, unsigned events, void *arg)
{
	struct errl_route *r = arg;
	uint8_t pkt[300];
	size_t n = maps_err_packet(pkt, sizeof(pkt), ERRL_CODE, r->msg);

	for (;;) {
		int c = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (out_of_fds(errno))
				pause_accepts(l, r, errno);
			else if (errno != EAGAIN)
				log_warn("error listener: accept: %s", strerror(errno));
			return;
		}
		if (r->pause_ms)
			log_info("error listener: accepting again");
		r->pause_ms = 0;
		if (write(c, pkt, n) != (ssize_t)n)
			log_debug("error listener: short write: %s", strerror(errno));
		/* Wait for nothing: the client reads the packet, then EOF. */
		shutdown(c, SHUT_WR);
		close(c);
	}
}

static int parse_addr(const char *addr, struct sockaddr_storage *ss, socklen_t *sl)
{
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, addr, &((struct sockaddr_in *)ss)->sin_addr) == 1) {
		ss->ss_family = AF_INET;
		*sl = sizeof(struct sockaddr_in);
		return 0;
	}
	if (inet_pton(AF_INET6, addr, &((struct sockaddr_in6 *)ss)->sin6_addr) == 1) {
		ss->ss_family = AF_INET6;
		*sl = sizeof(struct sockaddr_in6);
		return 0;
	}
	return -1;
}

struct errlisten *errl_new(struct evloop *l, const char *addr, char *err, size_t errlen)
{
	struct errlisten *e = calloc(1, sizeof(*e));

	if (!e) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (parse_addr(addr, &e->addr, &e->addrlen)) {
		snprintf(err, errlen, "relay_address %s is not an IP address", addr);
		free(e);
		return NULL;
	}
	e->loop = l;
	for (size_t i = 0; i < MS_ROUTE_SLOTS; i++) {
		e->r[i].owner = e;
		e->r[i].fd = -1;
	}
	return e;
}

int errl_open(struct errlisten *e, size_t route, char *err, size_t errlen)
{
	struct errl_route *r;
	char a[INET6_ADDRSTRLEN] = "?";
	int fd;

	if (!e || route >= MS_ROUTE_SLOTS) {
		snprintf(err, errlen, "error listener: bad route id %zu", route);
		return -1;
	}
	r = &e->r[route];
	if (r->fd >= 0)
		return 0;
	fd = socket(e->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&e->addr, e->addrlen) || listen(fd, 128)) {
		if (e->addr.ss_family == AF_INET)
			inet_ntop(AF_INET, &((struct sockaddr_in *)&e->addr)->sin_addr, a,
			          sizeof(a));
		else
			inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&e->addr)->sin6_addr, a,
			          sizeof(a));
		snprintf(err, errlen, "error listener on %s: %s", a, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (e->loop && evloop_add_fd(e->loop, fd, EV_READ, on_accept, r)) {
		snprintf(err, errlen, "error listener: evloop_add_fd failed");
		close(fd);
		return -1;
	}
	r->fd = fd;
	snprintf(r->msg, sizeof(r->msg), "mysteer: no target for this route yet");
	return 0;
}

void errl_close(struct errlisten *e, size_t route)
{
	if (!e || route >= MS_ROUTE_SLOTS || e->r[route].fd < 0)
		return;
	if (e->loop)
		evloop_del_fd(e->loop, e->r[route].fd);
	if (e->loop && e->r[route].resume_timer)
		evloop_del_timer(e->loop, e->r[route].resume_timer);
	e->r[route].resume_timer = 0;
	e->r[route].pause_ms = 0;
	close(e->r[route].fd);
	e->r[route].fd = -1;
}

void errl_free(struct errlisten *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < MS_ROUTE_SLOTS; i++)
		errl_close(e, i);
	free(e);
}

void errl_set_reason(struct errlisten *e, size_t route, const char *msg)
{
	if (e && route < MS_ROUTE_SLOTS)
		snprintf(e->r[route].msg, sizeof(e->r[route].msg), "%s", msg);
}

int errl_fd(const struct errlisten *e, size_t route)
{
	return e && route < MS_ROUTE_SLOTS ? e->r[route].fd : -1;
}
int errl_endpoint(const struct errlisten *e, size_t route, struct ms_endpoint *ep)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	memset(ep, 0, sizeof(*ep));
	if (errl_fd(e, route) < 0 || getsockname(e->r[route].fd, (struct sockaddr *)&ss, &sl))
		return -1;
	if (ss.ss_family == AF_INET) {
		struct sockaddr_in *s = (struct sockaddr_in *)&ss;
		ep->family = MS_AF_INET;
		ep->port = s->sin_port;
		memcpy(ep->addr, &s->sin_addr, 4);
	} else {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)&ss;
		ep->family = MS_AF_INET6;
		ep->port = s->sin6_port;
		memcpy(ep->addr, &s->sin6_addr, 16);
	}
	return 0;
}
