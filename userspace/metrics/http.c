/*
 * http.c - see http.h. The listening socket is made here (so a bind failure
 * is reported with its errno) and handed to libmicrohttpd, which serves it
 * with one internal thread: requests are answered one at a time, each by a
 * round trip to the loop thread.
 */
#define _GNU_SOURCE
#include "metrics/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/evloop.h"
#include "common/log.h"
#include "common/metrics.h"
#include "config/config.h"

enum ask { ASK_METRICS = 1, ASK_LIVE, ASK_READY };

struct metrics_http {
	struct MHD_Daemon *mhd;
	struct evloop *loop;
	int lfd, efd;
	metrics_ready_fn ready;
	void *arg;

	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stopping;
	uint64_t asked, answered; /* request numbers: a late answer is dropped */
	enum ask what;
	/* the answer */
	unsigned status;
	char *body;
	size_t len;
};

/* ---- the loop side ---- */

static void answer(struct metrics_http *h, enum ask what, unsigned *status, char **body,
                   size_t *len)
{
	char why[256] = "";

	*status = 200;
	*body = NULL;
	*len = 0;
	switch (what) {
	case ASK_METRICS:
		*body = metrics_render_text(metrics_global(), len);
		if (!*body)
			*status = 500;
		return;
	case ASK_LIVE:
		*body = strdup("ok\n");
		break;
	case ASK_READY:
		if (h->ready && !h->ready(h->arg, why, sizeof(why))) {
			*status = 503;
			if (asprintf(body, "not ready: %s\n", why) < 0)
				*body = NULL;
		} else {
			*body = strdup("ready\n");
		}
		break;
	}
	if (*body)
		*len = strlen(*body);
	else
		*status = 500;
}

static void on_event(struct evloop *l, int fd, unsigned events, void *arg)
{
	struct metrics_http *h = arg;
	uint64_t v;
	unsigned status;
	char *body;
	size_t len;

	if (read(fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
		return;
	pthread_mutex_lock(&h->mu);
	uint64_t n = h->asked;
	enum ask what = h->what;
	bool due = n != h->answered;
	pthread_mutex_unlock(&h->mu);
	if (!due)
		return;
	answer(h, what, &status, &body, &len);
	pthread_mutex_lock(&h->mu);
	if (h->asked == n && h->answered != n) {
		free(h->body);
		h->body = body;
		h->len = len;
		h->status = status;
		h->answered = n;
		body = NULL;
		pthread_cond_broadcast(&h->cv);
	}
	pthread_mutex_unlock(&h->mu);
	free(body);
}

/* ---- the HTTP side ---- */

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, char *body, size_t len,
                             const char *type)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(
	    len, body, body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	enum MHD_Result rc = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return rc;
}

static enum MHD_Result reply_str(struct MHD_Connection *c, unsigned status, const char *s)
{
	return reply(c, status, strdup(s), strlen(s), "text/plain; charset=utf-8");
}

/* One round trip to the loop thread; 0 with the answer, -1 when the loop did
 * not answer in time or the daemon is stopping. */
static int ask_loop(struct metrics_http *h, enum ask what, unsigned *status, char **body,
                    size_t *len)
{
	struct timespec until;
	uint64_t one = 1;
	int rc = -1;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += METRICS_HTTP_WAIT_MS / 1000;
	until.tv_nsec += (METRICS_HTTP_WAIT_MS % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&h->mu);
	uint64_t n = ++h->asked;
	h->what = what;
	pthread_mutex_unlock(&h->mu);
	if (write(h->efd, &one, sizeof(one)) != (ssize_t)sizeof(one))
		return -1;
	pthread_mutex_lock(&h->mu);
	while (!h->stopping && h->answered != n)
		if (pthread_cond_timedwait(&h->cv, &h->mu, &until) == ETIMEDOUT)
			break;
	if (!h->stopping && h->answered == n) {
		*status = h->status;
		*body = h->body;
		*len = h->len;
		h->body = NULL;
		rc = 0;
	}
	pthread_mutex_unlock(&h->mu);
	return rc;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
	struct metrics_http *h = cls;
	static int first;
	enum ask what;
	unsigned status;
	char *body;
	size_t len;

	if (!*con_cls) { /* headers only so far: answer when the request is whole */
		*con_cls = &first;
		return MHD_YES;
	}
	if (*upload_data_size) { /* a body is not wanted: read past it */
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return reply_str(c, MHD_HTTP_METHOD_NOT_ALLOWED, "GET or HEAD only\n");
	if (strcmp(url, "/metrics") == 0)
		what = ASK_METRICS;
	else if (strcmp(url, "/live") == 0)
		what = ASK_LIVE;
	else if (strcmp(url, "/ready") == 0)
		what = ASK_READY;
	else
		return reply_str(c, MHD_HTTP_NOT_FOUND, "not found: /metrics, /live, /ready\n");
	if (ask_loop(h, what, &status, &body, &len) < 0)
		return reply_str(c, MHD_HTTP_SERVICE_UNAVAILABLE,
		                 "the daemon's loop did not answer in time\n");
	return reply(c, status, body, len,
	             what == ASK_METRICS ? "text/plain; version=0.0.4; charset=utf-8"
	                                 : "text/plain; charset=utf-8");
}

static void on_mhd_log(void *arg, const char *fmt, va_list ap)
{
	char line[512];
	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	log_debug("metrics_listen: %s", line);
}

/* ---- start, stop ---- */

static int open_listener(const char *addr, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int one = 1;

	if (!config_parse_listen(addr, &ss, &sl)) {
		snprintf(err, errlen, "metrics_listen: bad address \"%s\" (want HOST:PORT)", addr);
		return -1;
	}
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		snprintf(err, errlen, "metrics_listen %s: socket: %s", addr, strerror(errno));
		return -1;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    (ss.ss_family == AF_INET6 &&
	     setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0) ||
	    bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, 64) < 0) {
		snprintf(err, errlen, "metrics_listen %s: %s", addr, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

struct metrics_http *metrics_http_start(const char *listen, struct evloop *loop,
                                        metrics_ready_fn ready, void *arg, char *err, size_t errlen)
{
	struct metrics_http *h = calloc(1, sizeof(*h));
	pthread_condattr_t ca;

	if (!h) {
		snprintf(err, errlen, "metrics_listen: out of memory");
		return NULL;
	}
	h->loop = loop;
	h->ready = ready;
	h->arg = arg;
	h->efd = -1;
	pthread_mutex_init(&h->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&h->cv, &ca);
	pthread_condattr_destroy(&ca);
	h->lfd = open_listener(listen, err, errlen);
	if (h->lfd < 0)
		goto fail;
	h->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (h->efd < 0 || evloop_add_fd(loop, h->efd, EV_READ, on_event, h) < 0) {
		snprintf(err, errlen, "metrics_listen: eventfd: %s", strerror(errno));
		goto fail;
	}
	h->mhd = MHD_start_daemon(
	    MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG, 0, NULL, NULL,
	    on_request, h, MHD_OPTION_LISTEN_SOCKET, h->lfd, MHD_OPTION_CONNECTION_LIMIT,
	    (unsigned)64, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10, MHD_OPTION_EXTERNAL_LOGGER,
	    on_mhd_log, NULL, MHD_OPTION_END);
	if (!h->mhd) {
		snprintf(err, errlen, "metrics_listen %s: libmicrohttpd did not start", listen);
		goto fail;
	}
	log_info("metrics on http://%s/metrics (and /live, /ready)", listen);
	return h;
fail:
	if (h->efd >= 0) {
		evloop_del_fd(loop, h->efd);
		close(h->efd);
	}
	if (h->lfd >= 0)
		close(h->lfd);
	pthread_cond_destroy(&h->cv);
	pthread_mutex_destroy(&h->mu);
	free(h);
	return NULL;
}

void metrics_http_stop(struct metrics_http *h)
{
	if (!h)
		return;
	/* The HTTP thread may wait for this (the loop) thread: let it go. */
	pthread_mutex_lock(&h->mu);
	h->stopping = true;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
	MHD_stop_daemon(h->mhd); /* closes the listening socket too */
	evloop_del_fd(h->loop, h->efd);
	close(h->efd);
	free(h->body);
	pthread_cond_destroy(&h->cv);
	pthread_mutex_destroy(&h->mu);
	free(h);
}
