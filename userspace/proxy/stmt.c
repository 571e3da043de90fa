/*
 * stmt.c - prepared statements. They are the session's, not a connection's:
 * each backend connection caches the server-side statements prepared on it
 * (for its present schema and session state, shared by the sessions that take
 * it clean), an EXECUTE uses the cached one or prepares in the same batch
 * (stmt_queue_prereqs, stmt_build_execute), and a text is closed on the worker's
 * connections when its last client statement goes (skey_put). Apart from the
 * commands that create and drop them (client.c), so that the caches' rules
 * live in one place.
 */
#define _GNU_SOURCE
#include "common/array.h"
#include "proxy/engine_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pstmt *stmt_find(struct client *c, uint32_t id)
{
	for (struct pstmt *ps = c->stmts; ps; ps = ps->next)
		if (ps->id == id)
			return ps;
	return NULL;
}

static uint64_t fnv1a(const void *p, size_t n, uint64_t h)
{
	const uint8_t *q = p;

	for (size_t i = 0; i < n; i++) {
		h ^= q[i];
		h *= 1099511628211ull;
	}
	return h;
}

/* The worker's key of this user's statement text, counted once more. */
static struct skey *skey_get(struct worker *w, const char *user, const uint8_t *sql, size_t len)
{
	uint64_t h = fnv1a(sql, len, fnv1a(user, strlen(user) + 1, 14695981039346656037ull));
	struct skey **head = &w->keys[h % PS_KEY_BUCKETS], *k;

	for (k = *head; k; k = k->next)
		if (k->hash == h && k->len == len && !strcmp(k->user, user) &&
		    !memcmp(k->sql, sql, len)) {
			k->refs++;
			return k;
		}
	k = calloc(1, sizeof(*k) + (len ? len : 1));
	if (!k)
		return NULL;
	k->hash = h;
	k->refs = 1;
	k->len = len;
	snprintf(k->user, sizeof(k->user), "%s", user);
	memcpy(k->sql, sql, len);
	k->next = *head;
	*head = k;
	return k;
}

/* The cached statement of key k on b, or NULL. */
struct bstmt *stmt_cache_find(struct bconn *b, const struct skey *k)
{
	for (uint32_t i = 0; i < b->nbst; i++)
		if (b->bst[i].k == k)
			return &b->bst[i];
	return NULL;
}

/*
 * Forgets b's cached statement i, and closes it on the server unless the
 * server already dropped it (a reset, a closed connection). COM_STMT_CLOSE
 * has no answer: it may follow whatever b->out holds (a command in flight of
 * another session included), and b->internal is not counted up for it.
 */
static void stmt_cache_del(struct bconn *b, uint32_t i, bool send_close)
{
	uint8_t pkt[5] = {COM_STMT_CLOSE};

	if (send_close && !b->dead && b->st == B_READY) {
		put_le32(pkt + 1, b->bst[i].xid);
		if (buf_put_packet(&b->out, 0, pkt, sizeof(pkt)) < 0)
			log_warn("proxy: out of memory closing a statement on %s", b->name);
	}
	b->bst[i].k->ncached--;
	if (b->backend_id < PROXY_MAX_IDS)
		atomic_fetch_sub(&b->w->e->be_prepared[b->backend_id], 1);
	free(b->bst[i].types);
	b->bst[i] = b->bst[--b->nbst];
}

/* Empties b's cache: its schema or session state changes (send_close: the
 * statements are closed on the server), or the server dropped them. */
void stmt_cache_clear(struct bconn *b, bool send_close)
{
	while (b->nbst > 0)
		stmt_cache_del(b, b->nbst - 1, send_close);
	if (!send_close || b->bst_cap > 32) {
		free(b->bst);
		b->bst = NULL;
		b->bst_cap = 0;
	}
}

/* Whether a statement of session c has its cursor open on b with key k. */
static bool cursor_open_on(const struct client *c, const struct bconn *b, const struct skey *k)
{
	for (const struct pstmt *ps = c->stmts; ps; ps = ps->next)
		if (ps->cursor_b == b && ps->key == k)
			return true;
	return false;
}

/*
 * The session state of b changed (a session statement ran there, or the
 * history was replayed): its cached statements were parsed under the former
 * state and go, as stmt_cache_clear does, except those whose cursor the session has
 * open there. A server keeps a cursor across other statements on its
 * connection, so its COM_STMT_FETCH must still find the statement; it is
 * marked stale and prepared again at its next EXECUTE.
 */
void stmt_cache_clear_for_state(const struct client *c, struct bconn *b)
{
	if (!b->has_cursor || !c) {
		stmt_cache_clear(b, true);
		return;
	}
	for (uint32_t i = b->nbst; i-- > 0;) {
		if (cursor_open_on(c, b, b->bst[i].k))
			b->bst[i].stale = true;
		else
			stmt_cache_del(b, i, true);
	}
}

/* A PREPARE of k answered on b with this id: cached (an older one of the
 * same key, when the client prepared the text again, is closed). */
int stmt_cache_add(struct bconn *b, struct skey *k, uint32_t xid)
{
	struct bstmt *e = stmt_cache_find(b, k);

	if (!e) {
		if (ARRAY_RESERVE(b->bst, b->nbst, b->bst_cap, 8) < 0)
			return -1;
		e = &b->bst[b->nbst++];
		e->k = k;
		e->types = NULL;
		e->ntypes = 0;
		e->stale = false;
		k->ncached++;
		if (b->backend_id < PROXY_MAX_IDS) {
			atomic_fetch_add(&b->w->e->be_prepared[b->backend_id], 1);
			atomic_fetch_add(&b->w->e->be_prepares[b->backend_id], 1);
		}
	} else {
		stmt_cache_del(b, (uint32_t)(e - b->bst), true);
		return stmt_cache_add(b, k, xid);
	}
	e->xid = xid;
	e->used = ++b->w->ps_tick;
	return 0;
}

/*
 * Before a PREPARE on b: a pooled connection lives long and serves many
 * sessions, so it holds at most ps_per_conn statements (the server's
 * max_prepared_stmt_count is global). Beyond that the least recently used
 * one is closed there and forgotten: its next EXECUTE on b prepares it
 * again, lazily, like on any other connection.
 */
void stmt_cache_make_room(struct bconn *b)
{
	while (b->nbst > 0 && b->nbst >= b->w->e->ps_per_conn) {
		uint32_t lru = 0;
		for (uint32_t i = 1; i < b->nbst; i++)
			if (b->bst[i].used < b->bst[lru].used)
				lru = i;
		stmt_cache_del(b, lru, true);
	}
}

static void stmt_cache_drop_key(struct bconn *b, struct skey *k)
{
	struct bstmt *e = b ? stmt_cache_find(b, k) : NULL;

	if (!e)
		return;
	stmt_cache_del(b, (uint32_t)(e - b->bst), true);
	bconn_update(b); /* the event loop writes the close */
}

/*
 * One client statement of key k less in the worker. At 0 no session of the
 * worker uses the text: every connection of the worker that caches it,
 * idle in the pool or held by a session (busy or not), closes it, and the
 * key goes.
 */
static void skey_put(struct worker *w, struct skey *k)
{
	struct skey **pp;

	if (--k->refs > 0)
		return;
	for (struct bconn *b = w->pool; b && k->ncached; b = b->pool_next)
		stmt_cache_drop_key(b, k);
	for (struct client *c = w->clients; c && k->ncached; c = c->next) {
		stmt_cache_drop_key(c->wconn, k);
		stmt_cache_drop_key(c->rconn, k);
	}
	if (k->ncached)
		log_warn("proxy: %u connections still cache a closed statement", k->ncached);
	for (pp = &w->keys[k->hash % PS_KEY_BUCKETS]; *pp; pp = &(*pp)->next)
		if (*pp == k) {
			*pp = k->next;
			break;
		}
	free(k);
}

/* Drops the statement's long data and its memory, and counts it off. */
void stmt_drop_longdata(struct client *c, struct pstmt *ps)
{
	c->ld_bytes -= buf_used(&ps->longdata);
	buf_consume(&ps->longdata, buf_used(&ps->longdata));
	buf_trim(&ps->longdata);
}

void stmt_free(struct client *c, struct pstmt *ps)
{
	for (struct pstmt **pp = &c->stmts; *pp; pp = &(*pp)->next) {
		if (*pp == ps) {
			*pp = ps->next;
			break;
		}
	}
	if (c->cur_ps == ps)
		c->cur_ps = NULL;
	c->nstmts--;
	c->ps_bytes -= ps->key->len;
	stmt_drop_longdata(c, ps);
	skey_put(c->w, ps->key);
	free(ps->types);
	buf_free(&ps->longdata);
	free(ps);
}

struct pstmt *stmt_new(struct client *c, const uint8_t *sql, size_t len)
{
	struct pstmt *ps = calloc(1, sizeof(*ps));

	if (!ps || !(ps->key = skey_get(c->w, c->user, sql, len))) {
		free(ps);
		return NULL;
	}
	ps->id = ++c->next_stmt_id;
	ps->next = c->stmts;
	c->stmts = ps;
	c->nstmts++;
	c->ps_bytes += len;
	return ps;
}

/* Connection b is going: cursors open there go with it. */
void stmt_forget_conn(struct client *c, const struct bconn *b)
{
	if (!b->has_cursor)
		return; /* the usual case: no walk of the session's statements */
	for (struct pstmt *ps = c->stmts; ps; ps = ps->next)
		if (ps->cursor_b == b)
			ps->cursor_b = NULL;
}

/*
 * Builds in c->scratch the EXECUTE for this connection: its statement id
 * (0xffffffff, MariaDB's "the statement just prepared", when the PREPARE is
 * sent in the same batch), the client's flags (a cursor it asks for is
 * opened on that connection, which the session then keeps: on_answer_done),
 * and the parameter types when this connection has not had them yet.
 */
/* Whether e (NULL: prepared in this batch) has the types last bound that
 * the session's EXECUTE would leave out; else it notes that it gets them. */
static bool types_already_bound(struct bstmt *e, const struct pstmt *ps)
{
	size_t n = 2u * ps->nparams;
	uint8_t *copy;

	if (!e)
		return false;
	if (e->types && e->ntypes == n && !memcmp(e->types, ps->types, n))
		return true;
	copy = malloc(n);
	if (copy)
		memcpy(copy, ps->types, n);
	free(e->types);
	e->types = copy;
	e->ntypes = copy ? n : 0;
	return false;
}

/* Rewrites the client's EXECUTE for connection statement xid (e: its cache
 * entry, NULL when prepared in the same batch). */
int stmt_build_execute(struct client *c, struct bstmt *e, uint32_t xid, const uint8_t **out,
                       size_t *outlen)
{
	struct pstmt *ps = c->cur_ps;
	const uint8_t *p = c->cmd.d + c->cmd.off;
	size_t n = buf_used(&c->cmd), nb = ((size_t)ps->nparams + 7) / 8, off = 10 + nb;
	bool insert_types = false;

	buf_consume(&c->scratch, buf_used(&c->scratch));
	/* The backend statement may be shared: another session may have bound
	 * other types to it last. The client sends its types once; they go
	 * along whenever the statement's last ones differ. */
	if (ps->nparams > 0 && n > off && p[off] == 0 && ps->types)
		insert_types = !types_already_bound(e, ps);
	else if (ps->nparams > 0 && n > off && p[off] == 1 && ps->types && e)
		types_already_bound(e, ps); /* ps->types are these */
	if (insert_types) {
		uint8_t one = 1;
		if (buf_append(&c->scratch, p, off) < 0 || buf_append(&c->scratch, &one, 1) < 0 ||
		    buf_append(&c->scratch, ps->types, 2u * ps->nparams) < 0 ||
		    buf_append(&c->scratch, p + off + 1, n - off - 1) < 0)
			return -1;
	} else if (buf_append(&c->scratch, p, n) < 0) {
		return -1;
	}
	put_le32(c->scratch.d + c->scratch.off + 1, xid);
	*out = c->scratch.d + c->scratch.off;
	*outlen = buf_used(&c->scratch);
	return 0;
}

/* Queues what an EXECUTE needs before it on this connection: a PREPARE when
 * the statement is not in its cache, and the long data. Sets *xid, and *ep
 * to its cache entry (NULL: prepared in this batch). */
int stmt_queue_prereqs(struct client *c, struct bconn *b, uint32_t *xid, struct bstmt **ep)
{
	struct pstmt *ps = c->cur_ps;
	struct bstmt *e = stmt_cache_find(b, ps->key);

	if (e && e->stale) { /* its cursor ends with this EXECUTE anyway */
		stmt_cache_del(b, (uint32_t)(e - b->bst), true);
		e = NULL;
	}
	*ep = e;
	if (e) {
		*xid = e->xid;
		e->used = ++c->w->ps_tick;
	} else {
		*xid = 0xffffffffu;
		stmt_cache_make_room(b);
		/* payload = command byte + SQL */
		uint8_t *tmp = malloc(ps->key->len + 1);
		if (!tmp)
			return -1;
		tmp[0] = COM_STMT_PREPARE;
		memcpy(tmp + 1, ps->key->sql, ps->key->len);
		int r = buf_put_packet(&b->out, 0, tmp, ps->key->len + 1);
		free(tmp);
		if (r < 0)
			return -1;
		b->internal++;
		b->prep_key = ps->key; /* prepare_ok caches it */
	}
	for (size_t off = ps->longdata.off; off + 4 <= ps->longdata.len;) {
		uint32_t len = get_le32(ps->longdata.d + off);
		uint8_t *pl = ps->longdata.d + off + 4;
		put_le32(pl + 1, *xid);
		if (buf_put_packet(&b->out, 0, pl, len) < 0)
			return -1;
		off += 4 + len;
	}
	return 0;
}
