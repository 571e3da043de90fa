/*
 * etcd_client.c - drives userspace/cluster/etcd.c against a real etcd
 * (etcd_client.sh starts it): kv range and txn, lease grant and keepalive,
 * the watch, an endpoint that cannot be reached skipped, none reachable
 * said as a failure, and base64. Prints one "ok - " or "not ok - " line a
 * check, and "measured:" lines; exits 1 when a check failed.
 *
 * usage: etcd_client http://HOST:PORT
 */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/etcd.h"
#include "common/evloop.h"
#include "common/log.h"

static int failed;
static struct evloop *L;

#define CHECK(desc, cond)                                                                          \
	do {                                                                                       \
		bool ok_ = (cond);                                                                 \
		printf("%s - %s\n", ok_ ? "ok" : "not ok", desc);                                  \
		failed += !ok_;                                                                    \
	} while (0)

/* What came back last, and what the test waits for. */
static struct {
	enum etcd_kind want;
	bool got;
	bool ok;
	char error[192];
	struct json_object *json;
	int events; /* events seen (a watch) */
	char last_value[256];
} R;

static void on_reply(void *arg, const struct etcd_reply *r)
{
	if (r->kind == ETCD_WATCH_EVENT) {
		struct json_object *ev, *e0, *kv, *v;
		if (json_object_object_get_ex(r->json, "events", &ev) &&
		    (e0 = json_object_array_get_idx(ev, 0)) &&
		    json_object_object_get_ex(e0, "kv", &kv) &&
		    json_object_object_get_ex(kv, "value", &v))
			etcd_unb64(json_object_get_string(v), R.last_value, sizeof(R.last_value));
		R.events++;
	}
	if (r->kind != R.want)
		return;
	R.got = true;
	R.ok = r->ok;
	snprintf(R.error, sizeof(R.error), "%s", r->error);
	if (R.json)
		json_object_put(R.json);
	R.json = r->json ? json_object_get(r->json) : NULL;
	evloop_stop(L);
}

static void on_timeout(struct evloop *l, uint64_t id, void *arg)
{
	evloop_stop(l);
}

/* Runs the loop until what is wanted came, or ms passed. */
static bool wait_for(enum etcd_kind kind, unsigned ms)
{
	uint64_t t;

	R.want = kind;
	R.got = false;
	if (kind == ETCD_WATCH_EVENT && R.events > 0)
		return true; /* it came while the loop waited for something else */
	t = evloop_add_timer(L, ms, on_timeout, NULL);
	evloop_run(L);
	if (R.got)
		evloop_del_timer(L, t);
	return R.got;
}

static bool call(struct etcd *e, const char *path, const char *body)
{
	if (etcd_request(e, 1, path, body) < 0)
		return false;
	return wait_for(ETCD_REPLY, 10000) && R.ok;
}

static const char *jget(struct json_object *j, const char *a, const char *b)
{
	struct json_object *x;
	if (!j || !json_object_object_get_ex(j, a, &x))
		return NULL;
	if (b && !json_object_object_get_ex(x, b, &x))
		return NULL;
	return json_object_get_string(x);
}

int main(int argc, char **argv)
{
	char err[256], body[1024], bad[512], out[64];
	struct etcd *e, *two, *none;
	char *k, *v;
	uint64_t t0;

	if (argc != 2) {
		fprintf(stderr, "usage: etcd_client http://HOST:PORT\n");
		return 2;
	}
	log_set_level(LOG_LVL_INFO);
	L = evloop_new();
	e = L ? etcd_new(L, argv[1], 1000, on_reply, NULL, err, sizeof(err)) : NULL;
	if (!e) {
		printf("not ok - etcd_new: %s\n", L ? err : "no loop");
		return 1;
	}

	/* base64 */
	k = etcd_b64("/mysteer/t/leader", 17);
	CHECK("base64 of a key", k && !strcmp(k, "L215c3RlZXIvdC9sZWFkZXI="));
	CHECK("base64 back",
	      k && etcd_unb64(k, out, sizeof(out)) == 17 && !strcmp(out, "/mysteer/t/leader"));
	CHECK("base64 that does not fit is refused", k && etcd_unb64(k, out, 4) < 0);
	CHECK("not base64 is refused", etcd_unb64("a*b", out, sizeof(out)) < 0);
	etcd_prefix_end("/mysteer/t/", out, sizeof(out));
	CHECK("the end of a prefix's range", !strcmp(out, "/mysteer/t0"));

	/* range of a key that is not there */
	snprintf(body, sizeof(body), "{\"key\":\"%s\"}", k);
	t0 = mono_ms();
	CHECK("range of a missing key answers", call(e, "/v3/kv/range", body));
	printf("measured: range round trip %llu ms\n", (unsigned long long)(mono_ms() - t0));
	CHECK("... with no kvs", !jget(R.json, "kvs", NULL));

	/* a lease, kept alive */
	CHECK("lease grant", call(e, "/v3/lease/grant", "{\"TTL\":30}"));
	const char *id = jget(R.json, "ID", NULL);
	char lease[32];
	snprintf(lease, sizeof(lease), "%s", id ? id : "0");
	CHECK("... with an ID and the TTL", id && jget(R.json, "TTL", NULL));
	snprintf(body, sizeof(body), "{\"ID\":\"%s\"}", lease);
	CHECK("lease keepalive", call(e, "/v3/lease/keepalive", body));
	CHECK("... renews it (TTL in the result)", jget(R.json, "result", "TTL"));
	CHECK("keepalive of an unknown lease has no TTL",
	      call(e, "/v3/lease/keepalive", "{\"ID\":\"12345\"}") &&
	          !jget(R.json, "result", "TTL"));

	/* the watch on the prefix, then a create-if-absent txn */
	char end[64];
	etcd_prefix_end("/mysteer/t/", end, sizeof(end));
	CHECK("watch started", etcd_watch(e, "/mysteer/t/", end) == 0);
	CHECK("watch created", wait_for(ETCD_WATCH_UP, 10000));

	v = etcd_b64("hostA", 5);
	snprintf(body, sizeof(body),
	         "{\"compare\":[{\"key\":\"%s\",\"target\":\"CREATE\",\"result\":\"EQUAL\","
	         "\"create_revision\":\"0\"}],\"success\":[{\"request_put\":{\"key\":\"%s\","
	         "\"value\":\"%s\",\"lease\":\"%s\"}}],\"failure\":[{\"request_range\":{\"key\":"
	         "\"%s\"}}]}",
	         k, k, v, lease, k);
	t0 = mono_ms();
	R.events = 0;
	CHECK("txn create-if-absent answers", call(e, "/v3/kv/txn", body));
	CHECK("... succeeded",
	      jget(R.json, "succeeded", NULL) && !strcmp(jget(R.json, "succeeded", NULL), "true"));
	CHECK("the watch sees the put",
	      wait_for(ETCD_WATCH_EVENT, 10000) && !strcmp(R.last_value, "hostA"));
	printf("measured: txn to watch event %llu ms\n", (unsigned long long)(mono_ms() - t0));
	CHECK("the same txn again fails (the key exists)",
	      call(e, "/v3/kv/txn", body) && !jget(R.json, "succeeded", NULL));

	/* the watch reconnects when asked */
	etcd_watch_restart(e);
	CHECK("a restarted watch goes down", wait_for(ETCD_WATCH_DOWN, 10000));
	CHECK("... and comes back", wait_for(ETCD_WATCH_UP, 10000));

	/* an endpoint that refuses, then the good one */
	snprintf(bad, sizeof(bad), "http://127.0.0.1:1, %s", argv[1]);
	two = etcd_new(L, bad, 1000, on_reply, NULL, err, sizeof(err));
	CHECK("two endpoints", two != NULL);
	snprintf(body, sizeof(body), "{\"key\":\"%s\"}", k);
	CHECK("a request skips the endpoint that refuses",
	      two && etcd_request(two, 1, "/v3/kv/range", body) == 0 &&
	          wait_for(ETCD_REPLY, 10000) && R.ok);
	etcd_free(two);

	none = etcd_new(L, "http://127.0.0.1:1", 500, on_reply, NULL, err, sizeof(err));
	CHECK("no endpoint answers: the request fails with why",
	      none && etcd_request(none, 1, "/v3/kv/range", body) == 0 &&
	          wait_for(ETCD_REPLY, 10000) && !R.ok && strstr(R.error, "127.0.0.1:1"));
	printf("# %s\n", R.error);
	etcd_free(none);
	CHECK("a bad endpoint list is refused",
	      !etcd_new(L, "127.0.0.1:2379", 500, on_reply, NULL, err, sizeof(err)) &&
	          strstr(err, "bad endpoint"));

	free(k);
	free(v);
	if (R.json)
		json_object_put(R.json);
	etcd_free(e);
	evloop_free(L);
	printf("# etcd_client: %d failed\n", failed);
	return failed ? 1 : 0;
}
