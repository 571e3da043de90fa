/*
 * http.h - mysteerd's HTTP endpoint ([mysteerd] metrics_listen), served by
 * libmicrohttpd on a thread of its own:
 *   GET /metrics  the metrics registry (common/metrics.h) in the Prometheus
 *                 text format;
 *   GET /live     200 "ok" while the daemon's loop answers;
 *   GET /ready    200 "ready" when ready_fn says so, else 503 and its reason.
 * Each answer is made on the daemon's loop thread (the collectors read the
 * controller there), asked through an eventfd on that loop; a loop that does
 * not answer within METRICS_HTTP_WAIT_MS gets a 503.
 */
#ifndef MYSTEER_METRICS_HTTP_H
#define MYSTEER_METRICS_HTTP_H

#include <stdbool.h>
#include <stddef.h>

struct evloop;
struct metrics_http;

#define METRICS_HTTP_WAIT_MS 5000

/* On the loop thread: true when ready, else false and why in why. */
typedef bool (*metrics_ready_fn)(void *arg, char *why, size_t len);

/* listen: "HOST:PORT" (numeric IPv4, or [IPv6]:PORT). NULL with the reason in
 * err when it cannot listen there. */
struct metrics_http *metrics_http_start(const char *listen, struct evloop *loop,
                                        metrics_ready_fn ready, void *arg, char *err,
                                        size_t errlen);
/* From the loop thread. NULL is a no-op. */
void metrics_http_stop(struct metrics_http *h);

#endif
