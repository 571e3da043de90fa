/*
 * metrics.c - the 6450 proxy's statement figures in the metrics registry
 * (common/metrics.h): statements by the classifier's decision, statements
 * answered by each backend (and those it answered with an error) and the
 * time a client waited for each, from the
 * moment the proxy had the statement to the end of its answer. The series of
 * a backend connection are looked up once and kept on it, so a statement
 * costs two atomic adds and a histogram bucket.
 */
#include <pthread.h>
#include <time.h>

#include "common/metrics.h"
#include "proxy/engine_int.h"

static struct {
	pthread_once_t once;
	struct metric_family *decisions, *stmts, *errors, *seconds, *added;
	struct metric_series *by_tok[CLS_END + 1];
	struct metric_series *sw[3];
	struct metric_series *replays[RP_OUTCOME_COUNT];
	struct metric_series *clients[CLIENT_METRIC_COUNT];
	struct metric_series *ryw[RYW_METRIC_COUNT], *retries;
} M = {.once = PTHREAD_ONCE_INIT};

static void register_client_metrics(void)
{
	static const char *const reason[] = {"reason", NULL};
	static const char *const why[CLIENT_METRIC_COUNT] = {
	    [CLIENT_REFUSED_FULL] = "max_client_connections",
	    [CLIENT_REFUSED_EVICTED] = "evicted_before_login",
	    [CLIENT_REFUSED_INSECURE] = "insecure_transport",
	    [CLIENT_REFUSED_DENIED] = "access_denied",
	    [CLIENT_REFUSED_NO_MEMORY] = "out_of_memory",
	};
	struct metric_family *refused = metrics_counter(
	    "mysteer_proxy_client_refused_total",
	    "6450 client connections refused or ended before their session began, by reason",
	    reason, 0);

	M.clients[CLIENT_ACCEPTED] =
	    metric_series(metrics_counter("mysteer_proxy_client_connections_total",
	                                  "Client connections the 6450 proxy accepted", NULL, 0),
	                  NULL);
	for (int i = CLIENT_REFUSED_FULL; i < CLIENT_METRIC_COUNT; i++)
		M.clients[i] = metric_at(refused, why[i]);
}

static void register_read_metrics(void)
{
	static const char *const outcome[] = {"outcome", NULL};
	struct metric_family *ryw = metrics_counter(
	    "mysteer_proxy_read_your_writes_total",
	    "Reads of 6450 sessions that read-your-writes acted on: gtid_waited (a replica "
	    "waited for the session's last GTID), gtid_timeout (it did not catch up in time: the "
	    "writer read), window (read_your_writes_ms after a write: the writer read)",
	    outcome, 0);

	M.ryw[RYW_METRIC_GTID_WAIT] = metric_at(ryw, "gtid_waited");
	M.ryw[RYW_METRIC_GTID_TIMEOUT] = metric_at(ryw, "gtid_timeout");
	M.ryw[RYW_METRIC_WINDOW] = metric_at(ryw, "window");
	M.retries = metric_series(
	    metrics_counter("mysteer_proxy_reader_retries_total",
	                    "Reads sent again to another reader after theirs failed before "
	                    "answering",
	                    NULL, 0),
	    NULL);
}

/* Finer than metrics_latency_buckets at the low end: what the proxy adds is
 * often tens of microseconds. */
static const double added_buckets[] = {0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005,
                                       0.001,   0.0025,   0.005,   0.01,   0.025,   0.05,
                                       0.1,     0.25,     0.5,     1,      2.5,     10};

static void register_replay_metrics(void)
{
	static const char *const outcome[] = {"outcome", NULL};
	struct metric_family *f = metrics_counter(
	    "mysteer_proxy_transaction_replays_total",
	    "Transactions of 6450 sessions whose writer connection was lost (transaction_replay): "
	    "ok (replayed, every result matched), mismatch, too_large, commit_in_flight, "
	    "not_replayable, no_writer (the session got ERR 1927 naming it)",
	    outcome, 0);

	for (int i = RP_OK; i < RP_OUTCOME_COUNT; i++)
		M.replays[i] = metric_at(f, rp_outcome_name((enum rp_outcome)i));
}

static void register_metrics(void)
{
	static const char *const decision[] = {"decision", NULL};
	static const char *const backend[] = {"backend", NULL};

	M.decisions = metrics_counter("mysteer_proxy_statements_total",
	                              "Statements of 6450 clients, by the classifier's decision "
	                              "(read, write, session, begin, begin_ro, end)",
	                              decision, 0);
	M.stmts = metrics_counter("mysteer_proxy_backend_statements_total",
	                          "Statements of 6450 clients answered by the backend", backend, 0);
	M.errors = metrics_counter("mysteer_proxy_backend_errors_total",
	                           "Statements of 6450 clients the backend answered with an error",
	                           backend, 0);
	M.seconds =
	    metrics_histogram("mysteer_proxy_statement_duration_seconds",
	                      "Time from a statement's arrival at the 6450 proxy to the end "
	                      "of its answer, by the backend that answered",
	                      backend, metrics_latency_buckets, metrics_latency_nbuckets, 0);
	M.added = metrics_histogram(
	    "mysteer_proxy_added_seconds",
	    "The part of a 6450 statement's time the proxy adds: from its arrival at the proxy "
	    "to its last byte written to the backend's socket (the statement's time minus the "
	    "backend's, which runs from there to the end of the answer), by backend",
	    backend, added_buckets, sizeof(added_buckets) / sizeof(added_buckets[0]), 0);
	M.sw[SW_METRIC_WAIT] = metric_series(
	    metrics_counter("mysteer_proxy_switchover_waits_total",
	                    "Statements of 6450 clients that waited for a writer while there "
	                    "was none (switchover_buffer_ms)",
	                    NULL, 0),
	    NULL);
	M.sw[SW_METRIC_TIMEOUT] =
	    metric_series(metrics_counter("mysteer_proxy_switchover_timeouts_total",
	                                  "Waits for a writer that ran out (switchover_buffer_ms): "
	                                  "the statement got an ERR",
	                                  NULL, 0),
	                  NULL);
	M.sw[SW_METRIC_RETAKE] = metric_series(
	    metrics_counter("mysteer_proxy_switchover_retakes_total",
	                    "Statements the writer refused as read-only or never got, "
	                    "held for the next writer instead of failing",
	                    NULL, 0),
	    NULL);
	for (int t = CLS_READ; t <= CLS_END; t++)
		M.by_tok[t] = metric_at(M.decisions, cls_token_name((enum cls_token)t));
	register_client_metrics();
	register_read_metrics();
	register_replay_metrics();
}

/* The clock of bconn.sent_us (backend.c). */
static uint64_t now_us(void)
{
	return mono_us();
}

void proxy_metrics_classified(struct client *c, enum cls_token tok)
{
	pthread_once(&M.once, register_metrics);
	c->cmd_t0_us = now_us();
	if (tok >= CLS_READ && tok <= CLS_END)
		metric_inc(M.by_tok[tok]);
}

void proxy_metrics_client(enum client_metric what)
{
	pthread_once(&M.once, register_metrics);
	if (what < CLIENT_METRIC_COUNT)
		metric_inc(M.clients[what]);
}

void proxy_metrics_ryw(enum ryw_metric what)
{
	pthread_once(&M.once, register_metrics);
	if (what < RYW_METRIC_COUNT)
		metric_inc(M.ryw[what]);
}

void proxy_metrics_reader_retry(void)
{
	pthread_once(&M.once, register_metrics);
	metric_inc(M.retries);
}

void proxy_metrics_switchover(enum sw_metric what)
{
	pthread_once(&M.once, register_metrics);
	metric_inc(M.sw[what]);
}

void proxy_metrics_replay(enum rp_outcome what)
{
	pthread_once(&M.once, register_metrics);
	if (what < RP_OUTCOME_COUNT)
		metric_inc(M.replays[what]);
}

void proxy_metrics_answered(struct client *c, struct bconn *b)
{
	pthread_once(&M.once, register_metrics);
	if (!b->m_stmts) {
		b->m_stmts = metric_at(M.stmts, b->name);
		b->m_errors = metric_at(M.errors, b->name);
		b->m_seconds = metric_at(M.seconds, b->name);
		b->m_added = metric_at(M.added, b->name);
	}
	metric_inc(b->m_stmts);
	if (b->rt.saw_err)
		metric_inc(b->m_errors);
	if (c->cur_classified && c->cmd_t0_us) {
		uint64_t now = now_us();
		metric_observe(b->m_seconds, (double)(now - c->cmd_t0_us) / 1e6);
		/* total - backend = (now - t0) - (now - sent) */
		if (b->sent_us >= c->cmd_t0_us && b->sent_us <= now)
			metric_observe(b->m_added, (double)(b->sent_us - c->cmd_t0_us) / 1e6);
	}
}
