/*
 * cluster.c - see cluster.h. One state on the loop thread, driven by a tick
 * (lease renewal, campaign, fence check) and by etcd's answers and watch
 * events (etcd.h). Requests of one kind are never more than one in flight.
 */
#include "cluster/cluster.h"

#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster/etcd.h"
#include "cluster/views.h"
#include "common/evloop.h"
#include "common/log.h"
#include "common/metrics.h"
#include "config/config.h"
#include "topo/controller.h"

/* How long the exit waits for etcd to take the lease back. */
#define REVOKE_TIMEOUT_MS 500

/* A host's view is put again this often even when it did not change, so
 * that its age says how fresh it is. */
#define VIEW_REFRESH_MS 5000
/* Backends followed per host for the views' logs and metrics. */
#define MAX_SEEN 64

enum tag { TAG_GRANT = 1, TAG_KEEPALIVE, TAG_CAMPAIGN, TAG_PUBLISH, TAG_READ, TAG_VIEW, TAG_ADMIN };

/* Another host's view (views.h), as its key holds it; j NULL: deleted (kept
 * with the revision of the delete, so that an older read does not bring it
 * back). */
struct view {
	char host[64];
	struct json_object *j;
	int64_t rev; /* etcd revision of what j says */
};

/* What this host notes of one backend, for logs and metrics. */
struct seen {
	char name[TOPO_NAME_MAX];
	bool held;            /* leader: seen down here, but the fleet does not agree */
	bool unreachable;     /* up for the fleet, down from this host */
	int64_t admin_rev[2]; /* etcd revision of the fleet's admin/ state and set applied */
};

/* Why writes are fenced; a change of it is logged, not each tick. */
enum fence {
	FENCE_NONE = 0,
	FENCE_NO_LEASE,
	FENCE_LEASE_LOST,
	FENCE_SILENT,
	FENCE_WATCH,
	FENCE_NO_TOPOLOGY,
};

static struct cl {
	bool on;
	struct daemon_ctx *d;
	struct controller *ctl;
	struct etcd *e;
	char host_id[64], name[64];
	char k_prefix[96], k_end[96], k_leader[128], k_topo[128], k_views[128], k_myview[192];
	char k_admin[128];
	char *b64_leader, *b64_host;
	unsigned lease_ms, fence_ms, tick_ms, follower_ms;
	int interval_set; /* the probe interval given to the controller, -1 none yet */
	uint64_t tick;

	int64_t lease; /* 0: none */
	bool granting, keeping, campaigning, publishing, reading;
	uint64_t heard_ms; /* when the last renewal that succeeded was sent */
	uint64_t keep_sent_ms;
	bool ever_heard;
	bool watch_up;
	bool watch_restarted; /* once per spell of silence */
	uint64_t watch_down_ms;
	char etcd_error[192]; /* the last failure, "" after a success */
	bool error_logged;

	char leader[64];    /* who leads, "" none known */
	int64_t leader_rev; /* etcd revision of what leader says */
	bool is_leader;
	uint64_t led_since_ms; /* when this host won its lead */

	uint64_t epoch;           /* of the newest topology applied */
	struct json_object *topo; /* that topology */
	char topo_writer[64];
	char *want;     /* leader: the decision to publish (JSON text) */
	char *pub;      /* the topology being published (JSON text) */
	char *decision; /* the decision of the topology applied (JSON text) */
	enum fence fence;
	char fence_why[192];
	uint64_t fences; /* times writes were fenced since start */

	struct view *views; /* the other hosts' views */
	size_t nviews;
	char *view_want;     /* this host's view (time 0) not put yet */
	char *view_put;      /* the view put last (time 0) */
	int64_t view_lease;  /* the lease it was put with */
	uint64_t view_at_ms; /* when */
	bool viewing;
	struct seen seen[MAX_SEEN];
	size_t nseen;
} C;

/* The fleet's figures (docs/METRICS.md), collected at each render on the
 * loop thread. */
static struct {
	struct metric_family *leader, *fenced, *epoch, *fences, *views, *unreachable;
} CM;

static void step(void);

static uint64_t now_ms(void)
{
	return mono_ms();
}

static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct seen *seen_of(const char *name)
{
	for (size_t i = 0; i < C.nseen; i++)
		if (!strcmp(C.seen[i].name, name))
			return &C.seen[i];
	if (C.nseen == MAX_SEEN)
		return NULL;
	snprintf(C.seen[C.nseen].name, sizeof(C.seen[0].name), "%s", name);
	return &C.seen[C.nseen++];
}

/* ---- the decision as JSON ---- */

static const char *jstr(struct json_object *o, const char *key)
{
	struct json_object *x;
	if (!o || !json_object_object_get_ex(o, key, &x) ||
	    !json_object_is_type(x, json_type_string))
		return NULL;
	return json_object_get_string(x);
}

/* What the leader publishes of a snapshot (without epoch and leader): the
 * writer, the readers, each backend's role, health and admin state. */
static char *decision_text(const struct topology *t)
{
	struct json_object *o = json_object_new_object(), *rd = json_object_new_array(),
	                   *bs = json_object_new_array();
	char *s = NULL;

	if (!o || !rd || !bs)
		goto out;
	json_object_object_add(o, "writer",
	                       t->writer >= 0 ? json_object_new_string(t->backends[t->writer].name)
	                                      : NULL);
	for (size_t i = 0; i < t->nbackends; i++) {
		const struct topo_backend *b = &t->backends[i];
		struct json_object *x = json_object_new_object();
		if (!x)
			goto out;
		if (b->role == ROLE_READER)
			json_object_array_add(rd, json_object_new_string(b->name));
		json_object_object_add(x, "name", json_object_new_string(b->name));
		json_object_object_add(x, "role", json_object_new_string(topo_role_name(b->role)));
		json_object_object_add(x, "health",
		                       json_object_new_string(topo_health_name(b->health)));
		json_object_object_add(x, "admin",
		                       json_object_new_string(topo_admin_name(b->admin)));
		json_object_object_add(x, "state", json_object_new_string(topo_state_name(b)));
		json_object_array_add(bs, x);
	}
	json_object_object_add(o, "readers", rd);
	json_object_object_add(o, "backends", bs);
	rd = bs = NULL;
	s = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
out:
	json_object_put(rd);
	json_object_put(bs);
	json_object_put(o);
	return s;
}

static int parse_name(const char *s, const char *const *names, int n)
{
	for (int i = 0; s && i < n; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

/* ---- the views ---- */

/* Leader: a backend its own probes see down is taken as up by its rules
 * unless a majority of the live hosts (it included) see it down too
 * (views.h): one host's partition, the leader's included, moves nothing. */
static bool hold_up(const struct topo_backend *b)
{
	enum be_health *others;
	struct views_count n;
	bool down;

	if (!C.is_leader)
		return false;
	size_t k = 0;
	others = calloc(C.nviews ? C.nviews : 1, sizeof(*others));
	if (!others)
		return false;
	for (size_t i = 0; i < C.nviews; i++)
		if (C.views[i].j)
			others[k++] = views_health_of(C.views[i].j, b->name);
	down = views_agree_down(b->health, others, k, &n);
	free(others);
	struct seen *s = seen_of(b->name);
	if (s && s->held == down) {
		s->held = !down;
		if (s->held)
			log_warn(
			    "cluster: %s is down from this host (the leader), but only %u of %u "
			    "live hosts see it down: held up, not failed over",
			    b->name, n.down, n.live);
		else
			log_warn("cluster: %s is down for %u of %u live hosts (a majority, this "
			         "leader included): failed over as down",
			         b->name, n.down, n.live);
	}
	return !down;
}

static bool vote(const struct topo_backend *b, void *arg)
{
	return hold_up(b);
}

static size_t live_views(void)
{
	size_t n = 0;

	for (size_t i = 0; i < C.nviews; i++)
		n += C.views[i].j != NULL;
	return n;
}

/* Host's view as of etcd revision rev (value NULL: deleted); what is older
 * than what is known is ignored (a read answered after a newer watch event). */
static void view_set(const char *host, const char *value, int64_t rev)
{
	size_t i;

	for (i = 0; i < C.nviews && strcmp(C.views[i].host, host); i++)
		;
	if (i < C.nviews && rev < C.views[i].rev)
		return;
	if (!value) {
		if (i == C.nviews || !C.views[i].j)
			return;
		log_info("cluster: host %s's view is gone (its lease ended)", host);
		json_object_put(C.views[i].j);
		C.views[i].j = NULL;
		C.views[i].rev = rev;
		controller_refresh(C.ctl);
		return;
	}
	struct json_object *j = json_tokener_parse(value);
	if (!j || !json_object_is_type(j, json_type_object)) {
		log_warn("cluster: %s%s: not a view (ignored)", C.k_views, host);
		json_object_put(j);
		return;
	}
	if (i == C.nviews) {
		struct view *v = realloc(C.views, (C.nviews + 1) * sizeof(*v));
		if (!v) {
			log_error("cluster: out of memory for host %s's view", host);
			json_object_put(j);
			return;
		}
		C.views = v;
		snprintf(C.views[i].host, sizeof(C.views[i].host), "%s", host);
		C.views[i].j = NULL;
		C.nviews++;
	}
	json_object_put(C.views[i].j);
	C.views[i].j = j;
	C.views[i].rev = rev;
	controller_refresh(C.ctl);
}

/* This host's view of t (its own probes) is due when it changed, with a
 * new lease, or every VIEW_REFRESH_MS. */
static void view_note(const struct topology *t)
{
	char *v = views_text(C.host_id, t, 0);

	if (!v)
		return;
	if ((C.view_put && !strcmp(v, C.view_put) && C.view_lease == C.lease &&
	     now_ms() - C.view_at_ms < VIEW_REFRESH_MS) ||
	    (C.view_want && !strcmp(v, C.view_want))) {
		free(v);
		return;
	}
	free(C.view_want);
	C.view_want = v;
}

static void view_put(void)
{
	struct json_object *j = json_tokener_parse(C.view_want);
	char *k = NULL, *v = NULL, body[8192];

	if (!j)
		return;
	json_object_object_add(j, "time", json_object_new_int64(wall_ms()));
	k = etcd_b64(C.k_myview, strlen(C.k_myview));
	v = etcd_b64(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN),
	             strlen(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN)));
	if (!k || !v) {
		log_error("cluster: out of memory putting this host's view");
	} else if ((size_t)snprintf(body, sizeof(body),
	                            "{\"key\":\"%s\",\"value\":\"%s\",\"lease\":\"%" PRId64 "\"}",
	                            k, v, C.lease) >= sizeof(body)) {
		log_warn("cluster: this host's view is too large to put (%zu backends)",
		         json_object_array_length(json_object_object_get(j, "backends")));
	} else if (etcd_request(C.e, TAG_VIEW, "/v3/kv/put", body) < 0) {
		log_error("cluster: out of memory for an etcd request");
	} else {
		C.viewing = true;
		C.view_lease = C.lease;
		C.view_at_ms = now_ms();
		free(C.view_put);
		C.view_put = C.view_want;
		C.view_want = NULL;
	}
	json_object_put(j);
	free(k);
	free(v);
}

/* ---- admin commands through etcd ---- */

/* An operator's drain, disable, enable or set here: put as
 * admin/<backend>/state (drain, disable, enable) or admin/<backend>/set, a
 * key without lease (the fleet keeps it), that every other host runs as if
 * typed there. */
static void fleet_admin(struct daemon_ctx *d, const char *cmd, const char *backend,
                        const char *request)
{
	struct json_object *j = json_tokener_parse(request);
	char key[256], *k = NULL, *v = NULL, *body = NULL;
	size_t len;

	if (!j || !C.e)
		goto out;
	json_object_object_add(j, "by", json_object_new_string(C.host_id));
	json_object_object_add(j, "time", json_object_new_int64(wall_ms()));
	snprintf(key, sizeof(key), "%s%s/%s", C.k_admin, backend,
	         !strcmp(cmd, "set") ? "set" : "state");
	const char *text = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN);
	k = etcd_b64(key, strlen(key));
	v = etcd_b64(text, strlen(text));
	len = (k ? strlen(k) : 0) + (v ? strlen(v) : 0) + 64;
	body = malloc(len);
	if (!k || !v || !body) {
		log_error("cluster: out of memory sending %s %s to the fleet", cmd, backend);
		goto out;
	}
	snprintf(body, len, "{\"key\":\"%s\",\"value\":\"%s\"}", k, v);
	if (etcd_request(C.e, TAG_ADMIN, "/v3/kv/put", body) < 0)
		log_error("cluster: out of memory sending %s %s to the fleet", cmd, backend);
	else
		log_info("cluster: %s %s sent to the fleet (%s)", cmd, backend, key);
out:
	json_object_put(j);
	free(k);
	free(v);
	free(body);
}

/* admin/<backend>/<state|set> as of etcd revision rev: run here unless this
 * host sent it (already done) or it is older than what was run. */
static void admin_key(const char *rest, const char *value, int64_t rev)
{
	char backend[TOPO_NAME_MAX];
	const char *slash = strchr(rest, '/'), *cmd, *by;
	struct json_object *j = NULL;
	struct seen *s;
	int kind;

	if (!value || !slash || (size_t)(slash - rest) >= sizeof(backend))
		return;
	snprintf(backend, sizeof(backend), "%.*s", (int)(slash - rest), rest);
	kind = !strcmp(slash + 1, "set");
	if (!(s = seen_of(backend)) || rev <= s->admin_rev[kind])
		return;
	s->admin_rev[kind] = rev;
	j = json_tokener_parse(value);
	cmd = jstr(j, "cmd");
	by = jstr(j, "by");
	if (!cmd || !jstr(j, "name") || strcmp(jstr(j, "name"), backend) != 0) {
		log_warn("cluster: %s%s: not an admin command (ignored)", C.k_admin, rest);
		goto out;
	}
	if (by && !strcmp(by, C.host_id))
		goto out;
	log_info("cluster: %s %s from host %s (the fleet)", cmd, backend, by ? by : "?");
	json_object_object_del(j, "by");
	json_object_object_del(j, "time");
	json_object_object_add(j, "fleet", json_object_new_boolean(1));
	if (C.d->admin_run)
		C.d->admin_run(C.d, json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN));
out:
	json_object_put(j);
}

/* ---- fencing ---- */

static void fence_eval(void)
{
	enum fence f = FENCE_NONE;
	char why[192] = "";
	uint64_t now = now_ms();

	if (!C.lease && !C.ever_heard) {
		f = FENCE_NO_LEASE;
		snprintf(why, sizeof(why), "no lease from etcd yet%s%.120s",
		         C.etcd_error[0] ? ": " : "", C.etcd_error);
	} else if (!C.lease) {
		f = FENCE_LEASE_LOST;
		snprintf(why, sizeof(why), "the lease on etcd expired; getting a new one%s%.100s",
		         C.etcd_error[0] ? ": " : "", C.etcd_error);
	} else if (now - C.heard_ms > C.fence_ms) {
		f = FENCE_SILENT;
		snprintf(why, sizeof(why), "etcd not heard for fence_after_ms (%u ms)%s%.100s",
		         C.fence_ms, C.etcd_error[0] ? ": " : "", C.etcd_error);
	} else if (!C.watch_up && now - C.watch_down_ms > C.fence_ms) {
		f = FENCE_WATCH;
		snprintf(why, sizeof(why), "the watch on etcd is down for fence_after_ms (%u ms)",
		         C.fence_ms);
	} else if (!C.topo) {
		f = FENCE_NO_TOPOLOGY;
		snprintf(why, sizeof(why), "no topology published in etcd yet%s%.120s",
		         C.etcd_error[0] ? ": " : "", C.etcd_error);
	}
	if (f == C.fence && !strcmp(why, C.fence_why))
		return;
	if (f != C.fence) {
		if (f != FENCE_NONE && C.fence == FENCE_NONE)
			C.fences++;
		if (f != FENCE_NONE)
			log_warn("cluster: writes fenced on this host: %s", why);
		else
			log_info("cluster: writes steered again (topology epoch %" PRIu64
			         ", writer %s)",
			         C.epoch, C.topo_writer[0] ? C.topo_writer : "none");
	}
	C.fence = f;
	snprintf(C.fence_why, sizeof(C.fence_why), "%s", why);
	controller_refresh(C.ctl);
}

/* ---- the filter: what this host steers by ---- */

/* own[i]: what this host's probes see of backend i (NULL: unknown). */
static void apply(struct topology *t, const enum be_health *own)
{
	static const char *const roles[] = {"none", "writer", "reader"};
	static const char *const healths[] = {"unknown", "up", "down"};
	static const char *const admins[] = {"enabled", "drained", "disabled"};
	struct json_object *bs = NULL;

	t->writer = -1;
	if (!C.topo) {
		/* Nothing decided by the fleet yet: reads by this host's own
		 * probes, no writes. */
		for (size_t i = 0; i < t->nbackends; i++)
			if (t->backends[i].role == ROLE_WRITER)
				t->backends[i].role = ROLE_NONE;
	} else {
		json_object_object_get_ex(C.topo, "backends", &bs);
		for (size_t i = 0; i < t->nbackends; i++) {
			struct topo_backend *b = &t->backends[i];
			struct json_object *x = NULL;
			size_t n = bs ? json_object_array_length(bs) : 0;
			int v;

			for (size_t k = 0; k < n; k++) {
				struct json_object *y = json_object_array_get_idx(bs, k);
				const char *name = jstr(y, "name");
				if (name && !strcmp(name, b->name))
					x = y;
			}
			if (!x) {
				b->role = ROLE_NONE; /* the leader does not know it */
				continue;
			}
			v = parse_name(jstr(x, "role"), roles, 3);
			b->role = v < 0 ? ROLE_NONE : (enum be_role)v;
			v = parse_name(jstr(x, "health"), healths, 3);
			b->health = v < 0 ? HEALTH_UNKNOWN : (enum be_health)v;
			v = parse_name(jstr(x, "admin"), admins, 3);
			/* this host's own drain or disable still holds here */
			if (v > (int)b->admin)
				b->admin = (enum be_admin)v;
			if (b->role == ROLE_WRITER && C.topo_writer[0] &&
			    !strcmp(C.topo_writer, b->name))
				t->writer = (int)i;
			else if (b->role == ROLE_WRITER)
				b->role = ROLE_NONE;
			/* Up for the fleet, down from here: this host's reads go
			 * to the other readers (its writes stay: one writer). */
			struct seen *s = seen_of(b->name);
			bool unreachable = own && own[i] == HEALTH_DOWN && b->health == HEALTH_UP;
			if (unreachable && b->role != ROLE_WRITER) {
				b->role = ROLE_NONE;
				b->health = HEALTH_DOWN;
			}
			if (s && s->unreachable != unreachable) {
				s->unreachable = unreachable;
				if (unreachable)
					log_warn("cluster: %s is up for the fleet but down from "
					         "this host: %s",
					         b->name,
					         t->writer == (int)i
					             ? "it stays the writer (writes from here fail)"
					             : "this host's reads go to the other readers");
				else
					log_info("cluster: %s is reached from this host again",
					         b->name);
			}
		}
	}
	if (C.fence != FENCE_NONE && t->writer >= 0) {
		t->backends[t->writer].role = ROLE_NONE;
		t->writer = -1;
	}
	if (C.fence != FENCE_NONE)
		snprintf(t->fence, sizeof(t->fence), "%s", C.fence_why);
	else if (C.topo_writer[0] && t->writer < 0)
		snprintf(t->fence, sizeof(t->fence),
		         "the fleet's writer %.60s is not a backend here", C.topo_writer);
}

/* Some backend not probed enough yet to say up or down, shortly after this
 * host won the lead: that is not published (a restarted host that wins at
 * once would take the writer away from the fleet for `rise` probes). Only
 * for `rise` + 1 probe intervals and a timeout: a backend that stays
 * unknown (a refused probe) must not stop the leader from deciding. */
static bool unsettled(const struct topology *t)
{
	const struct config *cfg = C.d->cfg;
	uint64_t settle =
	    (uint64_t)(cfg->rise + 1) * (uint64_t)cfg->interval_ms + (uint64_t)cfg->timeout_ms;

	if (now_ms() - C.led_since_ms > settle)
		return false;
	for (size_t i = 0; i < t->nbackends; i++)
		if (t->backends[i].health == HEALTH_UNKNOWN &&
		    t->backends[i].admin == ADMIN_ENABLED)
			return true;
	return false;
}

static void filter(struct topology *t, void *arg)
{
	enum be_health *own = calloc(t->nbackends ? t->nbackends : 1, sizeof(*own));

	for (size_t i = 0; own && i < t->nbackends; i++)
		own[i] = t->backends[i].health;
	view_note(t);
	if (C.is_leader && C.fence != FENCE_SILENT && C.lease && !(C.topo && unsettled(t))) {
		char *d;
		/* what the rules took as up against this host's probes is
		 * published up: the fleet sees it up */
		for (size_t i = 0; i < t->nbackends; i++) {
			struct seen *s = seen_of(t->backends[i].name);
			if (t->backends[i].health == HEALTH_DOWN && s && s->held)
				t->backends[i].health = HEALTH_UP;
		}
		d = decision_text(t);
		if (d && (!C.decision || strcmp(d, C.decision) != 0) &&
		    (!C.want || strcmp(d, C.want) != 0)) {
			free(C.want);
			C.want = d;
			d = NULL;
		}
		free(d);
	}
	apply(t, own);
	free(own);
	if ((C.want && !C.publishing) || (C.view_want && !C.viewing))
		step();
}

/* ---- topology and leader from etcd ---- */

static void adopt_topology(const char *value, const char *from)
{
	struct json_object *j = json_tokener_parse(value), *x;
	int64_t epoch;
	const char *w;

	if (!j || !json_object_object_get_ex(j, "epoch", &x)) {
		log_warn("cluster: %s: not a topology (ignored)", C.k_topo);
		json_object_put(j);
		return;
	}
	epoch = json_object_get_int64(x);
	if (epoch <= 0 || (uint64_t)epoch <= C.epoch) {
		log_debug("cluster: topology epoch %" PRId64 " not newer than %" PRIu64
		          " (ignored)",
		          epoch, C.epoch);
		json_object_put(j);
		return;
	}
	w = jstr(j, "writer");
	if (strcmp(C.topo_writer, w ? w : ""))
		log_info("cluster: topology epoch %" PRId64 " (%s): writer %s -> %s", epoch, from,
		         C.topo_writer[0] ? C.topo_writer : "none", w ? w : "none");
	else
		log_info("cluster: topology epoch %" PRId64 " (%s): writer %s", epoch, from,
		         w ? w : "none");
	snprintf(C.topo_writer, sizeof(C.topo_writer), "%s", w ? w : "");
	json_object_put(C.topo);
	C.topo = j;
	C.epoch = (uint64_t)epoch;
	/* what it decided, to compare the leader's next decision with */
	struct json_object *d = json_object_new_object(), *v;
	free(C.decision);
	C.decision = NULL;
	if (d) {
		json_object_object_add(
		    d, "writer",
		    json_object_object_get_ex(j, "writer", &v) ? json_object_get(v) : NULL);
		if (json_object_object_get_ex(j, "readers", &v))
			json_object_object_add(d, "readers", json_object_get(v));
		if (json_object_object_get_ex(j, "backends", &v))
			json_object_object_add(d, "backends", json_object_get(v));
		C.decision = strdup(json_object_to_json_string_ext(d, JSON_C_TO_STRING_PLAIN));
		json_object_put(d);
	}
	fence_eval();
	controller_refresh(C.ctl);
}

static void set_leader(const char *who)
{
	bool was = C.is_leader;

	if (!strcmp(C.leader, who))
		return;
	snprintf(C.leader, sizeof(C.leader), "%s", who);
	C.is_leader = C.lease && !strcmp(who, C.host_id) && C.is_leader;
	if (was && !C.is_leader)
		log_warn("cluster: this host no longer leads (leader: %s)", who[0] ? who : "none");
	if (who[0] && strcmp(who, C.host_id))
		log_info("cluster: leader %s", who);
}

/* The leader key as of etcd revision rev; older than what is known:
 * ignored (the watch and the requests come back on two threads: a read may
 * be answered after a newer watch event). */
static void leader_at(const char *who, int64_t rev)
{
	if (rev < C.leader_rev)
		return;
	C.leader_rev = rev;
	set_leader(who);
}

/* One key as the watch or a read shows it as of etcd revision rev (mod:
 * the revision the key was last written at); value NULL: deleted. */
static void on_key(const char *key, const char *value, int64_t rev, int64_t mod)
{
	if (!strcmp(key, C.k_leader))
		leader_at(value ? value : "", rev);
	else if (!strcmp(key, C.k_topo) && value)
		adopt_topology(value, "etcd");
	else if (!strncmp(key, C.k_views, strlen(C.k_views)) && strcmp(key, C.k_myview) != 0 &&
	         key[strlen(C.k_views)])
		view_set(key + strlen(C.k_views), value, rev);
	else if (!strncmp(key, C.k_admin, strlen(C.k_admin)))
		admin_key(key + strlen(C.k_admin), value, mod);
}

static int64_t rev_of(struct json_object *o, const char *key)
{
	struct json_object *x;

	if (!o || !json_object_object_get_ex(o, key, &x))
		return 0;
	return json_object_get_int64(x); /* etcd's JSON gives int64 as strings */
}

/* The revision of a response's header. */
static int64_t header_rev(struct json_object *j)
{
	struct json_object *h;

	return j && json_object_object_get_ex(j, "header", &h) ? rev_of(h, "revision") : 0;
}

/* A kv object of etcd's JSON: key and value decoded; rev: what it is as of. */
static void on_kv(struct json_object *kv, bool deleted, int64_t rev)
{
	static char key[256], value[65536];
	const char *k = jstr(kv, "key"), *v = jstr(kv, "value");

	if (!k || etcd_unb64(k, key, sizeof(key)) < 0)
		return;
	if (!deleted && (!v || etcd_unb64(v, value, sizeof(value)) < 0)) {
		if (v)
			log_warn("cluster: %s: value too large or not base64 (ignored)", key);
		else
			on_key(key, "", rev, rev_of(kv, "mod_revision")); /* empty: not sent */
		return;
	}
	on_key(key, deleted ? NULL : value, rev, rev_of(kv, "mod_revision"));
}

/* ---- requests ---- */

static void request(enum tag tag, const char *path, const char *body, bool *flag)
{
	if (etcd_request(C.e, tag, path, body) < 0) {
		log_error("cluster: out of memory for an etcd request");
		return;
	}
	if (flag)
		*flag = true;
}

static void campaign(void)
{
	char body[1024];

	snprintf(
	    body, sizeof(body),
	    "{\"compare\":[{\"key\":\"%s\",\"target\":\"CREATE\",\"result\":\"EQUAL\","
	    "\"create_revision\":\"0\"}],"
	    "\"success\":[{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\",\"lease\":\"%" PRId64
	    "\"}}],"
	    "\"failure\":[{\"request_range\":{\"key\":\"%s\"}}]}",
	    C.b64_leader, C.b64_leader, C.b64_host, C.lease, C.b64_leader);
	request(TAG_CAMPAIGN, "/v3/kv/txn", body, &C.campaigning);
}

static void publish(void)
{
	struct json_object *j = json_tokener_parse(C.want);
	char *k = NULL, *v = NULL, *body = NULL;
	const char *text;
	size_t len;

	if (!j)
		return;
	json_object_object_add(j, "epoch", json_object_new_int64((int64_t)C.epoch + 1));
	json_object_object_add(j, "leader", json_object_new_string(C.host_id));
	text = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN);
	free(C.pub);
	C.pub = strdup(text);
	k = etcd_b64(C.k_topo, strlen(C.k_topo));
	v = etcd_b64(text, strlen(text));
	len = (k ? strlen(k) : 0) + (v ? strlen(v) : 0) + 2 * strlen(C.b64_leader) +
	      strlen(C.b64_host) + 512;
	body = malloc(len);
	if (!k || !v || !body || !C.pub) {
		log_error("cluster: out of memory publishing the topology");
		goto out;
	}
	/* Only while this host still holds the leader key. */
	snprintf(body, len,
	         "{\"compare\":[{\"key\":\"%s\",\"target\":\"VALUE\",\"result\":\"EQUAL\","
	         "\"value\":\"%s\"}],"
	         "\"success\":[{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\"}}],"
	         "\"failure\":[{\"request_range\":{\"key\":\"%s\"}}]}",
	         C.b64_leader, C.b64_host, k, v, C.b64_leader);
	request(TAG_PUBLISH, "/v3/kv/txn", body, &C.publishing);
out:
	json_object_put(j);
	free(k);
	free(v);
	free(body);
}

static void read_all(void)
{
	char body[512];
	char *k = etcd_b64(C.k_prefix, strlen(C.k_prefix)), *e = etcd_b64(C.k_end, strlen(C.k_end));

	if (k && e) {
		snprintf(body, sizeof(body), "{\"key\":\"%s\",\"range_end\":\"%s\"}", k, e);
		request(TAG_READ, "/v3/kv/range", body, &C.reading);
	}
	free(k);
	free(e);
}

/* What is due now: a lease, its renewal, a campaign, a publish. */
static void step(void)
{
	uint64_t now = now_ms();
	char body[128];

	if (!C.lease && !C.granting) {
		snprintf(body, sizeof(body), "{\"TTL\":%u}", (C.lease_ms + 999) / 1000);
		request(TAG_GRANT, "/v3/lease/grant", body, &C.granting);
	}
	if (C.lease && !C.keeping && now - C.keep_sent_ms >= C.lease_ms / 3) {
		snprintf(body, sizeof(body), "{\"ID\":\"%" PRId64 "\"}", C.lease);
		C.keep_sent_ms = now;
		request(TAG_KEEPALIVE, "/v3/lease/keepalive", body, &C.keeping);
	}
	if (C.lease && !C.leader[0] && !C.campaigning && C.watch_up && !C.reading)
		campaign();
	if (C.is_leader && C.want && !C.publishing && C.fence != FENCE_SILENT)
		publish();
	if (C.lease && !C.viewing && C.view_put && !C.view_want &&
	    (C.view_lease != C.lease || now - C.view_at_ms >= VIEW_REFRESH_MS)) {
		C.view_want = C.view_put; /* put again */
		C.view_put = NULL;
	}
	if (C.lease && C.view_want && !C.viewing)
		view_put();
	/* followers probe less often (the views); the leader at interval_ms */
	int iv = C.is_leader ? 0 : (int)C.follower_ms;
	if (iv != C.interval_set) {
		C.interval_set = iv;
		controller_set_interval(C.ctl, iv);
	}
}

static void etcd_failed(const struct etcd_reply *r)
{
	if (!C.error_logged || strcmp(C.etcd_error, r->error))
		log_warn("cluster: etcd: %s", r->error);
	C.error_logged = true;
	snprintf(C.etcd_error, sizeof(C.etcd_error), "%s", r->error);
}

static void etcd_ok(void)
{
	if (C.error_logged)
		log_info("cluster: etcd answers again");
	C.error_logged = false;
	C.etcd_error[0] = '\0';
}

static struct json_object *response0(struct json_object *j, const char *kind)
{
	struct json_object *rs, *r0, *x;
	if (!json_object_object_get_ex(j, "responses", &rs) ||
	    !(r0 = json_object_array_get_idx(rs, 0)) || !json_object_object_get_ex(r0, kind, &x))
		return NULL;
	return x;
}

/* The keys of a range answered as of etcd revision rev; whole_prefix: a key
 * it does not hold was deleted. */
static void kvs_of(struct json_object *range, bool whole_prefix, int64_t rev)
{
	struct json_object *kvs;
	bool leader_seen = false;
	bool *seen = calloc(C.nviews ? C.nviews : 1, sizeof(*seen));
	size_t n, nv = C.nviews;

	if (range && json_object_object_get_ex(range, "kvs", &kvs)) {
		n = json_object_array_length(kvs);
		for (size_t i = 0; i < n; i++) {
			struct json_object *kv = json_object_array_get_idx(kvs, i);
			char key[256];
			const char *k = jstr(kv, "key");
			if (k && etcd_unb64(k, key, sizeof(key)) >= 0) {
				leader_seen |= !strcmp(key, C.k_leader);
				for (size_t v = 0; seen && v < nv; v++)
					seen[v] |=
					    !strncmp(key, C.k_views, strlen(C.k_views)) &&
					    !strcmp(key + strlen(C.k_views), C.views[v].host);
			}
			on_kv(kv, false, rev);
		}
	}
	if (!leader_seen && whole_prefix)
		leader_at("", rev);
	for (size_t v = 0; whole_prefix && seen && v < nv; v++)
		if (!seen[v] && C.views[v].j)
			view_set(C.views[v].host, NULL, rev);
	free(seen);
}

static void on_reply(const struct etcd_reply *r)
{
	const char *s;

	switch ((enum tag)r->tag) {
	case TAG_GRANT:
		C.granting = false;
		if (!r->ok || !(s = jstr(r->json, "ID"))) {
			etcd_failed(r);
			break;
		}
		etcd_ok();
		C.lease = strtoll(s, NULL, 10);
		C.heard_ms = r->sent_ms;
		C.keep_sent_ms = r->sent_ms;
		C.ever_heard = true;
		log_info("cluster: lease %" PRId64 " granted by %s (%u s)", C.lease, r->endpoint,
		         (C.lease_ms + 999) / 1000);
		break;
	case TAG_KEEPALIVE: {
		struct json_object *res;
		C.keeping = false;
		if (!r->ok || !json_object_object_get_ex(r->json, "result", &res)) {
			etcd_failed(r);
			break;
		}
		etcd_ok();
		if (!jstr(res, "TTL") || !strcmp(jstr(res, "TTL"), "0")) {
			log_warn("cluster: lease %" PRId64
			         " expired (etcd was not reached in time)",
			         C.lease);
			C.lease = 0;
			if (C.is_leader)
				log_warn("cluster: this host no longer leads (its lease expired)");
			C.is_leader = false;
			if (!strcmp(C.leader, C.host_id))
				C.leader[0] = '\0';
			break;
		}
		if (r->sent_ms > C.heard_ms)
			C.heard_ms = r->sent_ms;
		break;
	}
	case TAG_CAMPAIGN:
		C.campaigning = false;
		if (!r->ok) {
			etcd_failed(r);
			break;
		}
		etcd_ok();
		if (json_object_get_boolean(json_object_object_get(r->json, "succeeded"))) {
			C.is_leader = true;
			C.led_since_ms = now_ms();
			snprintf(C.leader, sizeof(C.leader), "%s", C.host_id);
			log_info("cluster: this host leads %s (epoch %" PRIu64 ", writer %s)",
			         C.name, C.epoch, C.topo_writer[0] ? C.topo_writer : "none");
			if (C.topo_writer[0])
				controller_hint_writer(C.ctl, C.topo_writer);
			controller_refresh(C.ctl);
		} else {
			kvs_of(response0(r->json, "response_range"), false, header_rev(r->json));
		}
		break;
	case TAG_PUBLISH:
		C.publishing = false;
		if (!r->ok) {
			etcd_failed(r);
			break;
		}
		etcd_ok();
		if (json_object_get_boolean(json_object_object_get(r->json, "succeeded"))) {
			/* adopted now (unless the watch brought it first) */
			if (C.pub)
				adopt_topology(C.pub, "published here");
			if (C.want && C.decision && !strcmp(C.want, C.decision)) {
				free(C.want);
				C.want = NULL;
			}
		} else {
			log_warn("cluster: not published: this host no longer holds %s",
			         C.k_leader);
			C.is_leader = false;
			kvs_of(response0(r->json, "response_range"), false, header_rev(r->json));
			if (!strcmp(C.leader, C.host_id))
				C.leader[0] = '\0';
			free(C.want);
			C.want = NULL;
		}
		break;
	case TAG_ADMIN:
		if (!r->ok) {
			log_warn("cluster: an admin command did not reach the fleet: %s", r->error);
			etcd_failed(r);
		}
		break;
	case TAG_VIEW:
		C.viewing = false;
		if (!r->ok) {
			etcd_failed(r);
			C.view_lease = 0; /* put again */
			break;
		}
		etcd_ok();
		break;
	case TAG_READ:
		C.reading = false;
		if (!r->ok) {
			etcd_failed(r);
			break;
		}
		etcd_ok();
		kvs_of(r->json, true, header_rev(r->json));
		break;
	}
	fence_eval();
	step();
}

static void on_etcd(void *arg, const struct etcd_reply *r)
{
	struct json_object *evs;
	size_t n;

	switch (r->kind) {
	case ETCD_REPLY:
		on_reply(r);
		return;
	case ETCD_WATCH_UP:
		log_info("cluster: watching %s on %s", C.k_prefix, r->endpoint);
		C.watch_up = true;
		read_all(); /* what changed while it was down */
		break;
	case ETCD_WATCH_DOWN:
		if (C.watch_up)
			log_warn("cluster: the watch on etcd is down: %s", r->error);
		if (C.watch_up)
			C.watch_down_ms = now_ms();
		C.watch_up = false;
		break;
	case ETCD_WATCH_EVENT:
		if (!json_object_object_get_ex(r->json, "events", &evs))
			break;
		n = json_object_array_length(evs);
		for (size_t i = 0; i < n; i++) {
			struct json_object *ev = json_object_array_get_idx(evs, i), *kv;
			const char *type = jstr(ev, "type");
			if (json_object_object_get_ex(ev, "kv", &kv))
				on_kv(kv, type && !strcmp(type, "DELETE"),
				      rev_of(kv, "mod_revision") ? rev_of(kv, "mod_revision")
				                                 : header_rev(r->json));
		}
		break;
	}
	fence_eval();
	step();
}

static void on_tick(struct evloop *l, uint64_t id, void *arg)
{
	C.tick = evloop_add_timer(l, C.tick_ms, on_tick, NULL);
	if (!C.tick)
		log_error("cluster: no timer: the lease is not renewed");
	/* A renewal stuck on a member that does not answer: the watch on it is
	 * likely stuck too. */
	if (C.fence == FENCE_SILENT && C.watch_up && !C.watch_restarted) {
		etcd_watch_restart(C.e);
		C.watch_restarted = true;
	}
	if (C.fence != FENCE_SILENT)
		C.watch_restarted = false;
	fence_eval();
	step();
}

/* ---- the service ---- */

static void collect(struct metrics *m, void *arg)
{
	if (!C.on)
		return;
	metric_set(metric_series(CM.leader, NULL), C.is_leader ? 1 : 0);
	metric_set(metric_series(CM.fenced, NULL), C.fence != FENCE_NONE ? 1 : 0);
	metric_set(metric_series(CM.epoch, NULL), (double)C.epoch);
	metric_set(metric_series(CM.fences, NULL), (double)C.fences);
	metric_set(metric_series(CM.views, NULL), (double)live_views());
	for (size_t i = 0; i < C.nseen; i++)
		metric_set(metric_at(CM.unreachable, C.seen[i].name),
		           C.seen[i].unreachable ? 1 : 0);
}

static void register_metrics(void)
{
	static bool done;
	static const char *const backend[] = {"backend", NULL};
	const struct metric_def defs[] = {
	    {&CM.leader, METRIC_GAUGE, "mysteer_cluster_leader",
	     "1 while this host leads the fleet", NULL},
	    {&CM.fenced, METRIC_GAUGE, "mysteer_cluster_fenced",
	     "1 while this host steers no writes (etcd not heard, no lease, no topology)", NULL},
	    {&CM.epoch, METRIC_GAUGE, "mysteer_cluster_epoch",
	     "Epoch of the fleet's topology this host steers by", NULL},
	    {&CM.fences, METRIC_COUNTER, "mysteer_cluster_fences_total",
	     "Times this host began to fence writes", NULL},
	    {&CM.views, METRIC_GAUGE, "mysteer_cluster_views",
	     "Other hosts whose view of the backends this host holds (live hosts)", NULL},
	    {&CM.unreachable, METRIC_GAUGE, "mysteer_cluster_local_unreachable",
	     "1 while the backend is up for the fleet but down from this host (its reads go "
	     "elsewhere)",
	     backend},
	};

	if (!done)
		done = metrics_register(defs, sizeof(defs) / sizeof(defs[0]), collect, NULL);
}

static void cl_stop(struct daemon_ctx *d, bool keep);

static int cl_start(struct daemon_ctx *d, char *err, size_t errlen)
{
	const struct config *cfg = d->cfg;
	unsigned timeout;

	memset(&C, 0, sizeof(C));
	if (!cfg->cluster)
		return 0;
	C.on = true;
	C.d = d;
	C.ctl = d->controller;
	snprintf(C.host_id, sizeof(C.host_id), "%s", cfg->cluster_host_id);
	snprintf(C.name, sizeof(C.name), "%s", cfg->cluster_name);
	snprintf(C.k_prefix, sizeof(C.k_prefix), "/mysteer/%s/", C.name);
	etcd_prefix_end(C.k_prefix, C.k_end, sizeof(C.k_end));
	snprintf(C.k_leader, sizeof(C.k_leader), "%sleader", C.k_prefix);
	snprintf(C.k_topo, sizeof(C.k_topo), "%stopology", C.k_prefix);
	snprintf(C.k_views, sizeof(C.k_views), "%sviews/", C.k_prefix);
	snprintf(C.k_myview, sizeof(C.k_myview), "%s%s", C.k_views, C.host_id);
	snprintf(C.k_admin, sizeof(C.k_admin), "%sadmin/", C.k_prefix);
	C.follower_ms = (unsigned)cfg->cluster_follower_interval_ms;
	C.interval_set = -1;
	C.lease_ms = (unsigned)cfg->cluster_lease_ms;
	C.fence_ms = (unsigned)cfg->cluster_fence_after_ms;
	C.tick_ms = (C.lease_ms < C.fence_ms ? C.lease_ms : C.fence_ms) / 10;
	C.tick_ms = C.tick_ms < 20 ? 20 : C.tick_ms > 200 ? 200 : C.tick_ms;
	C.fence = FENCE_NO_LEASE;
	snprintf(C.fence_why, sizeof(C.fence_why), "no lease from etcd yet");
	C.watch_down_ms = now_ms();
	C.b64_leader = etcd_b64(C.k_leader, strlen(C.k_leader));
	C.b64_host = etcd_b64(C.host_id, strlen(C.host_id));
	if (!C.b64_leader || !C.b64_host) {
		snprintf(err, errlen, "cluster: out of memory");
		goto fail;
	}
	timeout = C.lease_ms / 3;
	timeout = timeout < 200 ? 200 : timeout > 2000 ? 2000 : timeout;
	C.e = etcd_new(d->loop, cfg->cluster_etcd, timeout, on_etcd, NULL, err, errlen);
	if (!C.e)
		goto fail;
	if (cfg->cluster_user[0] && etcd_auth(C.e, cfg->cluster_user, cfg->cluster_password) < 0) {
		snprintf(err, errlen, "cluster: out of memory");
		goto fail;
	}
	if (etcd_watch(C.e, C.k_prefix, C.k_end) < 0) {
		snprintf(err, errlen, "cluster: cannot start the watch");
		goto fail;
	}
	C.tick = evloop_add_timer(d->loop, C.tick_ms, on_tick, NULL);
	if (!C.tick) {
		snprintf(err, errlen, "cluster: no timer");
		goto fail;
	}
	controller_set_filter(C.ctl, filter, NULL);
	controller_set_vote(C.ctl, vote, NULL);
	d->fleet_admin = fleet_admin;
	register_metrics();
	log_info("cluster: %s as host %s, etcd %s%s%s, lease %u ms, fence after %u ms; writes "
	         "fenced until etcd answers",
	         C.name, C.host_id, cfg->cluster_etcd, cfg->cluster_user[0] ? " as user " : "",
	         cfg->cluster_user, C.lease_ms, C.fence_ms);
	step();
	return 0;
fail:
	cl_stop(d, false);
	return -1;
}

static void cl_stop(struct daemon_ctx *d, bool keep)
{
	if (!C.on)
		return;
	d->fleet_admin = NULL;
	if (C.ctl) {
		controller_set_filter(C.ctl, NULL, NULL);
		controller_set_vote(C.ctl, NULL, NULL);
		controller_set_interval(C.ctl, 0);
	}
	if (C.tick)
		evloop_del_timer(d->loop, C.tick);
	/* The lease given back: the leader key goes with it, so another host
	 * leads now rather than when the lease would have expired. */
	if (C.e && C.lease) {
		char body[64], err[192];

		snprintf(body, sizeof(body), "{\"ID\":\"%" PRId64 "\"}", C.lease);
		if (etcd_post_now(C.e, "/v3/lease/revoke", body, REVOKE_TIMEOUT_MS, err,
		                  sizeof(err)) == 0)
			log_info("cluster: lease %" PRId64 " given back%s", C.lease,
			         C.is_leader ? ": another host may lead now" : "");
		else
			log_warn("cluster: lease %" PRId64 " not given back (it expires): %s",
			         C.lease, err);
	}
	etcd_free(C.e);
	free(C.b64_leader);
	free(C.b64_host);
	free(C.want);
	free(C.pub);
	free(C.decision);
	json_object_put(C.topo);
	for (size_t i = 0; i < C.nviews; i++)
		json_object_put(C.views[i].j);
	free(C.views);
	free(C.view_want);
	free(C.view_put);
	memset(&C, 0, sizeof(C));
}

/* [cluster] changes take effect at the next start: the reload says so for
 * each key (admin_reload, config_restart_keys). */
static void cl_reload(struct daemon_ctx *d, const struct config *cfg)
{
}

static void cl_status(struct json_object *root)
{
	struct json_object *o;

	if (!C.on)
		return;
	o = json_object_new_object();
	if (!o)
		return;
	json_object_object_add(o, "name", json_object_new_string(C.name));
	json_object_object_add(o, "host_id", json_object_new_string(C.host_id));
	json_object_object_add(o, "leader", C.leader[0] ? json_object_new_string(C.leader) : NULL);
	json_object_object_add(o, "role",
	                       json_object_new_string(C.is_leader ? "leader" : "follower"));
	json_object_object_add(o, "epoch", json_object_new_int64((int64_t)C.epoch));
	json_object_object_add(o, "writer",
	                       C.topo_writer[0] ? json_object_new_string(C.topo_writer) : NULL);
	json_object_object_add(o, "fenced", json_object_new_boolean(C.fence != FENCE_NONE));
	json_object_object_add(o, "fence_reason",
	                       C.fence != FENCE_NONE ? json_object_new_string(C.fence_why) : NULL);
	json_object_object_add(o, "lease", json_object_new_int64(C.lease));
	json_object_object_add(o, "etcd_error",
	                       C.etcd_error[0] ? json_object_new_string(C.etcd_error) : NULL);
	json_object_object_add(o, "watch", json_object_new_boolean(C.watch_up));
	json_object_object_add(o, "follower_interval_ms", json_object_new_int((int)C.follower_ms));
	struct json_object *un = json_object_new_array(), *held = json_object_new_array(),
	                   *vs = json_object_new_array();
	for (size_t i = 0; i < C.nseen; i++) {
		if (un && C.seen[i].unreachable)
			json_object_array_add(un, json_object_new_string(C.seen[i].name));
		if (held && C.seen[i].held && C.is_leader)
			json_object_array_add(held, json_object_new_string(C.seen[i].name));
	}
	for (size_t i = 0; vs && i < C.nviews; i++) {
		if (!C.views[i].j)
			continue;
		struct json_object *v = json_object_new_object(), *down = json_object_new_array(),
		                   *bs, *t;
		if (!v || !down) {
			json_object_put(v);
			json_object_put(down);
			continue;
		}
		json_object_object_add(v, "host", json_object_new_string(C.views[i].host));
		if (json_object_object_get_ex(C.views[i].j, "time", &t))
			json_object_object_add(
			    v, "age_ms",
			    json_object_new_int64(wall_ms() - json_object_get_int64(t)));
		if (json_object_object_get_ex(C.views[i].j, "backends", &bs) &&
		    json_object_is_type(bs, json_type_array))
			for (size_t k = 0; k < json_object_array_length(bs); k++) {
				const char *n = jstr(json_object_array_get_idx(bs, k), "name");
				if (n && views_health_of(C.views[i].j, n) == HEALTH_DOWN)
					json_object_array_add(down, json_object_new_string(n));
			}
		json_object_object_add(v, "down", down);
		json_object_array_add(vs, v);
	}
	json_object_object_add(o, "local_unreachable", un);
	json_object_object_add(o, "held_up", held);
	json_object_object_add(o, "views", vs);
	json_object_object_add(root, "cluster", o);
}

const struct service_ops cluster_service = {
    .name = "cluster",
    .start = cl_start,
    .reload = cl_reload,
    .stop = cl_stop,
    .status_json = cl_status,
};
