/*
 * history.c - the session history: the session statements a client ran (SET,
 * USE, ...), kept as raw command packets in the order the server accepted
 * them, which route.c replays on a connection that has not seen them before
 * it runs anything else (route_send_cmd). Owns the entries and their bounds
 * (max_session_history, max_session_bytes: past them the session stays on
 * its writer instead), an identical statement replacing its earlier copy
 * once it succeeded, and the history's image and fingerprint by which the
 * pool gives a connection to a session with the same history without a
 * reset (pool_park, pool_take).
 */
#define _GNU_SOURCE
#include "common/array.h"
#include "proxy/engine_int.h"

#include <stdlib.h>
#include <string.h>

/*
 * A pooled connection that had only a session's history replayed on it is
 * given, without a reset and without replaying, to a session of the same
 * user whose history is the same: the commands of hist[0..upto) and the
 * login schema (which decides the schema after a reset). Applications that
 * send the same SET NAMES or SET time_zone at every connect thus cost no
 * reset and no replay per multiplexed statement, and keep the connection's
 * prepared statements. The image holds the whole history, so a match is
 * exact (compared byte by byte after the fingerprint).
 */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

uint64_t hist_fingerprint(const struct client *c, size_t upto)
{
	uint64_t h = fnv(14695981039346656037ull, c->db0, strlen(c->db0) + 1);

	for (size_t i = 0; i < upto && i < c->nhist; i++) {
		uint32_t n = (uint32_t)c->hist[i].n;
		h = fnv(fnv(h, &n, sizeof(n)), c->hist[i].p, c->hist[i].n);
	}
	return h;
}

/* db0 with its NUL, then each command as a 4-byte length and its bytes. */
uint8_t *hist_image(const struct client *c, size_t upto, size_t *len)
{
	size_t n = strlen(c->db0) + 1, off;
	uint8_t *img;

	for (size_t i = 0; i < upto && i < c->nhist; i++)
		n += sizeof(uint32_t) + c->hist[i].n;
	if (n > HIST_IMAGE_MAX)
		return NULL; /* the pool resets it rather than keep that much */
	img = malloc(n);
	if (!img)
		return NULL;
	off = strlen(c->db0) + 1;
	memcpy(img, c->db0, off);
	for (size_t i = 0; i < upto && i < c->nhist; i++) {
		uint32_t hn = (uint32_t)c->hist[i].n;
		memcpy(img + off, &hn, sizeof(hn));
		memcpy(img + off + sizeof(hn), c->hist[i].p, c->hist[i].n);
		off += sizeof(hn) + c->hist[i].n;
	}
	*len = n;
	return img;
}

/* Whether pooled b has exactly the whole history of c, whose fingerprint
 * (hist_fingerprint(c, c->nhist)) is fp: computed once per pool walk. */
bool hist_image_matches(const struct client *c, const struct bconn *b, uint64_t fp)
{
	size_t off = strlen(c->db0) + 1;

	if (!b->hist_img || b->hist_fp != fp || b->hist_img_len < off ||
	    memcmp(b->hist_img, c->db0, off) != 0)
		return false;
	for (size_t i = 0; i < c->nhist; i++) {
		uint32_t hn;
		if (b->hist_img_len - off < sizeof(hn))
			return false;
		memcpy(&hn, b->hist_img + off, sizeof(hn));
		off += sizeof(hn);
		if (hn != c->hist[i].n || b->hist_img_len - off < hn ||
		    memcmp(b->hist_img + off, c->hist[i].p, hn) != 0)
			return false;
		off += hn;
	}
	return off == b->hist_img_len;
}

void hist_clear(struct client *c)
{
	for (size_t i = 0; i < c->nhist; i++)
		free(c->hist[i].p);
	c->nhist = 0;
	c->hist_bytes = 0;
}

/* The last entry goes (its command failed). */
void hist_pop(struct client *c)
{
	c->has_hist_dup = false; /* the earlier identical one stays */
	c->nhist--;
	c->hist_bytes -= c->hist[c->nhist].n;
	free(c->hist[c->nhist].p);
}

bool hist_bytes_fit(const struct client *c, size_t n)
{
	return c->hist_bytes + c->ps_bytes + n <= atomic_load(&c->w->e->max_session_bytes);
}

/* An earlier identical statement is superseded by the new one: applications
 * that repeat SET NAMES or SET time_zone on every request keep a short
 * history. The earlier one goes only once the new one succeeded
 * (hist_commit): a SET that fails when run again changed nothing, and the
 * setting of the earlier one still holds. */
static bool hist_find_same(const struct client *c, const uint8_t *p, size_t n, size_t *at)
{
	for (size_t i = 0; i < c->nhist; i++)
		if (c->hist[i].n == n && !memcmp(c->hist[i].p, p, n)) {
			*at = i;
			return true;
		}
	return false;
}

void hist_commit(struct client *c)
{
	struct bconn *conns[2] = {c->wconn, c->rconn};
	size_t i = c->hist_dup;

	if (!c->has_hist_dup)
		return;
	c->has_hist_dup = false;
	if (i + 1 >= c->nhist)
		return; /* not before the new entry: nothing to drop */
	free(c->hist[i].p);
	c->hist_bytes -= c->hist[i].n;
	memmove(&c->hist[i], &c->hist[i + 1], (c->nhist - i - 1) * sizeof(c->hist[0]));
	c->nhist--;
	for (int k = 0; k < 2; k++)
		if (conns[k] && conns[k]->hist_applied > i)
			conns[k]->hist_applied--;
}

/*
 * The history is what a connection taken from the pool replays, so it must
 * stay small: past max_session_history entries or max_session_bytes the
 * session stays on the writer, where the statement runs, from then on (a
 * connection of its own: nothing more needs replaying) rather than grow.
 * An identical earlier entry, which the new one replaces when it succeeds,
 * does not count.
 */
int hist_add(struct client *c, const uint8_t *p, size_t n)
{
	size_t dup = 0;
	bool same = hist_find_same(c, p, n, &dup);
	size_t entries = c->nhist - (same ? 1 : 0);

	c->has_hist_dup = false;
	if (entries >= (size_t)atomic_load(&c->w->e->max_hist) ||
	    !hist_bytes_fit(c, same ? 0 : n)) {
		route_pin_writer(c,
		                 "session settings past max_session_history or max_session_bytes");
		c->route = R_WRITER;
		return 1;
	}
	if (ARRAY_RESERVE(c->hist, c->nhist, c->hist_cap, 8) < 0)
		return -1;
	c->hist[c->nhist].p = malloc(n);
	if (!c->hist[c->nhist].p)
		return -1;
	memcpy(c->hist[c->nhist].p, p, n);
	c->hist[c->nhist].n = n;
	c->nhist++;
	c->hist_bytes += n;
	c->cur_hist = true;
	c->hist_dup = dup;
	c->has_hist_dup = same;
	return 0;
}
