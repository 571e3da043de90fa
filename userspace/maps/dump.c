/*
 * dump.c - `mysteerctl maps`: reads the maps pinned under bpffs_dir directly,
 * so it works with the daemon down (what a SIGKILLed daemon left steering).
 */
#include "maps/dump.h"
#include "maps/maps.h"

#include "mysteer_abi.h"

#include <arpa/inet.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

struct dump_fds {
	int services, backends, route_sel, active_gen, counters, cfg;
};

static int open_pinned(const char *dir, const char *name)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return bpf_obj_get(path);
}

static void close_fds(struct dump_fds *f)
{
	int *all[] = {&f->services,   &f->backends, &f->route_sel,
	              &f->active_gen, &f->counters, &f->cfg};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (*all[i] >= 0)
			close(*all[i]);
}

static const char *ep_str(const struct ms_endpoint *ep, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "*";

	if (ep->family == MS_AF_INET)
		inet_ntop(AF_INET, ep->addr, a, sizeof(a));
	else if (ep->family == MS_AF_INET6)
		inet_ntop(AF_INET6, ep->addr, a, sizeof(a));
	snprintf(buf, len, ep->family == MS_AF_INET6 ? "[%s]:%u" : "%s:%u", a, ntohs(ep->port));
	return buf;
}

static json_object *flags_json(uint32_t f, const char *const *names, size_t n)
{
	json_object *a = json_object_new_array();
	for (size_t i = 0; i < n; i++)
		if (f & (1u << i))
			json_object_array_add(a, json_object_new_string(names[i]));
	return a;
}

static const char *const be_flag_names[] = {"present", "usable",  "local",
                                            "down",    "drained", "disabled"};
static const char *const rt_flag_names[] = {"present", "reader", "fallback", "split"};

static json_object *dump_cfg(const struct dump_fds *f, uint32_t gen)
{
	json_object *o = json_object_new_object();
	struct ms_cfg c;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(f->cfg, &zero, &c))
		return o;
	json_object_object_add(o, "netns_cookie", json_object_new_uint64(c.netns_cookie));
	json_object_object_add(o, "abi_version", json_object_new_int((int)c.abi_version));
	json_object_object_add(o, "enabled", json_object_new_boolean(c.flags & MS_CFG_ENABLED));
	json_object_object_add(
	    o, "reader_policy",
	    json_object_new_string(c.flags & MS_CFG_LEAST_CONN ? "least_conn" : "random"));
	json_object_object_add(o, "active_gen", json_object_new_int((int)gen));
	return o;
}

/* The (route id, path) entries of a backend's counters that are not zero. */
static json_object *by_route_json(const struct ms_counters *c)
{
	json_object *a = json_object_new_array();

	for (int r = 0; r < MS_ROUTE_SLOTS; r++)
		for (int p = 0; p < MS_PATHS; p++) {
			const struct ms_path_counters *v = &c->by[r][p];
			if (!v->steered && !v->active && !v->connect_failures &&
			    !v->closed_on_demote)
				continue;
			json_object *o = json_object_new_object();
			json_object_object_add(o, "route_id", json_object_new_int(r));
			json_object_object_add(o, "path",
			                       json_object_new_string(maps_path_name((unsigned)p)));
			json_object_object_add(o, "steered", json_object_new_uint64(v->steered));
			json_object_object_add(o, "active", json_object_new_uint64(v->active));
			json_object_object_add(o, "connect_failures",
			                       json_object_new_uint64(v->connect_failures));
			json_object_object_add(o, "closed_on_demote",
			                       json_object_new_uint64(v->closed_on_demote));
			json_object_array_add(a, o);
		}
	return a;
}

static json_object *dump_backends(const struct dump_fds *f)
{
	json_object *a = json_object_new_array();
	char buf[80];

	for (__u32 id = 0; id < MS_MAX_BACKENDS; id++) {
		struct ms_backend b;
		struct ms_counters c;
		memset(&c, 0, sizeof(c));
		if (bpf_map_lookup_elem(f->backends, &id, &b) || !(b.flags & MS_BE_PRESENT))
			continue;
		if (bpf_map_lookup_elem(f->counters, &id, &c))
			memset(&c, 0, sizeof(c));
		struct ms_path_counters t = maps_counters_total(&c);
		json_object *o = json_object_new_object();
		json_object_object_add(o, "id", json_object_new_int((int)id));
		json_object_object_add(o, "address",
		                       json_object_new_string(ep_str(&b.ep, buf, sizeof(buf))));
		json_object_object_add(o, "flags", flags_json(b.flags, be_flag_names, 6));
		json_object_object_add(o, "weight", json_object_new_int((int)b.weight));
		json_object_object_add(o, "steered", json_object_new_uint64(t.steered));
		json_object_object_add(o, "active", json_object_new_uint64(t.active));
		json_object_object_add(o, "connect_failures",
		                       json_object_new_uint64(t.connect_failures));
		json_object_object_add(o, "closed_on_demote",
		                       json_object_new_uint64(t.closed_on_demote));
		json_object_object_add(o, "by_route", by_route_json(&c));
		json_object_array_add(a, o);
	}
	return a;
}

static json_object *dump_routes(const struct dump_fds *f, uint32_t gen)
{
	json_object *a = json_object_new_array();
	char buf[80];

	for (__u32 r = 0; r < MS_ROUTE_SLOTS; r++) {
		__u32 idx = gen * MS_ROUTE_SLOTS + r;
		struct ms_route rt;
		if (bpf_map_lookup_elem(f->route_sel, &idx, &rt) || !(rt.flags & MS_RT_PRESENT))
			continue;
		rt.name[sizeof(rt.name) - 1] = 0;
		json_object *o = json_object_new_object();
		json_object *t = json_object_new_array();
		json_object_object_add(o, "id", json_object_new_int((int)r));
		json_object_object_add(o, "name", json_object_new_string(rt.name));
		json_object_object_add(o, "port", json_object_new_int(rt.port));
		if (rt.errl.family)
			json_object_object_add(
			    o, "error_listener",
			    json_object_new_string(ep_str(&rt.errl, buf, sizeof(buf))));
		if (rt.errl6.family)
			json_object_object_add(
			    o, "error_listener6",
			    json_object_new_string(ep_str(&rt.errl6, buf, sizeof(buf))));
		json_object_object_add(o, "flags", flags_json(rt.flags, rt_flag_names, 4));
		for (__u32 i = 0; i < rt.ntargets && i < MS_MAX_TARGETS; i++) {
			json_object *e = json_object_new_object();
			json_object_object_add(e, "backend",
			                       json_object_new_int((int)rt.target[i]));
			json_object_object_add(e, "cum_weight",
			                       json_object_new_int((int)rt.cum_weight[i]));
			json_object_array_add(t, e);
		}
		json_object_object_add(o, "targets", t);
		json_object_object_add(o, "total_weight",
		                       json_object_new_int((int)rt.total_weight));
		json_object_array_add(a, o);
	}
	return a;
}

/* The services of the active generation. */
static json_object *dump_services(const struct dump_fds *f, uint32_t gen)
{
	json_object *a = json_object_new_array();
	struct ms_service_key k, next;
	void *prev = NULL;
	char buf[80];

	while (!bpf_map_get_next_key(f->services, prev, &next)) {
		struct ms_service v;
		struct ms_endpoint ep;
		if (next.gen == gen && !bpf_map_lookup_elem(f->services, &next, &v)) {
			json_object *o = json_object_new_object();
			ep.family = next.family;
			ep.port = next.port;
			memcpy(ep.addr, next.addr, sizeof(ep.addr));
			json_object_object_add(
			    o, "address", json_object_new_string(ep_str(&ep, buf, sizeof(buf))));
			json_object_object_add(o, "route", json_object_new_int((int)v.route_id));
			json_object_array_add(a, o);
		}
		k = next;
		prev = &k;
	}
	return a;
}

/* "title:" then one JSON line for each element of the array v. */
static void print_each(FILE *out, const char *title, json_object *v)
{
	fprintf(out, "%s:\n", title);
	for (size_t i = 0; i < json_object_array_length(v); i++)
		fprintf(out, "  %s\n",
		        json_object_to_json_string_ext(json_object_array_get_idx(v, i),
		                                       JSON_C_TO_STRING_PLAIN));
}

static void print_text(json_object *root, FILE *out)
{
	json_object *cfg = json_object_object_get(root, "config");
	json_object *v;

	fprintf(out, "config: %s\n", json_object_to_json_string_ext(cfg, JSON_C_TO_STRING_PLAIN));
	v = json_object_object_get(root, "services");
	fprintf(out, "services:\n");
	for (size_t i = 0; i < json_object_array_length(v); i++) {
		json_object *s = json_object_array_get_idx(v, i);
		fprintf(out, "  %-28s -> route %d\n",
		        json_object_get_string(json_object_object_get(s, "address")),
		        json_object_get_int(json_object_object_get(s, "route")));
	}
	print_each(out, "routes (active generation)", json_object_object_get(root, "routes"));
	print_each(out, "backends", json_object_object_get(root, "backends"));
}

int maps_dump(const char *bpffs_dir, bool json, FILE *out)
{
	struct dump_fds f = {
	    .services = open_pinned(bpffs_dir, MS_MAP_SERVICES),
	    .backends = open_pinned(bpffs_dir, MS_MAP_BACKENDS),
	    .route_sel = open_pinned(bpffs_dir, MS_MAP_ROUTE_SEL),
	    .active_gen = open_pinned(bpffs_dir, MS_MAP_ACTIVE_GEN),
	    .counters = open_pinned(bpffs_dir, MS_MAP_COUNTERS),
	    .cfg = open_pinned(bpffs_dir, MS_MAP_CFG),
	};
	__u32 zero = 0, gen = 0;
	json_object *root;

	if (f.services < 0 || f.backends < 0 || f.route_sel < 0 || f.active_gen < 0 ||
	    f.counters < 0 || f.cfg < 0) {
		fprintf(out, "no pinned mysteer maps under %s: %s\n", bpffs_dir, strerror(errno));
		close_fds(&f);
		return -1;
	}
	if (bpf_map_lookup_elem(f.active_gen, &zero, &gen) || gen >= MS_GENERATIONS)
		gen = 0;
	root = json_object_new_object();
	json_object_object_add(root, "bpffs_dir", json_object_new_string(bpffs_dir));
	json_object_object_add(root, "config", dump_cfg(&f, gen));
	json_object_object_add(root, "services", dump_services(&f, gen));
	json_object_object_add(root, "routes", dump_routes(&f, gen));
	json_object_object_add(root, "backends", dump_backends(&f));
	if (json)
		fprintf(out, "%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN));
	else
		print_text(root, out);
	json_object_put(root);
	close_fds(&f);
	return 0;
}
