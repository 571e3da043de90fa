/*
 * engine.c - the 6450 proxy engine: worker threads with one epoll loop and one
 * SO_REUSEPORT listener each, their periodic sweep, start, reload and stop,
 * and the figures mysteerd reads. The sessions (client.c), backend
 * connections (backend.c, answer.c), routing (route.c), pooling (pool.c,
 * wait.c, mux.c) and prepared statements (stmt.c) live in their own files;
 * engine_int.h has their shared structures.
 *
 * Everything of a session lives on one worker thread; the only shared state is
 * the read-only user table, the connection counters (atomics, per backend: the
 * pool_max_per_backend cap is reserved in be_active), the workers' wake
 * eventfds, the waits' tickets and the topology snapshots. A session that finds
 * its backend at the cap waits in its worker's queue with a ticket of the whole
 * proxy (wait_enqueue): a connection of that backend parked or closed goes to
 * the oldest ticket waiting for it on any worker, until the bound runs out.
 */
#define _GNU_SOURCE
#include "proxy/engine_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "common/thread.h"
#include "proxy/tls.h"

/* the largest rsa_public_key file taken (a 16384-bit key's PEM is 2.8 kB) */
#define RSA_PEM_MAX 16384

static void reap(struct worker *w)
{
	while (w->dead_bconns) {
		struct bconn *b = w->dead_bconns;
		w->dead_bconns = b->next_dead;
		buf_free(&b->in);
		buf_free(&b->out);
		buf_free(&b->lout);
		if (b->nbst && b->backend_id < PROXY_MAX_IDS)
			atomic_fetch_sub(&w->e->be_prepared[b->backend_id], (int)b->nbst);
		free(b->bst);
		free(b);
	}
	while (w->dead_clients) {
		struct client *c = w->dead_clients;
		w->dead_clients = c->next_dead;
		hist_clear(c);
		free(c->hist);
		atomic_fetch_sub(&w->e->client_buf, c->buf_charged);
		while (c->stmts)
			stmt_free(c, c->stmts);
		buf_free(&c->scratch);
		buf_free(&c->in);
		buf_free(&c->out);
		buf_free(&c->cmd);
		buf_free(&c->sw_begin);
		buf_free(&c->rp_log);
		/* the session's SHA1(password), with which it logs in to backends */
		explicit_bzero(c->stage1, sizeof(c->stage1));
		client_chu_free(c);
		free(c);
	}
}

/* The pool's and the waits' periodic work, and every client's timeouts. */
static void sweep(struct worker *w)
{
	uint64_t now = now_ms();

	if (now - w->last_sweep < SWEEP_MS)
		return;
	w->last_sweep = now;
	pool_sweep(w, now);
	/* waits run out; the rest try again (a wake from another worker is
	 * not needed for progress, only for speed) */
	wait_expire(w, now);
	if (w->wait_head)
		wait_run(w);
	/* waits for a writer: run out, or try again (a fenced writer's fence
	 * lapses; a topology's wake is for speed) */
	sw_expire(w, now);
	if (w->sw_head)
		sw_run(w);
	wait_yield(w);
	pool_warm(w);
	client_accept_resume(w);
	engine_worker_users(w); /* the ghosts follow a reload without waiting for a login */
	/* sessions held on a writer that is one no more end now, not at their
	 * next statement (which route_cmd would refuse) */
	const struct topology *t = topo_current();
	for (struct client *c = w->clients, *next; c; c = next) {
		next = c->next;
		if (t && c->st == C_IDLE && route_demoted(c, t, false))
			continue;
		if (t && c->st == C_BUSY && sw_cut_demoted(c, t))
			continue;
		client_timeouts(c, now);
	}
	if (t)
		topo_put(t);
}

/* How long epoll may sleep: until the next sweep, or until the oldest wait
 * of this worker runs out (the queue is in arrival order and the bound is one
 * constant, so its head is the first to expire), so that a wait ends at its
 * bound rather than at the sweep after it. */
static int loop_timeout(const struct worker *w)
{
	uint64_t now = now_ms(), due = w->last_sweep + SWEEP_MS;

	if (w->wait_head && w->wait_head->wait_deadline < due)
		due = w->wait_head->wait_deadline;
	/* in arrival order, with one bound (a reload changes it for new waits) */
	if (w->sw_head && w->sw_head->sw_deadline < due)
		due = w->sw_head->sw_deadline;
	if (due <= now)
		return 0;
	return due - now < SWEEP_MS ? (int)(due - now) : SWEEP_MS;
}

/* One batch of events (waiting at most timeout_ms), then what follows every
 * batch: the waits served, objects freed, the sweep when it is due. */
void engine_worker_once(struct worker *w, int timeout_ms)
{
	struct epoll_event evs[128];
	int n = epoll_wait(w->ep, evs, 128, timeout_ms);

	if (n < 0 && errno != EINTR) {
		log_error("proxy: epoll_wait: %s", strerror(errno));
		w->stop = true;
		return;
	}
	for (int i = 0; i < n; i++) {
		enum ev_type *t = evs[i].data.ptr;
		uint32_t ev = evs[i].events;
		uint64_t v;

		switch (*t) {
		case EV_LISTEN:
			client_accept(w, (struct listener *)t);
			break;
		case EV_WAKE:
			if (read(w->wakefd, &v, sizeof(v)) < 0)
				log_debug("proxy: wake: %s", strerror(errno));
			w->kick = true; /* another worker freed a slot, or waits */
			ops_sess_kills(w);
			break;
		case EV_CLIENT: {
			struct client *c = (struct client *)t;
			if (!c->dead)
				client_event(c, ev);
			break;
		}
		case EV_BACKEND: {
			struct bconn *b = (struct bconn *)t;
			if (!b->dead && b->pooled)
				pool_event(b, ev);
			else if (!b->dead)
				bconn_event(b, ev);
			break;
		}
		}
	}
	if (w->kick && !w->stop) {
		w->kick = false;
		if (w->wait_head)
			wait_run(w);
		wait_yield(w);
	}
	if (w->wait_head && now_ms() >= w->wait_head->wait_deadline)
		wait_expire(w, now_ms());
	/* a topology with a writer was published: the waits for one go on */
	if (atomic_exchange(&w->sw_kick, false) && !w->stop &&
	    (w->sw_head || atomic_load(&w->sw_cut)))
		sw_run(w);
	if (w->sw_head && now_ms() >= w->sw_head->sw_deadline)
		sw_expire(w, now_ms());
	reap(w);
	sweep(w);
}

/* Every session and connection of the worker closed and freed. */
static void worker_drain(struct worker *w)
{
	while (w->clients)
		client_close(w->clients);
	while (w->pool)
		bconn_free(w->pool);
	while (w->warming)
		bconn_free(w->warming);
	reap(w);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	sigset_t pipe;

	/* OpenSSL writes a client's socket with write(2): a client gone is
	 * EPIPE for this thread, not a SIGPIPE for the process */
	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe, NULL);
	while (!w->stop)
		engine_worker_once(w, loop_timeout(w));
	worker_drain(w);
	return NULL;
}

/* A listening socket on addr (its port replaced by port). An IPv6 one takes
 * IPv6 alone: "::" and "0.0.0.0" are two entries of [proxy] bind. */
static int listen_on(const struct sockaddr_storage *addr, uint16_t port, char *err, size_t errlen)
{
	struct sockaddr_storage ss = *addr;
	socklen_t sl;
	int fd, one = 1;
	char text[INET6_ADDRSTRLEN] = "?";

	if (ss.ss_family == AF_INET) {
		((struct sockaddr_in *)&ss)->sin_port = htons(port);
		sl = sizeof(struct sockaddr_in);
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, text, sizeof(text));
	} else {
		((struct sockaddr_in6 *)&ss)->sin6_port = htons(port);
		sl = sizeof(struct sockaddr_in6);
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, text, sizeof(text));
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0 ||
	    /* accepted clients inherit it: no setsockopt per connection */
	    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0 ||
	    (ss.ss_family == AF_INET6 &&
	     setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0) ||
	    bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, 4096) < 0) {
		int e = errno;

		snprintf(err, errlen, "proxy: listen on [%s]:%u ([proxy] bind): %s", text, port,
		         strerror(e));
		if (fd >= 0)
			close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* The [proxy] bind addresses that this host can listen on: an IPv6 one on a
 * host without IPv6 is left out with a warning (the default lists ::1), as
 * long as another one remains. Probed once, before the workers. */
static int usable_binds(const struct config *cfg, uint16_t port, bool *use, char *err,
                        size_t errlen)
{
	int n = 0;

	for (size_t i = 0; i < cfg->nbinds; i++) {
		int fd = listen_on(&cfg->binds[i], port, err, errlen);

		use[i] = fd >= 0;
		if (fd >= 0) {
			close(fd);
			n++;
		} else if (cfg->binds[i].ss_family == AF_INET6 && errno == EAFNOSUPPORT) {
			log_warn("%s: left out", err);
		} else {
			return -1;
		}
	}
	if (!n)
		return -1;
	err[0] = '\0';
	return 0;
}

/*
 * The users table of this worker, taken up anew after a reload: new logins
 * check against it at once; sessions already in keep what they have (their
 * stage1). The ghosts are made again for the new users (warm logins in
 * flight are dropped: the next sweep starts them again), keeping what they
 * learnt of their clients' capabilities.
 */
const struct user_table *engine_worker_users(struct worker *w)
{
	struct proxy_engine *e = w->e;
	uint64_t gen = atomic_load(&e->users_gen);

	if (gen == w->users_gen)
		return w->users;
	pthread_mutex_lock(&e->users_mu);
	users_put(w->users);
	w->users = users_ref(e->users);
	w->users_gen = atomic_load(&e->users_gen);
	pthread_mutex_unlock(&e->users_mu);
	if (pool_ghosts_renew(w) < 0)
		log_warn("proxy: out of memory: no warm connections for the reloaded users");
	return w->users;
}

struct ssl_st *engine_tls_new(struct proxy_engine *e, int fd)
{
	struct ssl_st *s = NULL;

	pthread_mutex_lock(&e->tls_mu);
	if (e->tls_ctx)
		s = tls_new(e->tls_ctx, fd);
	pthread_mutex_unlock(&e->tls_mu);
	return s;
}

bool engine_tls_on(struct proxy_engine *e)
{
	bool on;

	pthread_mutex_lock(&e->tls_mu);
	on = e->tls_ctx != NULL;
	pthread_mutex_unlock(&e->tls_mu);
	return on;
}

struct ssl_st *engine_backend_tls(struct proxy_engine *e, const struct topo_backend *be, int fd,
                                  bool *failed)
{
	struct ssl_st *s = NULL;

	*failed = false;
	pthread_mutex_lock(&e->tls_mu);
	for (size_t i = 0; i < e->nbe_conf; i++) {
		const struct be_conf *bc = &e->be_conf[i];

		if (strcmp(bc->name, be->name) != 0 || bc->tls == BACKEND_TLS_OFF)
			continue;
		s = tls_client_new(bc->ctx, fd, bc->tls == BACKEND_TLS_VERIFY ? be->host : NULL);
		*failed = s == NULL;
		break;
	}
	pthread_mutex_unlock(&e->tls_mu);
	return s;
}

bool engine_backend_pp(struct proxy_engine *e, const struct topo_backend *be)
{
	bool pp = false;

	pthread_mutex_lock(&e->tls_mu);
	for (size_t i = 0; i < e->nbe_conf; i++)
		if (!strcmp(e->be_conf[i].name, be->name)) {
			pp = e->be_conf[i].pp;
			break;
		}
	pthread_mutex_unlock(&e->tls_mu);
	return pp;
}

static void be_conf_free(struct be_conf *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		tls_ctx_free(v[i].ctx);
	free(v);
}

/* The [backend:] settings of cfg, or -1 with err said. */
static int be_conf_make(const struct config *cfg, struct be_conf **out, size_t *nout, char *err,
                        size_t errlen)
{
	struct be_conf *v = calloc(cfg->nbackends ? cfg->nbackends : 1, sizeof(*v));

	if (!v) {
		snprintf(err, errlen, "proxy: out of memory");
		return -1;
	}
	for (size_t i = 0; i < cfg->nbackends; i++) {
		const struct config_backend *cb = &cfg->backends[i];

		snprintf(v[i].name, sizeof(v[i].name), "%s", cb->name);
		v[i].tls = cb->tls;
		v[i].pp = cb->proxy_protocol;
		if (cb->tls == BACKEND_TLS_OFF)
			continue;
		v[i].ctx = tls_client_ctx_new(cb->tls == BACKEND_TLS_VERIFY ? cb->tls_ca : NULL,
		                              err, errlen);
		if (!v[i].ctx) {
			be_conf_free(v, i);
			return -1;
		}
	}
	*out = v;
	*nout = cfg->nbackends;
	return 0;
}

/* The TLS contexts of cfg (6450's server one, the backends' client ones)
 * replace those in use (sessions and connections keep theirs). A context
 * that cannot be made leaves the old ones, said in err. */
static int tls_apply(struct proxy_engine *e, const struct config *cfg, char *err, size_t errlen)
{
	struct ssl_ctx_st *ctx = tls_ctx_new(cfg, err, errlen), *old;
	struct be_conf *bv, *old_bv;
	size_t nbv, old_n;

	if (!ctx && err[0])
		return -1;
	if (be_conf_make(cfg, &bv, &nbv, err, errlen) < 0) {
		tls_ctx_free(ctx);
		return -1;
	}
	pthread_mutex_lock(&e->tls_mu);
	old = e->tls_ctx;
	e->tls_ctx = ctx;
	old_bv = e->be_conf;
	old_n = e->nbe_conf;
	e->be_conf = bv;
	e->nbe_conf = nbv;
	pthread_mutex_unlock(&e->tls_mu);
	tls_ctx_free(old);
	be_conf_free(old_bv, old_n);
	atomic_store(&e->require_tls, ctx && cfg->require_secure_transport);
	return 0;
}

struct evp_pkey_st *engine_rsa_key(struct proxy_engine *e)
{
	EVP_PKEY *k;

	pthread_mutex_lock(&e->tls_mu);
	k = e->rsa_key;
	if (k && EVP_PKEY_up_ref(k) != 1)
		k = NULL;
	pthread_mutex_unlock(&e->tls_mu);
	return k;
}

int engine_rsa_pem_packet(struct proxy_engine *e, uint8_t **pkt)
{
	int n = -1;

	*pkt = NULL;
	pthread_mutex_lock(&e->tls_mu);
	if (e->rsa_pem && (*pkt = malloc(e->rsa_pem_len + 1)))
		n = more_data_build(*pkt, e->rsa_pem_len + 1, e->rsa_pem, e->rsa_pem_len);
	pthread_mutex_unlock(&e->tls_mu);
	return n;
}

/* The RSA pair of cfg replaces the one in use; one that cannot be read
 * leaves the old one, said in err (the config's checks make that rare: a
 * file changed between them and now). */
static int rsa_apply(struct proxy_engine *e, const struct config *cfg, char *err, size_t errlen)
{
	EVP_PKEY *k = NULL, *old_k;
	uint8_t *pem = NULL, *old_pem;
	size_t len = 0;
	FILE *f;

	atomic_store(&e->sha2_default, cfg->default_auth_plugin == AUTH_CACHING_SHA2);
	if (cfg->rsa_private_key[0]) {
		if ((f = fopen(cfg->rsa_private_key, "re"))) {
			k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
			fclose(f);
		}
		if ((f = fopen(cfg->rsa_public_key, "re"))) {
			pem = malloc(RSA_PEM_MAX);
			len = pem ? fread(pem, 1, RSA_PEM_MAX, f) : 0;
			fclose(f);
		}
		ERR_clear_error();
		if (!k || !pem || len == 0 || len == RSA_PEM_MAX) {
			snprintf(err, errlen,
			         "proxy: rsa_private_key %s / rsa_public_key %s: cannot load",
			         cfg->rsa_private_key, cfg->rsa_public_key);
			EVP_PKEY_free(k);
			free(pem);
			return -1;
		}
	}
	pthread_mutex_lock(&e->tls_mu);
	old_k = e->rsa_key;
	old_pem = e->rsa_pem;
	e->rsa_key = k;
	e->rsa_pem = pem;
	e->rsa_pem_len = len;
	pthread_mutex_unlock(&e->tls_mu);
	EVP_PKEY_free(old_k);
	free(old_pem);
	return 0;
}

/* The keys reload applies at once. */
static void apply_settings(struct proxy_engine *e, const struct config *cfg)
{
	ryw_apply(e, cfg);
	atomic_store(&e->pool_max, cfg->pool_max_per_backend);
	atomic_store(&e->pool_idle_ms, cfg->pool_idle_timeout_ms);
	atomic_store(&e->pool_min_idle, cfg->pool_min_idle);
	atomic_store(&e->trust_routines, cfg->trust_routine_characteristics);
	atomic_store(&e->local_infile, cfg->local_infile);
	pthread_mutex_lock(&e->sess_mu);
	snprintf(e->kill_any, sizeof(e->kill_any), "%s", cfg->kill_any_user);
	pthread_mutex_unlock(&e->sess_mu);
	atomic_store(&e->least_conn, cfg->reader_policy == READER_POLICY_LEAST_CONN);
	atomic_store(&e->client_packet_ms, cfg->client_packet_timeout_ms);
	atomic_store(&e->client_idle_s, cfg->client_idle_timeout_s);
	atomic_store(&e->max_client_buf, cfg->max_client_buffer_bytes);
	atomic_store(&e->max_hist, cfg->max_session_history);
	atomic_store(&e->max_session_bytes, cfg->max_session_bytes);
	atomic_store(&e->sw_ms, cfg->switchover_buffer_ms);
	atomic_store(&e->rp_enabled, cfg->transaction_replay);
	atomic_store(&e->rp_max, cfg->transaction_replay_max_size);
}

/* The settings, and the [user:...] sections: new logins check against the
 * new table (engine_worker_users), sessions already in stay. */
void proxy_engine_reload(struct proxy_engine *e, const struct config *cfg)
{
	struct user_table *t = users_new(cfg), *old;
	char diff[512];

	char tls_err[512];

	apply_settings(e, cfg);
	if (tls_apply(e, cfg, tls_err, sizeof(tls_err)) < 0)
		log_error("%s: TLS stays as it was", tls_err);
	else if (cfg->tls_cert[0])
		log_info("proxy: TLS certificate loaded from %s", cfg->tls_cert);
	if (rsa_apply(e, cfg, tls_err, sizeof(tls_err)) < 0)
		log_error("%s: the RSA keys stay as they were", tls_err);
	if (!t) {
		log_error("proxy: reload: out of memory: the users stay as they were");
		return;
	}
	pthread_mutex_lock(&e->users_mu);
	old = e->users;
	users_diff(old, t, diff, sizeof(diff));
	e->users = t;
	atomic_fetch_add(&e->users_gen, 1);
	pthread_mutex_unlock(&e->users_mu);
	users_put(old);
	if (diff[0])
		log_info("proxy: users reloaded: %s", diff);
}

void proxy_engine_stop(struct proxy_engine *e)
{
	uint64_t one = 1;

	if (!e)
		return;
	if (e->sw_subscribed)
		topo_unsubscribe(sw_topology, e);
	for (int i = 0; i < e->nworkers; i++) {
		struct worker *w = &e->workers[i];
		if (!w->started)
			continue;
		w->stop = true;
		if (write(w->wakefd, &one, sizeof(one)) < 0)
			log_warn("proxy: waking a worker: %s", strerror(errno));
		pthread_join(w->th, NULL);
	}
	rt_loader_stop(e->routines);
	for (int i = 0; i < e->nworkers; i++) {
		struct worker *w = &e->workers[i];
		rt_snap_put(w->rt);
		pool_ghosts_free(w);
		users_put(w->users);
		for (int j = 0; j < w->nls; j++)
			close(w->ls[j].fd);
		if (w->wakefd >= 0)
			close(w->wakefd);
		if (w->ep >= 0)
			close(w->ep);
	}
	free(e->workers);
	users_put(e->users);
	pthread_mutex_destroy(&e->users_mu);
	tls_ctx_free(e->tls_ctx);
	EVP_PKEY_free(e->rsa_key);
	free(e->rsa_pem);
	be_conf_free(e->be_conf, e->nbe_conf);
	pthread_mutex_destroy(&e->tls_mu);
	pthread_mutex_destroy(&e->sess_mu);
	free(e);
}

static int worker_init(struct worker *w, struct proxy_engine *e, const struct config *cfg,
                       const bool *use, uint16_t port, char *err, size_t errlen)
{
	w->e = e;
	/* connections not logged in may hold half of max_client_connections */
	w->pre_max = e->max_clients / 2 / e->nworkers;
	if (w->pre_max < 1)
		w->pre_max = 1;
	w->wtype = EV_WAKE;
	w->rnd = (unsigned)(now_ms() ^ (uintptr_t)w);
	w->ep = epoll_create1(EPOLL_CLOEXEC);
	w->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->ep < 0 || w->wakefd < 0) {
		snprintf(err, errlen, "proxy: epoll/eventfd: %s", strerror(errno));
		return -1;
	}
	w->users = users_ref(e->users);
	w->users_gen = atomic_load(&e->users_gen);
	if (pool_ghosts_init(w) < 0) {
		snprintf(err, errlen, "proxy: out of memory");
		return -1;
	}
	for (size_t i = 0; i < cfg->nbinds; i++) {
		struct listener *l = &w->ls[w->nls];

		if (!use[i])
			continue;
		l->type = EV_LISTEN;
		l->fd = listen_on(&cfg->binds[i], port, err, errlen);
		if (l->fd < 0)
			return -1;
		w->nls++;
		if (ep_add(w, l->fd, EPOLLIN, l) < 0) {
			snprintf(err, errlen, "proxy: epoll_ctl: %s", strerror(errno));
			return -1;
		}
	}
	if (ep_add(w, w->wakefd, EPOLLIN, &w->wtype) < 0) {
		snprintf(err, errlen, "proxy: epoll_ctl: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* Every client and backend connection is a file descriptor: the soft limit
 * (often 1024) goes up to the hard one, and a hard limit below what
 * max_client_connections needs is said (client_accept copes with running
 * out: the oldest connection not logged in makes room). */
static void raise_nofile(const struct config *cfg)
{
	struct rlimit rl;
	rlim_t want = (rlim_t)cfg->max_client_connections + 1024;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
		log_warn("proxy: getrlimit(RLIMIT_NOFILE): %s", strerror(errno));
		return;
	}
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			log_warn("proxy: setrlimit(RLIMIT_NOFILE): %s", strerror(errno));
	}
	if (rl.rlim_max < want)
		log_warn("proxy: at most %llu open files (RLIMIT_NOFILE): fewer than "
		         "max_client_connections (%d) and the backend connections need",
		         (unsigned long long)rl.rlim_max, cfg->max_client_connections);
}

/* An engine of n workers before they start: no epoll sets, listeners,
 * threads or routine loader yet. */
static struct proxy_engine *engine_new(const struct config *cfg, int n, char *err, size_t errlen)
{
	struct proxy_engine *e = calloc(1, sizeof(*e));

	if (!e) {
		snprintf(err, errlen, "proxy: out of memory");
		return NULL;
	}
	pthread_mutex_init(&e->users_mu, NULL);
	pthread_mutex_init(&e->tls_mu, NULL);
	pthread_mutex_init(&e->sess_mu, NULL);
	if (tls_apply(e, cfg, err, errlen) < 0 || rsa_apply(e, cfg, err, errlen) < 0) {
		proxy_engine_stop(e);
		return NULL;
	}
	e->users = users_new(cfg);
	e->max_clients = cfg->max_client_connections;
	e->handshake_timeout_ms = cfg->handshake_timeout_ms;
	e->max_packet = cfg->max_packet_size;
	e->next_conn_id = 1;
	/* applied at start: a worker's structures are sized and armed with them */
	e->ps_per_conn = (uint32_t)cfg->max_prepared_per_connection;
	e->ps_per_session = (uint32_t)cfg->max_prepared_per_session;
	e->wait_ms = (uint32_t)cfg->pool_wait_timeout_ms;
	apply_settings(e, cfg);
	e->workers = calloc((size_t)n, sizeof(*e->workers));
	if (!e->workers || !e->users) {
		snprintf(err, errlen, "proxy: out of memory");
		proxy_engine_stop(e);
		return NULL;
	}
	e->nworkers = n;
	for (int i = 0; i < n; i++) {
		e->workers[i].ep = e->workers[i].wakefd = -1;
		/* before any thread starts: the others read it */
		for (int id = 0; id < PROXY_MAX_IDS; id++)
			atomic_init(&e->workers[i].oldest[id], WAIT_NONE);
	}
	return e;
}

struct proxy_engine *proxy_engine_start(const struct config *cfg, uint16_t port, char *err,
                                        size_t errlen)
{
	struct proxy_engine *e;
	int n = cfg->workers > 0 ? cfg->workers : get_nprocs();
	bool use[CONFIG_MAX_BINDS];

	if (usable_binds(cfg, port, use, err, errlen) < 0)
		return NULL;
	raise_nofile(cfg);
	e = engine_new(cfg, n, err, errlen);
	if (!e)
		return NULL;
	e->routines = rt_loader_start(cfg->probe_user, cfg->probe_password,
	                              (unsigned)(cfg->interval_ms > 0 ? cfg->interval_ms : 1000));
	for (int i = 0; i < n; i++) {
		struct worker *w = &e->workers[i];
		if (worker_init(w, e, cfg, use, port, err, errlen) < 0) {
			proxy_engine_stop(e);
			return NULL;
		}
		if (pthread_create(&w->th, NULL, worker_main, w) != 0) {
			snprintf(err, errlen, "proxy: cannot start a worker thread");
			proxy_engine_stop(e);
			return NULL;
		}
		thread_name(w->th, "mysteer-proxy%d", i);
		w->started = true;
	}
	/* a topology with a writer wakes the statements waiting for one */
	if (topo_subscribe(sw_topology, e) == 0)
		e->sw_subscribed = true;
	else
		log_warn("proxy: no topology subscription: statements waiting for a writer "
		         "go on at the next sweep (250 ms)");
	for (size_t i = 0; i < cfg->nbinds; i++) {
		char text[INET6_ADDRSTRLEN] = "?";
		const struct sockaddr_storage *a = &cfg->binds[i];

		if (!use[i])
			continue;
		inet_ntop(a->ss_family,
		          a->ss_family == AF_INET
		              ? (const void *)&((const struct sockaddr_in *)a)->sin_addr
		              : (const void *)&((const struct sockaddr_in6 *)a)->sin6_addr,
		          text, sizeof(text));
		log_info("proxy: listening on [%s]:%u with %d worker(s)", text, port, n);
	}
	return e;
}

/* Backend connections serving a client now: idle pooled ones and warm ones
 * still logging in are not "active". The counters are read one by one while
 * workers move connections, so clamp a transient negative. */
static int in_use(struct proxy_engine *e, uint32_t id)
{
	int n = (int)atomic_load(&e->be_active[id]) - atomic_load(&e->be_idle[id]) -
	        atomic_load(&e->be_warming[id]);
	return n < 0 ? 0 : n;
}

void proxy_engine_counters(struct proxy_engine *e, uint32_t id, struct backend_counters *bc)
{
	if (!e || id >= PROXY_MAX_IDS)
		return;
	bc->active += in_use(e, id);
	bc->steered += atomic_load(&e->be_opened[id]);
	bc->connect_failures += atomic_load(&e->be_failed[id]);
	bc->open += atomic_load(&e->be_active[id]) + (uint64_t)atomic_load(&e->be_waiting[id]);
}

void proxy_engine_counters_reset(struct proxy_engine *e, uint32_t id)
{
	if (!e || id >= PROXY_MAX_IDS)
		return;
	atomic_store(&e->be_opened[id], 0);
	atomic_store(&e->be_failed[id], 0);
	atomic_store(&e->be_connects[id], 0);
	atomic_store(&e->be_reused[id], 0);
	atomic_store(&e->be_resets[id], 0);
	atomic_store(&e->be_clean[id], 0);
	atomic_store(&e->be_waits[id], 0);
	atomic_store(&e->be_wait_timeouts[id], 0);
	atomic_store(&e->be_prepares[id], 0);
	/* The sessions counted on the old backend leave the count, and their
	 * release later does not touch the new one's: a new generation. */
	uint64_t v = atomic_load(&e->be_readers[id]);
	while (!atomic_compare_exchange_weak(&e->be_readers[id], &v,
	                                     (uint64_t)(readers_gen(v) + 1) << 32))
		;
}

void proxy_engine_stats(struct proxy_engine *e, int *clients, int *backend_conns, int *workers)
{
	*clients = e ? atomic_load(&e->nclients) : 0;
	*backend_conns = e ? atomic_load(&e->nbconns) : 0;
	*workers = e ? e->nworkers : 0;
}

void proxy_engine_pool(struct proxy_engine *e, uint32_t id, struct proxy_pool_stats *ps)
{
	memset(ps, 0, sizeof(*ps));
	if (!e || id >= PROXY_MAX_IDS)
		return;
	ps->idle = atomic_load(&e->be_idle[id]);
	ps->in_use = in_use(e, id);
	ps->opened = atomic_load(&e->be_connects[id]);
	ps->reused = atomic_load(&e->be_reused[id]);
	ps->resets = atomic_load(&e->be_resets[id]);
	ps->clean = atomic_load(&e->be_clean[id]);
	ps->open = (int)atomic_load(&e->be_active[id]);
	ps->max = atomic_load(&e->pool_max);
	ps->waiting = atomic_load(&e->be_waiting[id]);
	ps->waits = atomic_load(&e->be_waits[id]);
	ps->readers = readers_count(atomic_load(&e->be_readers[id]));
	ps->wait_timeouts = atomic_load(&e->be_wait_timeouts[id]);
	ps->prepared = atomic_load(&e->be_prepared[id]);
	ps->prepares = atomic_load(&e->be_prepares[id]);
}

#ifdef MYSTEER_ENGINE_TEST
/* ---- engine_test.h: the engine in the test's own thread ---- */
#include "proxy/engine_test.h"

uint64_t engine_test_skew_ms;

struct proxy_engine *proxy_engine_test_new(const struct config *cfg, proxy_test_connect_fn fn,
                                           void *arg, char *err, size_t errlen)
{
	bool use[CONFIG_MAX_BINDS] = {false}; /* no listener */
	struct proxy_engine *e = engine_new(cfg, 1, err, errlen);

	if (!e)
		return NULL;
	e->test_connect = fn;
	e->test_connect_arg = arg;
	if (worker_init(&e->workers[0], e, cfg, use, 0, err, errlen) < 0) {
		proxy_engine_stop(e);
		return NULL;
	}
	return e;
}

int proxy_engine_test_client(struct proxy_engine *e, int fd)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(40000)};
	struct sockaddr_storage ss = {0};

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	memcpy(&ss, &sin, sizeof(sin));
	return client_adopt(&e->workers[0], fd, &ss) ? 0 : -1;
}

void proxy_engine_test_run(struct proxy_engine *e, int timeout_ms)
{
	engine_worker_once(&e->workers[0], timeout_ms);
}

void proxy_engine_test_sweep(struct proxy_engine *e)
{
	struct worker *w = &e->workers[0];

	w->last_sweep = 0;
	sweep(w);
	reap(w);
}

void proxy_engine_test_advance(uint64_t ms)
{
	engine_test_skew_ms += ms;
}

void proxy_engine_test_free(struct proxy_engine *e)
{
	worker_drain(&e->workers[0]);
	proxy_engine_stop(e);
}
#endif
