/*
 * state.c - the runtime overlay (see state.h): edits, JSON load/save with
 * json-c, and application on top of the config.
 *
 * File format (one object, written whole each time):
 *   {"version":1,"backends":[
 *     {"name":"db4","added":true,"host":"127.0.0.1","port":3309,
 *      "priority":100,"weight":1},
 *     {"name":"db2","removed":true},
 *     {"name":"db3","priority":50,"admin":"drained"}],
 *    "runtime":{"writer":"db2","backends":[
 *     {"name":"db1","host":"127.0.0.1","port":3306,"id":0,"demoted":true},
 *     {"name":"db2","host":"127.0.0.1","port":3307,"id":1}]}}
 * "runtime" is optional (files of earlier versions have none).
 */
#define _GNU_SOURCE /* mkostemp */
#include "config/state.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/io.h"

#define STATE_VERSION 1

static const char *const admin_names[] = {"enabled", "drained", "disabled"};

static int errf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

void state_init(struct state_overlay *ov)
{
	ov->changes = NULL;
	ov->n = 0;
	memset(&ov->rt, 0, sizeof(ov->rt));
}

static void free_changes(struct state_overlay *ov)
{
	free(ov->changes);
	ov->changes = NULL;
	ov->n = 0;
}

void state_free(struct state_overlay *ov)
{
	free_changes(ov);
	free(ov->rt.b);
	state_init(ov);
}

int state_set_runtime(struct state_overlay *ov, const struct state_runtime *rt)
{
	struct state_runtime_backend *b = NULL;

	if (rt->n && !(b = malloc(rt->n * sizeof(*b))))
		return -1;
	if (rt->n)
		memcpy(b, rt->b, rt->n * sizeof(*b));
	free(ov->rt.b);
	ov->rt = *rt;
	ov->rt.b = b;
	return 0;
}

static struct state_change *find_mut(struct state_overlay *ov, const char *name)
{
	for (size_t i = 0; i < ov->n; i++)
		if (!strcmp(ov->changes[i].name, name))
			return &ov->changes[i];
	return NULL;
}

const struct state_change *state_find(const struct state_overlay *ov, const char *name)
{
	return find_mut((struct state_overlay *)ov, name);
}

static struct state_change *append(struct state_overlay *ov, const char *name)
{
	struct state_change *a = realloc(ov->changes, (ov->n + 1) * sizeof(*a));

	if (!a)
		return NULL;
	ov->changes = a;
	a = &ov->changes[ov->n++];
	memset(a, 0, sizeof(*a));
	snprintf(a->name, sizeof(a->name), "%s", name);
	return a;
}

static void drop(struct state_overlay *ov, struct state_change *ch)
{
	size_t i = (size_t)(ch - ov->changes);

	memmove(&ov->changes[i], &ov->changes[i + 1], (ov->n - i - 1) * sizeof(*ch));
	ov->n--;
}

/* An entry that changes nothing is dropped, so `enable` after `drain` leaves
 * no trace in the file. */
static void drop_if_empty(struct state_overlay *ov, struct state_change *ch)
{
	if (!ch->added && !ch->removed && !ch->has_priority && !ch->has_weight && !ch->has_admin)
		drop(ov, ch);
}

static bool exists(const struct state_overlay *ov, const struct config *c, const char *name)
{
	const struct state_change *ch = state_find(ov, name);

	if (ch && (ch->added || ch->removed))
		return ch->added;
	return config_find_backend(c, name) != NULL;
}

static int check_value(const char *what, int v, int max, char *err, size_t errlen)
{
	if (v < 0 || v > max)
		return errf(err, errlen, "bad %s %d (want 0..%d)", what, v, max);
	return 0;
}

int state_add(struct state_overlay *ov, const struct config *c, const char *name, const char *host,
              uint16_t port, int priority, int weight, char *err, size_t errlen)
{
	struct state_change *ch;

	if (!config_valid_name(name))
		return errf(err, errlen, "bad backend name \"%s\"", name);
	if (!host[0] || strlen(host) >= TOPO_HOST_MAX)
		return errf(err, errlen, "bad host \"%s\"", host);
	if (!port)
		return errf(err, errlen, "bad port 0");
	if (priority < 0)
		priority = CONFIG_DEFAULT_PRIORITY;
	if (weight < 0)
		weight = CONFIG_DEFAULT_WEIGHT;
	if (check_value("priority", priority, CONFIG_PRIORITY_MAX, err, errlen) ||
	    check_value("weight", weight, CONFIG_WEIGHT_MAX, err, errlen))
		return -1;
	if (exists(ov, c, name))
		return errf(err, errlen, "backend \"%s\" exists", name);
	ch = find_mut(ov, name);
	if (!ch && !(ch = append(ov, name)))
		return errf(err, errlen, "out of memory");
	memset(ch, 0, sizeof(*ch));
	snprintf(ch->name, sizeof(ch->name), "%s", name);
	ch->added = true;
	snprintf(ch->host, sizeof(ch->host), "%s", host);
	ch->port = port;
	ch->has_priority = ch->has_weight = true;
	ch->priority = priority;
	ch->weight = weight;
	return 0;
}

int state_remove(struct state_overlay *ov, const struct config *c, const char *name, char *err,
                 size_t errlen)
{
	struct state_change *ch;

	if (!exists(ov, c, name))
		return errf(err, errlen, "unknown backend \"%s\"", name);
	ch = find_mut(ov, name);
	if (ch && !config_find_backend(c, name)) {
		drop(ov, ch); /* added at runtime only: forget it */
		return 0;
	}
	if (!ch && !(ch = append(ov, name)))
		return errf(err, errlen, "out of memory");
	memset(ch, 0, sizeof(*ch));
	snprintf(ch->name, sizeof(ch->name), "%s", name);
	ch->removed = true;
	return 0;
}

static struct state_change *editable(struct state_overlay *ov, const struct config *c,
                                     const char *name, char *err, size_t errlen)
{
	struct state_change *ch;

	if (!exists(ov, c, name)) {
		errf(err, errlen, "unknown backend \"%s\"", name);
		return NULL;
	}
	ch = find_mut(ov, name);
	if (!ch && !(ch = append(ov, name)))
		errf(err, errlen, "out of memory");
	return ch;
}

int state_set(struct state_overlay *ov, const struct config *c, const char *name, int priority,
              int weight, char *err, size_t errlen)
{
	struct state_change *ch;

	if (priority < 0 && weight < 0)
		return errf(err, errlen, "set: nothing to change");
	if ((priority >= 0 &&
	     check_value("priority", priority, CONFIG_PRIORITY_MAX, err, errlen)) ||
	    (weight >= 0 && check_value("weight", weight, CONFIG_WEIGHT_MAX, err, errlen)))
		return -1;
	ch = editable(ov, c, name, err, errlen);
	if (!ch)
		return -1;
	if (priority >= 0) {
		ch->has_priority = true;
		ch->priority = priority;
	}
	if (weight >= 0) {
		ch->has_weight = true;
		ch->weight = weight;
	}
	return 0;
}

int state_set_admin(struct state_overlay *ov, const struct config *c, const char *name,
                    enum be_admin admin, char *err, size_t errlen)
{
	struct state_change *ch;

	if ((unsigned)admin > ADMIN_DISABLED)
		return errf(err, errlen, "bad admin state %d", (int)admin);
	ch = editable(ov, c, name, err, errlen);
	if (!ch)
		return -1;
	/* Every config backend starts enabled: enabling is dropping the change. */
	ch->has_admin = admin != ADMIN_ENABLED;
	ch->admin = admin;
	drop_if_empty(ov, ch);
	return 0;
}

size_t state_reset(struct state_overlay *ov, const char *name)
{
	struct state_change *ch;
	size_t n = ov->n;

	if (!name) {
		free_changes(ov);
		return n;
	}
	ch = find_mut(ov, name);
	if (!ch)
		return 0;
	drop(ov, ch);
	return 1;
}

static void apply_change(struct state_backend *b, const struct state_change *ch)
{
	if (ch->added) {
		snprintf(b->cfg.host, sizeof(b->cfg.host), "%s", ch->host);
		b->cfg.port = ch->port;
	}
	if (ch->has_priority)
		b->cfg.priority = ch->priority;
	if (ch->has_weight)
		b->cfg.weight = ch->weight;
	if (ch->has_admin)
		b->admin = ch->admin;
}

int state_apply(const struct config *c, const struct state_overlay *ov, struct state_backend **out,
                size_t *nout)
{
	struct state_backend *v = calloc(c->nbackends + ov->n + 1, sizeof(*v));
	size_t n = 0;

	if (!v)
		return -1;
	for (size_t i = 0; i < c->nbackends; i++) {
		const struct state_change *ch = state_find(ov, c->backends[i].name);

		if (ch && ch->removed)
			continue;
		v[n].cfg = c->backends[i];
		v[n].admin = ADMIN_ENABLED;
		if (ch) {
			apply_change(&v[n], ch);
			v[n].runtime_added = ch->added;
		}
		n++;
	}
	for (size_t i = 0; i < ov->n; i++) {
		const struct state_change *ch = &ov->changes[i];

		if (!ch->added || config_find_backend(c, ch->name))
			continue; /* a config backend: handled above */
		snprintf(v[n].cfg.name, sizeof(v[n].cfg.name), "%s", ch->name);
		v[n].cfg.priority = CONFIG_DEFAULT_PRIORITY;
		v[n].cfg.weight = CONFIG_DEFAULT_WEIGHT;
		v[n].admin = ADMIN_ENABLED;
		v[n].runtime_added = true;
		apply_change(&v[n], ch);
		n++;
	}
	*out = v;
	*nout = n;
	return 0;
}

/* ---- JSON ---- */

static json_object *change_to_json(const struct state_change *ch)
{
	json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_object_object_add(o, "name", json_object_new_string(ch->name));
	if (ch->added) {
		json_object_object_add(o, "added", json_object_new_boolean(1));
		json_object_object_add(o, "host", json_object_new_string(ch->host));
		json_object_object_add(o, "port", json_object_new_int(ch->port));
	}
	if (ch->removed)
		json_object_object_add(o, "removed", json_object_new_boolean(1));
	if (ch->has_priority)
		json_object_object_add(o, "priority", json_object_new_int(ch->priority));
	if (ch->has_weight)
		json_object_object_add(o, "weight", json_object_new_int(ch->weight));
	if (ch->has_admin)
		json_object_object_add(o, "admin", json_object_new_string(admin_names[ch->admin]));
	return o;
}

/* Reads an optional integer key in [min, max]; -1 bad, 0 absent, 1 set. */
static int get_int(json_object *o, const char *key, int min, int max, int *out)
{
	json_object *v;
	int64_t x;

	if (!json_object_object_get_ex(o, key, &v))
		return 0;
	if (!json_object_is_type(v, json_type_int))
		return -1;
	x = json_object_get_int64(v);
	if (x < min || x > max)
		return -1;
	*out = (int)x;
	return 1;
}

static int get_bool(json_object *o, const char *key, bool *out)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v))
		return 0;
	if (!json_object_is_type(v, json_type_boolean))
		return -1;
	*out = json_object_get_boolean(v);
	return 1;
}

static int change_from_json(json_object *o, struct state_change *ch, char *why, size_t whylen)
{
	json_object *v;
	const char *s;
	int port = 0, r;

	memset(ch, 0, sizeof(*ch));
	if (!json_object_is_type(o, json_type_object))
		return errf(why, whylen, "entry is not an object");
	if (!json_object_object_get_ex(o, "name", &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    !config_valid_name(json_object_get_string(v)))
		return errf(why, whylen, "entry without a valid \"name\"");
	snprintf(ch->name, sizeof(ch->name), "%s", json_object_get_string(v));
	if (get_bool(o, "added", &ch->added) < 0 || get_bool(o, "removed", &ch->removed) < 0)
		return errf(why, whylen, "%s: \"added\"/\"removed\" must be booleans", ch->name);
	if (ch->added && ch->removed)
		return errf(why, whylen, "%s: both added and removed", ch->name);
	if (ch->added) {
		if (!json_object_object_get_ex(o, "host", &v) ||
		    !json_object_is_type(v, json_type_string) ||
		    !*(s = json_object_get_string(v)) || strlen(s) >= sizeof(ch->host))
			return errf(why, whylen, "%s: added without a valid \"host\"", ch->name);
		snprintf(ch->host, sizeof(ch->host), "%s", s);
		if (get_int(o, "port", 1, 65535, &port) != 1)
			return errf(why, whylen, "%s: added without a valid \"port\"", ch->name);
		ch->port = (uint16_t)port;
	}
	r = get_int(o, "priority", 0, CONFIG_PRIORITY_MAX, &ch->priority);
	if (r < 0)
		return errf(why, whylen, "%s: bad \"priority\"", ch->name);
	ch->has_priority = r;
	r = get_int(o, "weight", 0, CONFIG_WEIGHT_MAX, &ch->weight);
	if (r < 0)
		return errf(why, whylen, "%s: bad \"weight\"", ch->name);
	ch->has_weight = r;
	if (json_object_object_get_ex(o, "admin", &v)) {
		s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
		for (size_t i = 0; i < 3; i++)
			if (!strcmp(s, admin_names[i])) {
				ch->admin = (enum be_admin)i;
				ch->has_admin = true;
			}
		if (!ch->has_admin)
			return errf(why, whylen,
			            "%s: bad \"admin\" (want enabled, drained, "
			            "disabled)",
			            ch->name);
	}
	return 0;
}

static int runtime_from_json(json_object *o, struct state_runtime *rt, char *why, size_t whylen)
{
	json_object *v, *arr;
	size_t n;

	if (!json_object_is_type(o, json_type_object))
		return errf(why, whylen, "\"runtime\" is not an object");
	if (json_object_object_get_ex(o, "writer", &v)) {
		if (!json_object_is_type(v, json_type_string) ||
		    (*json_object_get_string(v) && !config_valid_name(json_object_get_string(v))))
			return errf(why, whylen, "runtime: bad \"writer\"");
		snprintf(rt->writer, sizeof(rt->writer), "%s", json_object_get_string(v));
	}
	if (!json_object_object_get_ex(o, "backends", &arr))
		return 0;
	if (!json_object_is_type(arr, json_type_array))
		return errf(why, whylen, "runtime: \"backends\" is not an array");
	n = json_object_array_length(arr);
	if (n && !(rt->b = calloc(n, sizeof(*rt->b))))
		return errf(why, whylen, "out of memory");
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(arr, i);
		struct state_runtime_backend *b = &rt->b[rt->n];
		const char *s;
		int port = 0, id = 0;

		if (!json_object_is_type(e, json_type_object) ||
		    !json_object_object_get_ex(e, "name", &v) ||
		    !json_object_is_type(v, json_type_string) ||
		    !config_valid_name(json_object_get_string(v)))
			return errf(why, whylen, "runtime: a backend without a valid \"name\"");
		snprintf(b->name, sizeof(b->name), "%s", json_object_get_string(v));
		if (!json_object_object_get_ex(e, "host", &v) ||
		    !json_object_is_type(v, json_type_string) ||
		    strlen(s = json_object_get_string(v)) >= sizeof(b->host) ||
		    get_int(e, "port", 1, 65535, &port) != 1 ||
		    get_int(e, "id", 0, TOPO_MAX_IDS - 1, &id) != 1 ||
		    get_bool(e, "demoted", &b->demoted) < 0)
			return errf(why, whylen,
			            "runtime: %s: bad \"host\", \"port\", \"id\" or "
			            "\"demoted\"",
			            b->name);
		snprintf(b->host, sizeof(b->host), "%s", s);
		b->port = (uint16_t)port;
		b->id = (uint32_t)id;
		rt->n++;
	}
	return 0;
}

static int parse_state(json_object *root, struct state_overlay *ov, char *why, size_t whylen)
{
	json_object *arr;
	int version = 0;

	if (!json_object_is_type(root, json_type_object))
		return errf(why, whylen, "not a JSON object");
	if (get_int(root, "version", 1, INT_MAX, &version) != 1 || version != STATE_VERSION)
		return errf(why, whylen, "missing or unsupported \"version\" (want %d)",
		            STATE_VERSION);
	if (!json_object_object_get_ex(root, "backends", &arr) ||
	    !json_object_is_type(arr, json_type_array))
		return errf(why, whylen, "no \"backends\" array");
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		struct state_change ch, *slot;

		if (change_from_json(json_object_array_get_idx(arr, i), &ch, why, whylen))
			return -1;
		if (find_mut(ov, ch.name))
			return errf(why, whylen, "%s: listed twice", ch.name);
		if (!(slot = append(ov, ch.name)))
			return errf(why, whylen, "out of memory");
		*slot = ch;
	}
	if (json_object_object_get_ex(root, "runtime", &arr))
		return runtime_from_json(arr, &ov->rt, why, whylen);
	return 0;
}

int state_load(const char *path, struct state_overlay *ov, char *err, size_t errlen)
{
	char why[256];
	json_object *root;
	int rc;

	state_free(ov);
	if (access(path, F_OK) != 0 && errno == ENOENT)
		return 0;
	root = json_object_from_file(path);
	if (!root) {
		/* json-c's message says whether reading or parsing failed. */
		const char *m = json_util_get_last_err();
		size_t n;

		snprintf(why, sizeof(why), "%s", m ? m : "unreadable or not JSON");
		n = strlen(why);
		while (n && (why[n - 1] == '\n' || why[n - 1] == ' '))
			why[--n] = '\0';
		return errf(err, errlen, "%s: corrupt state file: %s", path, why);
	}
	rc = parse_state(root, ov, why, sizeof(why));
	json_object_put(root);
	if (rc) {
		state_free(ov);
		return errf(err, errlen, "%s: corrupt state file: %s", path, why);
	}
	return 0;
}

static int ensure_dir(const char *path, char *dir, size_t dirlen)
{
	char tmp[PATH_MAX];

	snprintf(tmp, sizeof(tmp), "%s", path);
	snprintf(dir, dirlen, "%s", dirname(tmp));
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return -1;
	return 0;
}

static int write_file(const char *path, const char *dir, const char *text, char *err, size_t errlen)
{
	char tmp[PATH_MAX];
	int fd, dfd, e;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path) >= (int)sizeof(tmp))
		return errf(err, errlen, "%s: path too long", path);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return errf(err, errlen, "%s: cannot create temp file: %s", path, strerror(errno));
	if (fchmod(fd, 0600) || io_write_all(fd, text, strlen(text)) || fsync(fd)) {
		e = errno;
		close(fd);
		unlink(tmp);
		return errf(err, errlen, "%s: write failed: %s", path, strerror(e));
	}
	if (close(fd) || rename(tmp, path)) {
		e = errno;
		unlink(tmp);
		return errf(err, errlen, "%s: cannot replace: %s", path, strerror(e));
	}
	/* The rename is durable only once the directory is synced. */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd)) {
		e = errno;
		if (dfd >= 0)
			close(dfd);
		return errf(err, errlen, "%s: cannot sync directory: %s", dir, strerror(e));
	}
	close(dfd);
	return 0;
}

static int runtime_to_json(json_object *root, const struct state_runtime *rt)
{
	json_object *o, *arr;

	if (!rt->writer[0] && !rt->n)
		return 0;
	o = json_object_new_object();
	arr = json_object_new_array();
	if (!o || !arr || json_object_object_add(root, "runtime", o)) {
		json_object_put(o);
		json_object_put(arr);
		return -1;
	}
	json_object_object_add(o, "writer", json_object_new_string(rt->writer));
	json_object_object_add(o, "backends", arr);
	for (size_t i = 0; i < rt->n; i++) {
		const struct state_runtime_backend *b = &rt->b[i];
		json_object *e = json_object_new_object();

		if (!e || json_object_array_add(arr, e)) {
			json_object_put(e);
			return -1;
		}
		json_object_object_add(e, "name", json_object_new_string(b->name));
		json_object_object_add(e, "host", json_object_new_string(b->host));
		json_object_object_add(e, "port", json_object_new_int(b->port));
		json_object_object_add(e, "id", json_object_new_int64(b->id));
		if (b->demoted)
			json_object_object_add(e, "demoted", json_object_new_boolean(1));
	}
	return 0;
}

int state_save(const char *path, const struct state_overlay *ov, char *err, size_t errlen)
{
	json_object *root = json_object_new_object(), *arr = json_object_new_array();
	char dir[PATH_MAX];
	int rc = -1;

	if (!root || !arr) {
		json_object_put(root);
		json_object_put(arr);
		return errf(err, errlen, "%s: out of memory", path);
	}
	json_object_object_add(root, "version", json_object_new_int(STATE_VERSION));
	json_object_object_add(root, "backends", arr);
	for (size_t i = 0; i < ov->n; i++) {
		json_object *o = change_to_json(&ov->changes[i]);

		if (!o || json_object_array_add(arr, o)) {
			json_object_put(o);
			errf(err, errlen, "%s: out of memory", path);
			goto out;
		}
	}
	if (runtime_to_json(root, &ov->rt)) {
		errf(err, errlen, "%s: out of memory", path);
		goto out;
	}
	if (ensure_dir(path, dir, sizeof(dir))) {
		errf(err, errlen, "%s: cannot create directory %s: %s", path, dir, strerror(errno));
		goto out;
	}
	rc = write_file(path, dir,
	                json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN |
	                                                         JSON_C_TO_STRING_NOSLASHESCAPE),
	                err, errlen);
out:
	json_object_put(root);
	return rc;
}
