/*
 * etcd.c - see etcd.h. Two threads, each with its own curl easy handle (kept,
 * so the connection to etcd is reused): the request thread takes the queue in
 * order, the watch thread keeps the stream open. Both hand what they got to
 * the loop through one done list and an eventfd; JSON is parsed on the
 * thread, and the object handed over whole.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include "cluster/etcd.h"

#include <curl/curl.h>
#include <errno.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/evloop.h"
#include "common/log.h"
#include "common/thread.h"

#define MAX_ENDPOINTS 8
/* What a reply body may grow to (a range of the cluster's few keys). */
#define MAX_BODY (4u << 20)
/* The pause before the watch is opened again. */
#define WATCH_RETRY_MS 200

struct item {
	struct item *next;
	struct etcd_reply r;
	char *path, *body; /* requests only */
};

struct etcd {
	struct evloop *l;
	etcd_fn fn;
	void *arg;
	unsigned timeout_ms;
	char ep[MAX_ENDPOINTS][128];
	size_t nep;
	_Atomic size_t cur_ep; /* the endpoint that answered last */

	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
	struct item *queue, **queue_tail;
	struct item *done, **done_tail;
	size_t pending; /* queued + in flight */
	int efd;
	bool req_started, watch_started;
	pthread_t req_tid, watch_tid;

	char *watch_body;
	/* etcd auth (etcd_auth): the name and password, set before any
	 * request; the token (under lock) from /v3/auth/authenticate. */
	char *user, *password;
	char token[512];
	atomic_bool stopping;      /* read by the progress callbacks */
	atomic_bool watch_restart; /* drop the stream now */
};

static void item_free(struct item *it)
{
	if (!it)
		return;
	if (it->r.json)
		json_object_put(it->r.json);
	free(it->path);
	free(it->body);
	free(it);
}

static void deliver(struct etcd *e, struct item *it)
{
	uint64_t one = 1;

	pthread_mutex_lock(&e->lock);
	it->next = NULL;
	*e->done_tail = it;
	e->done_tail = &it->next;
	pthread_mutex_unlock(&e->lock);
	if (write(e->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("etcd: cannot wake the loop: %s", strerror(errno));
}

static void on_efd(struct evloop *l, int fd, unsigned events, void *arg)
{
	struct etcd *e = arg;
	uint64_t v;
	struct item *list;

	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_warn("etcd: eventfd: %s", strerror(errno));
	pthread_mutex_lock(&e->lock);
	list = e->done;
	e->done = NULL;
	e->done_tail = &e->done;
	pthread_mutex_unlock(&e->lock);
	while (list) {
		struct item *next = list->next;
		if (list->r.kind == ETCD_REPLY) {
			pthread_mutex_lock(&e->lock);
			e->pending--;
			pthread_mutex_unlock(&e->lock);
		}
		e->fn(e->arg, &list->r);
		item_free(list);
		list = next;
	}
}

/* ---- curl ---- */

struct buf {
	char *p;
	size_t len, cap;
	bool too_big;
};

static bool buf_add(struct buf *b, const char *data, size_t n)
{
	if (b->len + n + 1 > MAX_BODY) {
		b->too_big = true;
		return false;
	}
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 4096;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p)
			return false;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
	return true;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	return buf_add(arg, data, size * nmemb) ? size * nmemb : 0;
}

static int on_progress_req(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct etcd *e = arg;
	return atomic_load(&e->stopping) ? 1 : 0;
}

static CURL *easy_new(unsigned timeout_ms)
{
	CURL *c = curl_easy_init();

	if (!c)
		return NULL;
	if (curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
	    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)timeout_ms) != CURLE_OK ||
	    curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L) != CURLE_OK ||
	    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L) != CURLE_OK ||
	    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http") != CURLE_OK) {
		curl_easy_cleanup(c);
		return NULL;
	}
	return c;
}

/* An error object of the gateway ({"error": ..., "message": ...}) into err. */
static bool gateway_error(struct json_object *j, char *err, size_t len)
{
	struct json_object *x, *m;

	if (!json_object_is_type(j, json_type_object)) {
		snprintf(err, len, "not a JSON object");
		return true;
	}
	if (!json_object_object_get_ex(j, "error", &x))
		return false;
	if (json_object_is_type(x, json_type_object) && json_object_object_get_ex(x, "message", &m))
		snprintf(err, len, "etcd: %s", json_object_get_string(m));
	else if (json_object_object_get_ex(j, "message", &m))
		snprintf(err, len, "etcd: %s", json_object_get_string(m));
	else
		snprintf(err, len, "etcd: %s", json_object_get_string(x));
	return true;
}

/* ---- auth ---- */

/* Gets a token from endpoint i (/v3/auth/authenticate), kept for every
 * request and the watch. 0, or -1 with err. */
static int authenticate(struct etcd *e, size_t i, char *err, size_t errlen)
{
	struct json_object *body = json_object_new_object(), *j = NULL, *t;
	CURL *c = easy_new(e->timeout_ms);
	struct buf b = {0};
	char url[256];
	long code = 0;
	CURLcode cr;
	int rc = -1;

	err[0] = '\0';
	if (!body || !c) {
		snprintf(err, errlen, "etcd auth: out of memory");
		goto out;
	}
	json_object_object_add(body, "name", json_object_new_string(e->user));
	json_object_object_add(body, "password", json_object_new_string(e->password));
	snprintf(url, sizeof(url), "%s/v3/auth/authenticate", e->ep[i]);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 1L);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_COPYPOSTFIELDS,
	                 json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN));
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)e->timeout_ms);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	cr = curl_easy_perform(c);
	if (cr != CURLE_OK) {
		snprintf(err, errlen, "%s: %s", e->ep[i], curl_easy_strerror(cr));
		goto out;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	j = b.p ? json_tokener_parse(b.p) : NULL;
	if (!j || gateway_error(j, err, errlen) || !json_object_object_get_ex(j, "token", &t) ||
	    !json_object_is_type(t, json_type_string) ||
	    strlen(json_object_get_string(t)) >= sizeof(e->token)) {
		if (!j || !err[0] || code == 200)
			snprintf(err, errlen, "%s: HTTP %ld, no token", e->ep[i], code);
		goto out;
	}
	pthread_mutex_lock(&e->lock);
	snprintf(e->token, sizeof(e->token), "%s", json_object_get_string(t));
	pthread_mutex_unlock(&e->lock);
	rc = 0;
out:
	if (rc < 0 && err[0] && !strstr(err, "auth"))
		snprintf(err + strlen(err), errlen - strlen(err), " (authenticating as %s)",
		         e->user ? e->user : "?");
	json_object_put(j);
	json_object_put(body);
	free(b.p);
	if (c)
		curl_easy_cleanup(c);
	return rc;
}

/* The headers of a request on endpoint i: the token when etcd auth is on
 * (one is got first when none is held). NULL without auth; *fail with err
 * when no token could be got. */
static struct curl_slist *auth_headers(struct etcd *e, size_t i, bool *fail, char *err,
                                       size_t errlen)
{
	char h[sizeof(e->token) + 32];
	struct curl_slist *l;

	*fail = false;
	if (!e->user)
		return NULL;
	pthread_mutex_lock(&e->lock);
	bool have = e->token[0] != '\0';
	pthread_mutex_unlock(&e->lock);
	if (!have && authenticate(e, i, err, errlen) < 0) {
		*fail = true;
		return NULL;
	}
	pthread_mutex_lock(&e->lock);
	snprintf(h, sizeof(h), "Authorization: %s", e->token);
	pthread_mutex_unlock(&e->lock);
	l = curl_slist_append(NULL, h);
	if (!l) {
		snprintf(err, errlen, "etcd auth: out of memory");
		*fail = true;
	}
	return l;
}

/* An answer saying the token is no good (expired, etcd restarted): it is
 * dropped, the next request gets another. */
static bool token_refused(struct etcd *e, const char *err)
{
	if (!e->user || (!strstr(err, "invalid auth token") && !strstr(err, "user name is empty")))
		return false;
	pthread_mutex_lock(&e->lock);
	e->token[0] = '\0';
	pthread_mutex_unlock(&e->lock);
	log_info("etcd: the auth token was refused (%s): authenticating again", err);
	return true;
}

/* One try of a request on endpoint i: true when an HTTP answer came (whatever
 * its status), false when the endpoint could not be reached. */
static bool try_request(struct etcd *e, CURL *c, size_t i, struct item *it)
{
	char url[256];
	struct buf b = {0};
	CURLcode rc;
	long code = 0;
	bool fail;
	struct curl_slist *hdr = auth_headers(e, i, &fail, it->r.error, sizeof(it->r.error));

	if (fail)
		return false;
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
	snprintf(url, sizeof(url), "%s%s", e->ep[i], it->path);
	snprintf(it->r.endpoint, sizeof(it->r.endpoint), "%s", e->ep[i]);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, it->body);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)e->timeout_ms);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress_req);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, e);
	rc = curl_easy_perform(c);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(hdr);
	if (rc != CURLE_OK) {
		snprintf(it->r.error, sizeof(it->r.error), "%s: %s", e->ep[i],
		         b.too_big ? "answer too large" : curl_easy_strerror(rc));
		free(b.p);
		return false;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	it->r.http = code;
	it->r.json = b.p ? json_tokener_parse(b.p) : NULL;
	if (!it->r.json)
		snprintf(it->r.error, sizeof(it->r.error), "%s: HTTP %ld, %s", e->ep[i], code,
		         b.p ? "not JSON" : "no body");
	else if (!gateway_error(it->r.json, it->r.error, sizeof(it->r.error)) && code == 200)
		it->r.ok = true;
	else if (!it->r.error[0])
		snprintf(it->r.error, sizeof(it->r.error), "%s: HTTP %ld", e->ep[i], code);
	free(b.p);
	return true;
}

static void *req_thread(void *arg)
{
	struct etcd *e = arg;
	CURL *c = easy_new(e->timeout_ms);

	pthread_mutex_lock(&e->lock);
	for (;;) {
		while (!e->stop && !e->queue)
			pthread_cond_wait(&e->cond, &e->lock);
		if (e->stop)
			break;
		struct item *it = e->queue;
		e->queue = it->next;
		if (!e->queue)
			e->queue_tail = &e->queue;
		pthread_mutex_unlock(&e->lock);

		it->r.sent_ms = mono_ms();
		if (!c) {
			snprintf(it->r.error, sizeof(it->r.error), "no curl handle");
		} else {
			size_t first = atomic_load(&e->cur_ep);
			for (size_t k = 0; k < e->nep && !atomic_load(&e->stopping); k++) {
				size_t i = (first + k) % e->nep;
				if (try_request(e, c, i, it)) {
					/* a token refused: once more with a new one */
					if (!it->r.ok && token_refused(e, it->r.error)) {
						json_object_put(it->r.json);
						it->r.json = NULL;
						it->r.error[0] = '\0';
						it->r.http = 0;
						if (!try_request(e, c, i, it))
							continue;
					}
					atomic_store(&e->cur_ep, i);
					break;
				}
			}
		}
		deliver(e, it);
		pthread_mutex_lock(&e->lock);
	}
	pthread_mutex_unlock(&e->lock);
	if (c)
		curl_easy_cleanup(c);
	return NULL;
}

/* ---- the watch ---- */

struct wstate {
	struct etcd *e;
	struct buf line;
	bool created;
	uint64_t started_ms;
	size_t ep;
};

static struct item *item_new(enum etcd_kind kind)
{
	struct item *it = calloc(1, sizeof(*it));
	if (it)
		it->r.kind = kind;
	return it;
}

/* One line of the stream: one JSON object. */
static void watch_line(struct wstate *w, const char *s)
{
	struct json_object *j = json_tokener_parse(s), *res, *x;
	struct item *it;
	char err[192];

	if (!j)
		return;
	if (gateway_error(j, err, sizeof(err)) || !json_object_object_get_ex(j, "result", &res)) {
		json_object_put(j);
		return; /* the stream ends after it: said as WATCH_DOWN */
	}
	if (json_object_object_get_ex(res, "created", &x) && json_object_get_boolean(x)) {
		w->created = true;
		if ((it = item_new(ETCD_WATCH_UP))) {
			it->r.ok = true;
			snprintf(it->r.endpoint, sizeof(it->r.endpoint), "%s", w->e->ep[w->ep]);
			deliver(w->e, it);
		}
	}
	if (json_object_object_get_ex(res, "events", &x) && (it = item_new(ETCD_WATCH_EVENT))) {
		it->r.ok = true;
		it->r.json = json_object_get(res);
		snprintf(it->r.endpoint, sizeof(it->r.endpoint), "%s", w->e->ep[w->ep]);
		deliver(w->e, it);
	}
	json_object_put(j);
}

static size_t on_watch_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct wstate *w = arg;
	size_t n = size * nmemb;

	for (size_t i = 0; i < n; i++) {
		if (data[i] != '\n') {
			if (!buf_add(&w->line, data + i, 1))
				return 0;
			continue;
		}
		if (w->line.len)
			watch_line(w, w->line.p);
		w->line.len = 0;
	}
	return n;
}

static int on_progress_watch(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct wstate *w = arg;
	if (atomic_load(&w->e->stopping) || atomic_exchange(&w->e->watch_restart, false))
		return 1;
	/* Connected (even to a stopped member's socket) but never created. */
	return !w->created && mono_ms() - w->started_ms > w->e->timeout_ms;
}

/* Sleeps ms unless etcd_free() wakes it; false when stopping. */
static bool pause_ms(struct etcd *e, unsigned ms)
{
	struct timespec ts;
	bool stop;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	ts.tv_sec += ms / 1000 + ts.tv_nsec / 1000000000;
	ts.tv_nsec %= 1000000000;
	pthread_mutex_lock(&e->lock);
	while (!e->stop && pthread_cond_timedwait(&e->cond, &e->lock, &ts) == 0)
		;
	stop = e->stop;
	pthread_mutex_unlock(&e->lock);
	return !stop;
}

static void *watch_thread(void *arg)
{
	struct etcd *e = arg;
	CURL *c = easy_new(e->timeout_ms);
	struct wstate w = {.e = e};
	char url[256];

	if (!c) {
		struct item *it = item_new(ETCD_WATCH_DOWN);
		if (it) {
			snprintf(it->r.error, sizeof(it->r.error), "no curl handle for the watch");
			deliver(e, it);
		}
		return NULL;
	}
	w.ep = atomic_load(&e->cur_ep);
	while (!atomic_load(&e->stopping)) {
		CURLcode rc;
		struct item *it;

		w.created = false;
		w.line.len = 0;
		w.started_ms = mono_ms();
		atomic_store(&e->watch_restart, false);
		char aerr[192] = "";
		bool afail;
		struct curl_slist *hdr = auth_headers(e, w.ep, &afail, aerr, sizeof(aerr));
		if (afail) {
			if ((it = item_new(ETCD_WATCH_DOWN))) {
				snprintf(it->r.endpoint, sizeof(it->r.endpoint), "%s", e->ep[w.ep]);
				snprintf(it->r.error, sizeof(it->r.error), "%s", aerr);
				deliver(e, it);
			}
			w.ep = (w.ep + 1) % e->nep;
			if (!pause_ms(e, WATCH_RETRY_MS))
				break;
			continue;
		}
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
		snprintf(url, sizeof(url), "%s/v3/watch", e->ep[w.ep]);
		curl_easy_setopt(c, CURLOPT_URL, url);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, e->watch_body);
		curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 0L);
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_watch_body);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, &w);
		curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress_watch);
		curl_easy_setopt(c, CURLOPT_XFERINFODATA, &w);
		rc = curl_easy_perform(c);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
		curl_slist_free_all(hdr);
		if (atomic_load(&e->stopping))
			break;
		/* a watch refused for its token: the next try gets a new one */
		if (!w.created && e->user) {
			pthread_mutex_lock(&e->lock);
			e->token[0] = '\0';
			pthread_mutex_unlock(&e->lock);
		}
		if ((it = item_new(ETCD_WATCH_DOWN))) {
			snprintf(it->r.endpoint, sizeof(it->r.endpoint), "%s", e->ep[w.ep]);
			snprintf(it->r.error, sizeof(it->r.error), "%s: %s", e->ep[w.ep],
			         rc == CURLE_OK ? "the watch stream ended"
			         : rc == CURLE_ABORTED_BY_CALLBACK
			             ? (w.created ? "watch dropped" : "watch not created in time")
			             : curl_easy_strerror(rc));
			deliver(e, it);
		}
		/* The endpoint that answers requests now, else the next. */
		size_t cur = atomic_load(&e->cur_ep);
		w.ep = cur != w.ep ? cur : (w.ep + 1) % e->nep;
		if (!pause_ms(e, WATCH_RETRY_MS))
			break;
	}
	free(w.line.p);
	curl_easy_cleanup(c);
	return NULL;
}

/* ---- public ---- */

static int parse_endpoints(struct etcd *e, const char *list, char *err, size_t errlen)
{
	const char *s = list;

	while (*s) {
		size_t n;
		while (*s == ',' || *s == ' ' || *s == '\t')
			s++;
		if (!*s)
			break;
		n = strcspn(s, ", \t");
		if (e->nep == MAX_ENDPOINTS) {
			snprintf(err, errlen, "etcd: more than %d endpoints", MAX_ENDPOINTS);
			return -1;
		}
		if (n >= sizeof(e->ep[0]) || strncmp(s, "http://", 7) != 0 || n <= 7) {
			snprintf(err, errlen, "etcd: bad endpoint \"%.*s\" (want http://HOST:PORT)",
			         (int)(n > 100 ? 100 : n), s);
			return -1;
		}
		memcpy(e->ep[e->nep], s, n);
		e->ep[e->nep][n] = '\0';
		while (n > 8 && e->ep[e->nep][n - 1] == '/')
			e->ep[e->nep][--n] = '\0';
		e->nep++;
		s += n;
	}
	if (!e->nep) {
		snprintf(err, errlen, "etcd: no endpoint given");
		return -1;
	}
	return 0;
}

static CURLcode init_rc;
static void curl_init_once(void)
{
	init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

struct etcd *etcd_new(struct evloop *l, const char *endpoints, unsigned timeout_ms, etcd_fn fn,
                      void *arg, char *err, size_t errlen)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct etcd *e = calloc(1, sizeof(*e));
	int rc;
	if (!e) {
		snprintf(err, errlen, "etcd: out of memory");
		return NULL;
	}
	e->l = l;
	e->fn = fn;
	e->arg = arg;
	e->timeout_ms = timeout_ms ? timeout_ms : 1000;
	e->efd = -1;
	e->queue_tail = &e->queue;
	e->done_tail = &e->done;
	pthread_mutex_init(&e->lock, NULL);
	pthread_cond_init(&e->cond, NULL);
	if (parse_endpoints(e, endpoints, err, errlen) < 0)
		goto fail;
	pthread_once(&once, curl_init_once);
	if (init_rc != CURLE_OK) {
		snprintf(err, errlen, "etcd: curl_global_init: %s", curl_easy_strerror(init_rc));
		goto fail;
	}
	e->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (e->efd < 0 || evloop_add_fd(l, e->efd, EV_READ, on_efd, e) < 0) {
		snprintf(err, errlen, "etcd: eventfd: %s", strerror(errno));
		goto fail;
	}
	rc = pthread_create(&e->req_tid, NULL, req_thread, e);
	if (rc != 0) {
		snprintf(err, errlen, "etcd: cannot start a thread: %s", strerror(rc));
		goto fail;
	}
	e->req_started = true;
	thread_name(e->req_tid, "mysteer-etcd");
	return e;
fail:
	etcd_free(e);
	return NULL;
}

void etcd_free(struct etcd *e)
{
	struct item *it;

	if (!e)
		return;
	atomic_store(&e->stopping, true);
	pthread_mutex_lock(&e->lock);
	e->stop = true;
	pthread_cond_broadcast(&e->cond);
	pthread_mutex_unlock(&e->lock);
	if (e->req_started)
		pthread_join(e->req_tid, NULL);
	if (e->watch_started)
		pthread_join(e->watch_tid, NULL);
	if (e->efd >= 0) {
		evloop_del_fd(e->l, e->efd);
		close(e->efd);
	}
	while ((it = e->queue)) {
		e->queue = it->next;
		item_free(it);
	}
	while ((it = e->done)) {
		e->done = it->next;
		item_free(it);
	}
	free(e->watch_body);
	free(e->user);
	if (e->password)
		explicit_bzero(e->password, strlen(e->password));
	free(e->password);
	explicit_bzero(e->token, sizeof(e->token));
	pthread_cond_destroy(&e->cond);
	pthread_mutex_destroy(&e->lock);
	free(e);
}

int etcd_auth(struct etcd *e, const char *user, const char *password)
{
	free(e->user);
	free(e->password);
	e->user = strdup(user);
	e->password = strdup(password ? password : "");
	return e->user && e->password ? 0 : -1;
}

int etcd_request(struct etcd *e, uint64_t tag, const char *path, const char *body)
{
	struct item *it = item_new(ETCD_REPLY);

	if (!it)
		return -1;
	it->r.tag = tag;
	it->path = strdup(path);
	it->body = strdup(body);
	if (!it->path || !it->body) {
		item_free(it);
		return -1;
	}
	pthread_mutex_lock(&e->lock);
	*e->queue_tail = it;
	e->queue_tail = &it->next;
	e->pending++;
	pthread_cond_broadcast(&e->cond);
	pthread_mutex_unlock(&e->lock);
	return 0;
}

int etcd_post_now(struct etcd *e, const char *path, const char *body, unsigned timeout_ms,
                  char *err, size_t errlen)
{
	size_t first = atomic_load(&e->cur_ep);
	CURL *c = easy_new(timeout_ms);
	int rc = -1;

	if (!c) {
		snprintf(err, errlen, "no curl handle");
		return -1;
	}
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 1L);
	for (size_t k = 0; k < e->nep; k++) {
		size_t i = (first + k) % e->nep;
		char url[256];
		struct buf b = {0};
		long code = 0;
		CURLcode cr;

		bool afail;
		struct curl_slist *hdr = auth_headers(e, i, &afail, err, errlen);
		if (afail)
			continue;
		snprintf(url, sizeof(url), "%s%s", e->ep[i], path);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
		curl_easy_setopt(c, CURLOPT_URL, url);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
		cr = curl_easy_perform(c);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
		curl_slist_free_all(hdr);
		if (cr != CURLE_OK) {
			snprintf(err, errlen, "%s: %s", e->ep[i], curl_easy_strerror(cr));
			free(b.p);
			continue;
		}
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
		struct json_object *j = b.p ? json_tokener_parse(b.p) : NULL;
		if (j && code == 200 && !gateway_error(j, err, errlen))
			rc = 0;
		else if (!j || code != 200)
			snprintf(err, errlen, "%s: HTTP %ld", e->ep[i], code);
		json_object_put(j);
		free(b.p);
		break;
	}
	curl_easy_cleanup(c);
	return rc;
}

size_t etcd_pending(struct etcd *e)
{
	size_t n;

	pthread_mutex_lock(&e->lock);
	n = e->pending;
	pthread_mutex_unlock(&e->lock);
	return n;
}

int etcd_watch(struct etcd *e, const char *key, const char *range_end)
{
	char *k = NULL, *r = NULL;
	size_t len;
	int rc;

	if (e->watch_started)
		return -1;
	k = etcd_b64(key, strlen(key));
	r = etcd_b64(range_end, strlen(range_end));
	if (!k || !r)
		goto oom;
	len = strlen(k) + strlen(r) + 96;
	e->watch_body = malloc(len);
	if (!e->watch_body)
		goto oom;
	if (range_end[0])
		snprintf(e->watch_body, len,
		         "{\"create_request\":{\"key\":\"%s\",\"range_end\":\"%s\"}}", k, r);
	else
		snprintf(e->watch_body, len, "{\"create_request\":{\"key\":\"%s\"}}", k);
	free(k);
	free(r);
	rc = pthread_create(&e->watch_tid, NULL, watch_thread, e);
	if (rc != 0) {
		log_error("etcd: cannot start the watch thread: %s", strerror(rc));
		return -1;
	}
	e->watch_started = true;
	thread_name(e->watch_tid, "mysteer-watch");
	return 0;
oom:
	free(k);
	free(r);
	return -1;
}

void etcd_watch_restart(struct etcd *e)
{
	atomic_store(&e->watch_restart, true);
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *etcd_b64(const void *in, size_t n)
{
	const unsigned char *s = in;
	char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)s[i] << 16 | (i + 1 < n ? (unsigned)s[i + 1] << 8 : 0) |
		             (i + 2 < n ? s[i + 2] : 0);
		*o++ = B64[v >> 18 & 63];
		*o++ = B64[v >> 12 & 63];
		*o++ = i + 1 < n ? B64[v >> 6 & 63] : '=';
		*o++ = i + 2 < n ? B64[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

int etcd_unb64(const char *in, char *out, size_t cap)
{
	unsigned v = 0;
	int bits = 0;
	size_t n = 0;

	for (const char *p = in; *p && *p != '='; p++) {
		const char *d = strchr(B64, *p);
		if (!d || !*p)
			return -1;
		v = (v << 6) | (unsigned)(d - B64);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (n + 1 >= cap)
				return -1;
			out[n++] = (char)(v >> bits & 0xff);
		}
	}
	if (cap == 0)
		return -1;
	out[n] = '\0';
	return (int)n;
}

void etcd_prefix_end(const char *prefix, char *out, size_t cap)
{
	size_t n = strlen(prefix);

	snprintf(out, cap, "%s", prefix);
	if (n && n < cap)
		out[n - 1] = (char)(out[n - 1] + 1);
}
