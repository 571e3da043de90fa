/*
 * image.c - the pure part of the publisher: topology -> map image, and the
 * diff that decides which steered connections close-on-demote closes.
 * No kernel access here, so the selection rules are unit-tested.
 */
#include "maps/maps.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void ep_from_sockaddr(struct ms_endpoint *ep, const struct sockaddr_storage *ss)
{
	memset(ep, 0, sizeof(*ep));
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)ss;
		ep->family = MS_AF_INET;
		ep->port = s->sin_port;
		memcpy(ep->addr, &s->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)ss;
		ep->family = MS_AF_INET6;
		ep->port = s->sin6_port;
		memcpy(ep->addr, &s->sin6_addr, 16);
	}
}

static bool is_loopback(const struct ms_endpoint *ep)
{
	static const uint8_t lo6[16] = {[15] = 1};
	if (ep->family == MS_AF_INET)
		return ep->addr[0] == 127;
	return ep->family == MS_AF_INET6 && memcmp(ep->addr, lo6, 16) == 0;
}

static uint32_t backend_flags(const struct topo_backend *b, const struct ms_endpoint *ep)
{
	uint32_t f = MS_BE_PRESENT;
	if (topo_backend_usable(b))
		f |= MS_BE_USABLE;
	if (is_loopback(ep))
		f |= MS_BE_LOCAL;
	if (b->health == HEALTH_DOWN)
		f |= MS_BE_DOWN;
	if (b->admin == ADMIN_DRAINED)
		f |= MS_BE_DRAINED;
	if (b->admin == ADMIN_DISABLED)
		f |= MS_BE_DISABLED;
	return f;
}

_Static_assert(MS_MAX_BACKENDS == TOPO_MAX_IDS, "the controller warns past TOPO_MAX_IDS");

/* A backend can be steered to only with an address and an id the maps hold. */
static bool steerable(const struct topo_backend *b)
{
	return b->addrlen > 0 && b->id < MS_MAX_BACKENDS;
}

static void add_target(struct ms_route *rt, uint32_t id, uint32_t weight)
{
	if (rt->ntargets >= MS_MAX_TARGETS)
		return;
	rt->total_weight += weight;
	rt->target[rt->ntargets] = id;
	rt->cum_weight[rt->ntargets] = rt->total_weight;
	rt->ntargets++;
}

static const struct topo_backend *writer_of(const struct topology *t)
{
	if (t->writer < 0 || (size_t)t->writer >= t->nbackends)
		return NULL;
	return &t->backends[t->writer];
}

/* snprintf at *n, never past len (vsnprintf: the message may be cut). */
__attribute__((format(printf, 4, 5))) static void append(char *buf, size_t len, size_t *n,
                                                         const char *fmt, ...)
{
	va_list ap;
	int w;

	if (*n >= len)
		return;
	va_start(ap, fmt);
	w = vsnprintf(buf + *n, len - *n, fmt, ap);
	va_end(ap);
	if (w > 0)
		*n += (size_t)w;
}

static void describe(char *buf, size_t len, size_t *n, const struct topo_backend *b)
{
	append(buf, len, n, "%s %s%s%s", b->name, topo_state_name(b), b->last_error[0] ? ": " : "",
	       b->last_error);
}

/* Why nothing can take the route's connections, naming the backends. */
static void explain(const struct topology *t, const struct topo_route *r, char *buf, size_t len)
{
	const struct topo_backend *w = writer_of(t);
	size_t n = 0;

	append(buf, len, &n, "mysteer: route %s has no %s (", r->name,
	       r->role == ROUTE_WRITER ? "writer" : "reader or writer");
	if (w) {
		describe(buf, len, &n, w);
	} else {
		for (size_t i = 0; i < t->nbackends; i++) {
			append(buf, len, &n, "%s", i ? ", " : "");
			describe(buf, len, &n, &t->backends[i]);
		}
		if (!t->nbackends)
			append(buf, len, &n, "no backends");
	}
	append(buf, len, &n, ")");
}

static void build_route(const struct topology *t, const struct topo_route *r, struct ms_route *rt,
                        char *reason, size_t rlen)
{
	const struct topo_backend *w = writer_of(t);

	memset(rt, 0, sizeof(*rt));
	rt->flags = MS_RT_PRESENT;
	rt->port = r->port;
	snprintf(rt->name, sizeof(rt->name), "%s", r->name);
	if (r->role == ROUTE_SPLIT) {
		rt->flags |= MS_RT_SPLIT;
		return;
	}
	if (r->role == ROUTE_READER) {
		rt->flags |= MS_RT_READER;
		for (size_t i = 0; i < t->nbackends; i++) {
			const struct topo_backend *b = &t->backends[i];
			if (topo_reader_usable(b) && steerable(b))
				add_target(rt, b->id, (uint32_t)b->weight);
		}
		if (rt->ntargets)
			return;
		rt->flags |= MS_RT_FALLBACK;
	}
	if (w && w == topo_usable_writer(t) && steerable(w)) {
		add_target(rt, w->id, 1);
		return;
	}
	rt->flags &= ~MS_RT_FALLBACK;
	rt->reason = r->role == ROUTE_WRITER ? MS_REASON_NO_WRITER : MS_REASON_NO_READER;
	explain(t, r, reason, rlen);
}

/* key.gen is left 0: the publisher sets the generation it writes. */
static int add_service(struct maps_image *img, uint16_t family, const void *addr, size_t alen,
                       uint16_t port, uint32_t route)
{
	struct maps_service_entry *e;

	if (img->nservices >= MS_MAX_SERVICES)
		return -1;
	e = &img->services[img->nservices++];
	memset(e, 0, sizeof(*e));
	e->key.family = family;
	e->key.port = htons(port);
	memcpy(e->key.addr, addr, alen);
	e->val.route_id = route;
	return 0;
}

static int add_services(struct maps_image *img, const struct config *cfg,
                        const struct topo_route *r, uint32_t route)
{
	for (size_t v = 0; cfg && v < cfg->nvips; v++) {
		const struct sockaddr_storage *ss = &cfg->vips[v];
		int rc = -1;
		if (ss->ss_family == AF_INET)
			rc = add_service(img, MS_AF_INET,
			                 &((const struct sockaddr_in *)ss)->sin_addr, 4, r->port,
			                 route);
		else if (ss->ss_family == AF_INET6)
			rc = add_service(img, MS_AF_INET6,
			                 &((const struct sockaddr_in6 *)ss)->sin6_addr, 16, r->port,
			                 route);
		if (rc)
			return -1;
	}
	return 0;
}

_Static_assert(MS_NAME_MAX == TOPO_NAME_MAX, "route names fit the maps");
_Static_assert(MS_MAX_ROUTES == CONFIG_MAX_ROUTES, "the config holds what the maps hold");

static int id_of(const struct maps_route_ids *ids, const char *name)
{
	for (int i = 0; i < MS_ROUTE_SLOTS; i++)
		if (ids->name[i][0] && strcmp(ids->name[i], name) == 0)
			return i;
	return -1;
}

int maps_assign_route_ids(const struct maps_route_ids *prev, const bool busy[MS_ROUTE_SLOTS],
                          const struct topology *t, struct maps_route_ids *next,
                          uint32_t ids[MS_MAX_ROUTES], char *err, size_t errlen)
{
	memset(next, 0, sizeof(*next));
	if (t->nroutes > MS_MAX_ROUTES) {
		snprintf(err, errlen, "%zu routes, the maps hold %d", t->nroutes, MS_MAX_ROUTES);
		return -1;
	}
	for (size_t r = 0; r < t->nroutes; r++) {
		int id = id_of(prev, t->routes[r].name);
		ids[r] = id >= 0 ? (uint32_t)id : MS_ROUTE_SLOTS;
		if (id >= 0)
			snprintf(next->name[id], sizeof(next->name[id]), "%s", t->routes[r].name);
	}
	/* New routes: ids free in prev and not busy, so none that a generation
	 * a program may still read uses. */
	for (size_t r = 0; r < t->nroutes; r++) {
		int id = 0;
		if (ids[r] < MS_ROUTE_SLOTS)
			continue;
		while (id < MS_ROUTE_SLOTS &&
		       (prev->name[id][0] || next->name[id][0] || (busy && busy[id])))
			id++;
		if (id == MS_ROUTE_SLOTS) { /* cannot happen: 3 x MS_MAX_ROUTES ids */
			snprintf(err, errlen, "no free route id for route %s", t->routes[r].name);
			return -1;
		}
		ids[r] = (uint32_t)id;
		snprintf(next->name[id], sizeof(next->name[id]), "%s", t->routes[r].name);
	}
	return 0;
}

int maps_build_image(const struct topology *t, const struct config *cfg,
                     const uint32_t ids[MS_MAX_ROUTES], struct maps_image *img, char *err,
                     size_t errlen)
{
	memset(img, 0, sizeof(*img));
	if (t->nroutes > MS_MAX_ROUTES) {
		snprintf(err, errlen, "%zu routes, the maps hold %d", t->nroutes, MS_MAX_ROUTES);
		return -1;
	}
	for (size_t i = 0; i < t->nbackends; i++) {
		const struct topo_backend *b = &t->backends[i];
		struct ms_backend *mb;
		if (!steerable(b))
			continue;
		mb = &img->backends[b->id];
		ep_from_sockaddr(&mb->ep, &b->addr);
		mb->flags = backend_flags(b, &mb->ep);
		mb->weight = b->weight > 0 ? (uint32_t)b->weight : 0;
	}
	for (size_t r = 0; r < t->nroutes; r++) {
		const struct topo_route *tr = &t->routes[r];
		uint32_t id = ids ? ids[r] : (uint32_t)r;
		if (id >= MS_ROUTE_SLOTS || (img->routes[id].flags & MS_RT_PRESENT)) {
			snprintf(err, errlen, "route %s: bad route id %u", tr->name, id);
			return -1;
		}
		build_route(t, tr, &img->routes[id], img->reason[id], sizeof(img->reason[id]));
		if (tr->role == ROUTE_SPLIT)
			continue;
		if (add_services(img, cfg, tr, id)) {
			snprintf(err, errlen, "more than %d service addresses", MS_MAX_SERVICES);
			return -1;
		}
	}
	return 0;
}

static const struct topo_backend *find_id(const struct topology *t, uint32_t id)
{
	for (size_t i = 0; i < t->nbackends; i++)
		if (t->backends[i].id == id)
			return &t->backends[i];
	return NULL;
}

static const struct topo_backend *find_endpoint(const struct topology *t,
                                                const struct ms_endpoint *ep)
{
	for (size_t i = 0; i < t->nbackends; i++) {
		struct ms_endpoint e;
		if (t->backends[i].addrlen == 0)
			continue;
		ep_from_sockaddr(&e, &t->backends[i].addr);
		if (e.family == ep->family && e.port == ep->port &&
		    !memcmp(e.addr, ep->addr, sizeof(e.addr)))
			return &t->backends[i];
	}
	return NULL;
}

static bool in_targets(const struct ms_route *rt, uint32_t id)
{
	for (uint32_t i = 0; i < rt->ntargets && i < MS_MAX_TARGETS; i++)
		if (rt->target[i] == id)
			return true;
	return false;
}

/* A backend that left route r: may its connections of r stay? */
static bool may_keep(const struct topo_backend *now, enum route_role role)
{
	if (!now)
		return false; /* removed */
	if (now->admin == ADMIN_DRAINED)
		return true;
	if (role != ROUTE_READER || !topo_backend_usable(now))
		return false;
	return now->role == ROLE_WRITER || now->role == ROLE_READER;
}

/*
 * The diff behind both close masks. Route ids are kept by name across
 * reloads, so a route is the same one when its id is present in both images
 * with the same role (its port may have changed). by_address: old ids are
 * the predecessor's, so backends are matched to cur by address.
 */
static size_t close_mask(const struct maps_image *old, const struct topology *cur,
                         const struct maps_image *new_img, bool by_address,
                         uint32_t mask[MS_MAX_BACKENDS])
{
	size_t n = 0;

	memset(mask, 0, sizeof(uint32_t) * MS_MAX_BACKENDS);
	for (uint32_t r = 0; r < MS_ROUTE_SLOTS; r++) {
		const struct ms_route *ra = &old->routes[r], *rb = &new_img->routes[r];
		enum route_role role = (ra->flags & MS_RT_READER) ? ROUTE_READER : ROUTE_WRITER;
		bool same_route = (rb->flags & MS_RT_PRESENT) && !(rb->flags & MS_RT_SPLIT) &&
		                  (rb->flags & MS_RT_READER) == (ra->flags & MS_RT_READER);

		if (!(ra->flags & MS_RT_PRESENT) || (ra->flags & MS_RT_SPLIT))
			continue;
		for (uint32_t i = 0; i < ra->ntargets && i < MS_MAX_TARGETS; i++) {
			uint32_t id = ra->target[i];
			const struct topo_backend *now;
			if (id >= MS_MAX_BACKENDS)
				continue;
			if (by_address) {
				if (!(old->backends[id].flags & MS_BE_PRESENT))
					continue;
				now = find_endpoint(cur, &old->backends[id].ep);
			} else {
				now = find_id(cur, id);
			}
			if (same_route && now && in_targets(rb, now->id))
				continue;
			if (may_keep(now, role))
				continue;
			if (!mask[id])
				n++;
			mask[id] |= 1u << r;
		}
	}
	return n;
}

size_t maps_close_mask(const struct maps_image *old, const struct topology *cur,
                       const struct maps_image *new_img, uint32_t mask[MS_MAX_BACKENDS])
{
	return close_mask(old, cur, new_img, false, mask);
}

size_t maps_close_mask_adopted(const struct maps_image *old, const struct topology *cur,
                               const struct maps_image *new_img, uint32_t mask[MS_MAX_BACKENDS])
{
	return close_mask(old, cur, new_img, true, mask);
}

size_t maps_hold_writer(const struct maps_image *new_img, const struct topology *cur,
                        uint32_t mask[MS_MAX_BACKENDS], uint32_t held[MS_MAX_BACKENDS])
{
	size_t n = 0;

	for (uint32_t id = 0; id < MS_MAX_BACKENDS; id++) {
		const struct topo_backend *now = find_id(cur, id);
		/* missed probes: not up, yet still there and enabled (a live
		 * server that lost its role, read_only, is closed at once) */
		bool stays = now && now->admin != ADMIN_DISABLED && now->health != HEALTH_UP;

		for (uint32_t r = 0; r < MS_ROUTE_SLOTS; r++) {
			const struct ms_route *rt = &new_img->routes[r];
			uint32_t bit = 1u << r;
			bool writer_route = (rt->flags & MS_RT_PRESENT) &&
			                    !(rt->flags & (MS_RT_READER | MS_RT_SPLIT));

			if (!((mask[id] | held[id]) & bit))
				continue;
			if (writer_route && rt->ntargets == 0 && stays) {
				mask[id] &= ~bit; /* no writer now: kept, held */
				held[id] |= bit;
				continue;
			}
			if (!(held[id] & bit))
				continue;
			held[id] &= ~bit;
			if (!(writer_route && in_targets(rt, id)))
				mask[id] |= bit; /* another writer, or it left: closed */
		}
		n += mask[id] != 0;
	}
	return n;
}
