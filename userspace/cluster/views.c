/*
 * views.c - see views.h.
 */
#include "cluster/views.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

char *views_text(const char *host, const struct topology *t, int64_t time_ms)
{
	struct json_object *o = json_object_new_object(), *bs = json_object_new_array();
	char *s = NULL;

	if (!o || !bs)
		goto out;
	json_object_object_add(o, "host", json_object_new_string(host));
	json_object_object_add(o, "time", json_object_new_int64(time_ms));
	for (size_t i = 0; i < t->nbackends; i++) {
		const struct topo_backend *b = &t->backends[i];
		struct json_object *x = json_object_new_object();
		if (!x)
			goto out;
		json_object_object_add(x, "name", json_object_new_string(b->name));
		json_object_object_add(x, "health",
		                       json_object_new_string(topo_health_name(b->health)));
		json_object_object_add(x, "read_only", json_object_new_boolean(b->read_only));
		json_object_object_add(x, "lag",
		                       b->has_lag ? json_object_new_double(b->lag_s) : NULL);
		json_object_array_add(bs, x);
	}
	json_object_object_add(o, "backends", bs);
	bs = NULL;
	s = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
out:
	json_object_put(bs);
	json_object_put(o);
	return s;
}

static const char *str_of(struct json_object *o, const char *key)
{
	struct json_object *x;

	if (!o || !json_object_object_get_ex(o, key, &x) ||
	    !json_object_is_type(x, json_type_string))
		return NULL;
	return json_object_get_string(x);
}

enum be_health views_health_of(struct json_object *view, const char *name)
{
	struct json_object *bs;
	const char *s;
	size_t n;

	if (!view || !json_object_object_get_ex(view, "backends", &bs) ||
	    !json_object_is_type(bs, json_type_array))
		return HEALTH_UNKNOWN;
	n = json_object_array_length(bs);
	for (size_t i = 0; i < n; i++) {
		struct json_object *x = json_object_array_get_idx(bs, i);
		if (!(s = str_of(x, "name")) || strcmp(s, name) != 0)
			continue;
		s = str_of(x, "health");
		if (s && !strcmp(s, "up"))
			return HEALTH_UP;
		if (s && !strcmp(s, "down"))
			return HEALTH_DOWN;
		return HEALTH_UNKNOWN;
	}
	return HEALTH_UNKNOWN;
}

bool views_agree_down(enum be_health own, const enum be_health *others, size_t n,
                      struct views_count *count)
{
	struct views_count c = {.live = 1, .down = own == HEALTH_DOWN};

	for (size_t i = 0; i < n; i++) {
		c.live++;
		if (others[i] == HEALTH_DOWN)
			c.down++;
	}
	if (count)
		*count = c;
	return own == HEALTH_DOWN && 2 * c.down > c.live;
}
