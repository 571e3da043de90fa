/*
 * routines.c - the classifier's routine table for the 6450 proxy, read from
 * the writer's information_schema.ROUTINES by one thread of its own (blocking
 * libmysqlclient with short timeouts, so no worker loop ever waits on it).
 * It reloads only when the cheap signature (count, MAX(LAST_ALTERED)) changed
 * and publishes the new table as a refcounted snapshot with a generation
 * number: a worker compares one relaxed atomic per statement and takes the new
 * snapshot under the mutex only when the generation moved.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <mysql.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/thread.h"
#include "common/topology.h"
#include "proxy/routines.h"

struct proxy_routines {
	pthread_t th;
	bool started;
	pthread_mutex_t m;
	pthread_cond_t cv;
	bool stop;
	char user[128], password[128];
	unsigned interval_ms;
	struct rt_snap *cur; /* under m */
	_Atomic uint64_t gen;
	char sig[160]; /* signature of cur, "" before the first load */
};

void rt_snap_put(struct rt_snap *s)
{
	if (s && atomic_fetch_sub(&s->refs, 1) == 1) {
		cls_routines_free(s->rt);
		free(s);
	}
}

struct rt_snap *rt_snap_get(struct proxy_routines *p, uint64_t *gen)
{
	struct rt_snap *s;

	pthread_mutex_lock(&p->m);
	s = p->cur;
	if (s)
		atomic_fetch_add(&s->refs, 1);
	*gen = atomic_load(&p->gen);
	pthread_mutex_unlock(&p->m);
	return s;
}

uint64_t rt_generation(const struct proxy_routines *p)
{
	return atomic_load_explicit(&p->gen, memory_order_relaxed);
}

static enum cls_data_access parse_access(const char *s)
{
	if (!s)
		return CLS_ACCESS_CONTAINS_SQL;
	if (strcmp(s, "NO SQL") == 0)
		return CLS_ACCESS_NO_SQL;
	if (strcmp(s, "READS SQL DATA") == 0)
		return CLS_ACCESS_READS_SQL_DATA;
	if (strcmp(s, "MODIFIES SQL DATA") == 0)
		return CLS_ACCESS_MODIFIES_SQL_DATA;
	return CLS_ACCESS_CONTAINS_SQL;
}

/* Reads the signature; 1 when it differs from p->sig (new one in sig). */
static int changed(MYSQL *my, const char *old, char *sig, size_t siglen)
{
	MYSQL_RES *r;
	MYSQL_ROW row;

	if (mysql_query(my, "SELECT COUNT(*), MAX(LAST_ALTERED) FROM information_schema.ROUTINES"))
		return -1;
	r = mysql_store_result(my);
	if (!r)
		return -1;
	row = mysql_fetch_row(r);
	snprintf(sig, siglen, "%s/%s", row && row[0] ? row[0] : "-", row && row[1] ? row[1] : "-");
	mysql_free_result(r);
	return strcmp(sig, old) != 0;
}

/*
 * Whether a procedure's body can leave on its connection only what the
 * server's session tracking reports (temporary tables, user and session
 * variables, prepared statements) or the proxy follows anyway (transaction
 * status, LAST_INSERT_ID()): a session may then hand the connection back
 * after a CALL of it (mux.c). Not when the body names anything that leaves
 * unreported state: a named lock (GET_LOCK), a sequence's value for the
 * session (NEXTVAL, NEXT VALUE FOR, SETVAL, LASTVAL), dynamic SQL (EXECUTE),
 * SET TRANSACTION (the next transaction's), XA, or a call of another
 * routine (CALL, or a stored function of the table: fnames, upper case).
 * Words are matched anywhere, strings and comments included: a false match
 * only keeps the connection, as for any CALL before. LOCK TABLES, HANDLER
 * and BACKUP LOCK are refused in procedures by the server; LOCK is matched
 * all the same.
 */
static bool body_tracked(const char *body, char *const *fnames, size_t nf)
{
	static const char *const deny[] = {"GET_LOCK", "LOCK",   "EXECUTE", "CALL",
	                                   "NEXTVAL",  "SETVAL", "LASTVAL", "XA"};
	char prev[72] = "", w[72];

	if (!body)
		return false; /* not visible to the monitoring user: unknown */
	for (const char *p = body; *p;) {
		size_t n = 0;
		if (!(isalnum((unsigned char)*p) || *p == '_' || *p == '$')) {
			p++;
			continue;
		}
		while (isalnum((unsigned char)*p) || *p == '_' || *p == '$') {
			if (n + 1 < sizeof(w))
				w[n++] = (char)toupper((unsigned char)*p);
			p++;
		}
		w[n] = 0;
		for (size_t i = 0; i < sizeof(deny) / sizeof(deny[0]); i++)
			if (!strcmp(w, deny[i]))
				return false;
		if ((!strcmp(w, "VALUE") && !strcmp(prev, "NEXT")) ||
		    (!strcmp(w, "TRANSACTION") &&
		     (!strcmp(prev, "SET") || !strcmp(prev, "SESSION"))))
			return false;
		const char *q = p;
		while (*q == '`' || *q == ' ' || *q == '\t' || *q == '\n' || *q == '\r')
			q++;
		if (*q == '(')
			for (size_t i = 0; i < nf; i++)
				if (!strcmp(w, fnames[i]))
					return false;
		memcpy(prev, w, n + 1);
	}
	return true;
}

/* The table's stored function names in upper case, for body_tracked. */
static char **function_names(MYSQL_RES *r, size_t *nf)
{
	size_t cap = mysql_num_rows(r) + 1;
	char **f = calloc(cap, sizeof(*f));
	MYSQL_ROW row;

	*nf = 0;
	if (!f)
		return NULL;
	mysql_data_seek(r, 0);
	while ((row = mysql_fetch_row(r))) {
		if (!row[1] || (row[2] && !strcmp(row[2], "PROCEDURE")) || *nf + 1 >= cap)
			continue;
		f[*nf] = strdup(row[1]);
		if (!f[*nf])
			break;
		for (char *c = f[*nf]; *c; c++)
			*c = (char)toupper((unsigned char)*c);
		(*nf)++;
	}
	return f;
}

static void free_names(char **f, size_t nf)
{
	for (size_t i = 0; f && i < nf; i++)
		free(f[i]);
	free(f);
}

static struct cls_routines *load(MYSQL *my, size_t *n, size_t *ntracked)
{
	struct cls_routines *rt;
	MYSQL_RES *r;
	MYSQL_ROW row;
	char **fnames;
	size_t nf = 0;

	if (mysql_query(my, "SELECT ROUTINE_SCHEMA, ROUTINE_NAME, ROUTINE_TYPE, SQL_DATA_ACCESS, "
	                    "ROUTINE_DEFINITION FROM information_schema.ROUTINES"))
		return NULL;
	r = mysql_store_result(my);
	if (!r)
		return NULL;
	fnames = function_names(r, &nf);
	mysql_data_seek(r, 0);
	rt = cls_routines_new();
	*n = *ntracked = 0;
	while (rt && (row = mysql_fetch_row(r))) {
		bool proc = row[2] && strcmp(row[2], "PROCEDURE") == 0;
		enum cls_routine_kind k = proc ? CLS_ROUTINE_PROCEDURE : CLS_ROUTINE_FUNCTION;
		if (!row[0] || !row[1])
			continue;
		if (cls_routines_add(rt, row[0], row[1], k, parse_access(row[3])) < 0) {
			cls_routines_free(rt);
			rt = NULL;
			break;
		}
		(*n)++;
		/* without the function names, no body counts as tracked */
		if (proc && fnames && body_tracked(row[4], fnames, nf) &&
		    cls_routines_set_tracked(rt, row[0], row[1]) == 0)
			(*ntracked)++;
	}
	free_names(fnames, nf);
	mysql_free_result(r);
	return rt;
}

static void publish(struct proxy_routines *p, struct cls_routines *rt, const char *sig)
{
	struct rt_snap *s = calloc(1, sizeof(*s)), *old;

	if (!s) {
		cls_routines_free(rt);
		return;
	}
	s->rt = rt;
	atomic_init(&s->refs, 1);
	pthread_mutex_lock(&p->m);
	old = p->cur;
	p->cur = s;
	snprintf(p->sig, sizeof(p->sig), "%s", sig);
	atomic_fetch_add(&p->gen, 1);
	pthread_mutex_unlock(&p->m);
	rt_snap_put(old);
}

static void refresh(struct proxy_routines *p)
{
	const struct topology *t = topo_current();
	unsigned timeout = 2;
	char host[TOPO_HOST_MAX], sig[160];
	uint16_t port;
	MYSQL *my;

	if (!t || t->writer < 0 || (size_t)t->writer >= t->nbackends) {
		topo_put(t);
		return;
	}
	/* The address the controller resolved (a name may have moved since it
	 * was configured), else the host as configured. */
	const struct topo_backend *w = &t->backends[t->writer];
	if (!topo_addr_str(&w->addr, w->addrlen, host, sizeof(host)))
		snprintf(host, sizeof(host), "%s", w->host);
	port = w->port;
	topo_put(t);
	my = mysql_init(NULL);
	if (!my)
		return;
	mysql_options(my, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
	mysql_options(my, MYSQL_OPT_READ_TIMEOUT, &timeout);
	mysql_options(my, MYSQL_OPT_WRITE_TIMEOUT, &timeout);
	if (!mysql_real_connect(my, host, p->user, p->password, NULL, port, NULL, 0)) {
		log_debug("routines: cannot connect to %s:%u: %s", host, port, mysql_error(my));
		mysql_close(my);
		return;
	}
	if (changed(my, p->sig, sig, sizeof(sig)) == 1) {
		size_t n = 0, ntracked = 0;
		struct cls_routines *rt = load(my, &n, &ntracked);
		if (rt) {
			publish(p, rt, sig);
			log_info("routines: %zu loaded from %s:%u (%zu procedures tracked)", n,
			         host, port, ntracked);
		} else {
			log_warn("routines: reading %s:%u: %s", host, port, mysql_error(my));
		}
	}
	mysql_close(my);
}

static void *loader_main(void *arg)
{
	struct proxy_routines *p = arg;

	mysql_thread_init();
	pthread_mutex_lock(&p->m);
	while (!p->stop) {
		struct timespec ts;
		pthread_mutex_unlock(&p->m);
		refresh(p);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += p->interval_ms / 1000;
		ts.tv_nsec += (long)(p->interval_ms % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&p->m);
		if (!p->stop)
			pthread_cond_timedwait(&p->cv, &p->m, &ts);
	}
	pthread_mutex_unlock(&p->m);
	mysql_thread_end();
	return NULL;
}

struct proxy_routines *rt_loader_start(const char *user, const char *password, unsigned interval_ms)
{
	struct proxy_routines *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	pthread_mutex_init(&p->m, NULL);
	pthread_cond_init(&p->cv, NULL);
	snprintf(p->user, sizeof(p->user), "%s", user);
	snprintf(p->password, sizeof(p->password), "%s", password);
	p->interval_ms = interval_ms ? interval_ms : 1000;
	if (pthread_create(&p->th, NULL, loader_main, p) != 0) {
		log_warn("routines: cannot start the loader thread");
		return p; /* no table: routines classify as without one */
	}
	thread_name(p->th, "mysteer-routine");
	p->started = true;
	return p;
}

void rt_loader_stop(struct proxy_routines *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->m);
	p->stop = true;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->m);
	if (p->started)
		pthread_join(p->th, NULL);
	rt_snap_put(p->cur);
	pthread_mutex_destroy(&p->m);
	pthread_cond_destroy(&p->cv);
	explicit_bzero(p->password, sizeof(p->password));
	free(p);
}
