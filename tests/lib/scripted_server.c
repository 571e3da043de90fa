/*
 * scripted_server.c - a MySQL server played by a test (scripted_server.h).
 */
#define _GNU_SOURCE
#include "scripted_server.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct sbuf {
	uint8_t *d;
	size_t off, len, cap;
};

struct ss_server {
	int fd;
	enum ss_phase phase;
	uint32_t offered, caps;
	uint8_t seq;         /* of the next packet written */
	struct sbuf in, out; /* in: raw bytes read; out: bytes to write */
	uint8_t *req;        /* the last request's joined payload */
	size_t trickle;
	bool eof; /* the peer closed its side */
};

static int sbuf_reserve(struct sbuf *b, size_t more)
{
	size_t cap;
	uint8_t *d;

	if (b->off && b->off == b->len)
		b->off = b->len = 0;
	if (b->cap - b->len >= more)
		return 0;
	if (b->off) {
		memmove(b->d, b->d + b->off, b->len - b->off);
		b->len -= b->off;
		b->off = 0;
		if (b->cap - b->len >= more)
			return 0;
	}
	cap = b->cap ? b->cap : 4096;
	while (cap - b->len < more)
		cap *= 2;
	d = realloc(b->d, cap);
	if (!d)
		return -1;
	b->d = d;
	b->cap = cap;
	return 0;
}

static void sbuf_append(struct sbuf *b, const void *p, size_t n)
{
	if (n == 0 || sbuf_reserve(b, n) < 0)
		return; /* out of memory: the answer is cut, which the test sees */
	memcpy(b->d + b->len, p, n);
	b->len += n;
}

static void put_packet(struct ss_server *s, const void *p, size_t n)
{
	const uint8_t *q = p;

	for (;;) {
		uint32_t f = n >= PKT_MAX_FRAG ? PKT_MAX_FRAG : (uint32_t)n;
		uint8_t hdr[PKT_HDR];

		pkt_put_hdr(hdr, f, s->seq++);
		sbuf_append(&s->out, hdr, sizeof(hdr));
		sbuf_append(&s->out, q, f);
		q += f;
		n -= f;
		if (f < PKT_MAX_FRAG)
			return;
	}
}

struct ss_server *ss_new(int fd, const struct ss_opts *o)
{
	static const uint8_t fixed[SCRAMBLE_LEN] = "abcdefghij0123456789";
	const struct ss_opts none = {0};
	struct ss_server *s = calloc(1, sizeof(*s));
	struct handshake h = {0};
	uint8_t pkt[256];
	int n;

	if (!s) {
		close(fd);
		return NULL;
	}
	if (!o)
		o = &none;
	s->fd = fd;
	s->phase = SS_LOGIN;
	s->offered = s->caps = o->caps ? o->caps : SS_CAPS_MYSQL8;
	snprintf(h.server_version, sizeof(h.server_version), "%s",
	         o->version ? o->version : "8.0.36");
	h.conn_id = o->conn_id ? o->conn_id : 1;
	memcpy(h.scramble, o->scramble ? o->scramble : fixed, SCRAMBLE_LEN);
	h.scramble_len = SCRAMBLE_LEN;
	h.caps = s->offered;
	h.ext_caps = o->ext_caps;
	h.charset = 45;
	h.status = o->status ? o->status : SST_AUTOCOMMIT;
	snprintf(h.plugin, sizeof(h.plugin), "%s", o->plugin ? o->plugin : NATIVE_PLUGIN);
	n = hs_build(pkt, sizeof(pkt), &h);
	if (n > 0)
		put_packet(s, pkt, (size_t)n);
	return s;
}

void ss_free(struct ss_server *s)
{
	if (!s)
		return;
	if (s->fd >= 0)
		close(s->fd);
	free(s->in.d);
	free(s->out.d);
	free(s->req);
	free(s);
}

int ss_fd(const struct ss_server *s)
{
	return s->fd;
}

enum ss_phase ss_phase(const struct ss_server *s)
{
	return s->phase;
}

uint32_t ss_caps(const struct ss_server *s)
{
	return s->caps;
}

size_t ss_pending(const struct ss_server *s)
{
	return s->out.len - s->out.off;
}

int ss_io(struct ss_server *s)
{
	int moved = 0;

	if (s->phase == SS_CLOSED)
		return -1;
	while (ss_pending(s) > 0) {
		size_t n = ss_pending(s);
		ssize_t w;

		if (s->trickle && n > s->trickle)
			n = s->trickle;
		w = send(s->fd, s->out.d + s->out.off, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (w <= 0) {
			s->eof = true;
			break;
		}
		s->out.off += (size_t)w;
		moved = 1;
		if (s->trickle)
			break;
	}
	while (!s->eof) {
		ssize_t r;

		if (sbuf_reserve(&s->in, 16384) < 0)
			break;
		r = recv(s->fd, s->in.d + s->in.len, s->in.cap - s->in.len, MSG_DONTWAIT);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (r <= 0) {
			s->eof = true;
			break;
		}
		s->in.len += (size_t)r;
		moved = 1;
	}
	if (s->eof && s->in.len == s->in.off)
		return -1;
	return moved;
}

int ss_next(struct ss_server *s, struct ss_req *r)
{
	size_t total, payload;
	uint8_t seq;
	int k;

	if (s->phase == SS_CLOSED)
		return -1;
	k = pkt_whole(s->in.d + s->in.off, s->in.len - s->in.off, 1u << 24, &total, &payload, &seq);
	if (k <= 0)
		return k;
	free(s->req);
	s->req = malloc(payload ? payload : 1);
	if (!s->req)
		return -1;
	pkt_join(s->req, s->in.d + s->in.off, payload);
	s->in.off += total;
	memset(r, 0, sizeof(*r));
	r->phase = s->phase;
	r->p = s->req;
	r->n = payload;
	r->seq = seq;
	s->seq = (uint8_t)(seq + 1);
	if (s->phase == SS_LOGIN) {
		r->login_ok = hsr_parse(s->req, payload, &r->login) == 0;
		if (r->login_ok && !r->login.ssl_request)
			s->caps = s->offered & r->login.caps;
	}
	return 1;
}

/* ---- answers ---- */

static uint16_t st_or_default(uint16_t status)
{
	return status ? status : SST_AUTOCOMMIT;
}

static void put_ok(struct ss_server *s, uint8_t header, const struct ss_ok *ok)
{
	const struct ss_ok plain = {0};
	uint8_t pkt[1024];
	struct wr w;
	uint16_t status;

	if (!ok)
		ok = &plain;
	status = st_or_default(ok->status);
	if (ok->state && (s->caps & CAP_SESSION_TRACK))
		status |= SST_SESSION_STATE_CHANGED;
	wr_init(&w, pkt, sizeof(pkt));
	wr_int(&w, header, 1);
	wr_lenenc(&w, ok->affected);
	wr_lenenc(&w, ok->insert_id);
	wr_int(&w, status, 2);
	wr_int(&w, ok->warnings, 2);
	if (s->caps & CAP_SESSION_TRACK) {
		if (ok->info || (status & SST_SESSION_STATE_CHANGED))
			wr_lenenc_str(&w, ok->info ? ok->info : "",
			              ok->info ? strlen(ok->info) : 0);
		if (status & SST_SESSION_STATE_CHANGED)
			wr_lenenc_str(&w, ok->state, ok->state_len);
	} else if (ok->info) {
		wr_bytes(&w, ok->info, strlen(ok->info));
	}
	if (!w.err)
		put_packet(s, pkt, wr_len(&w));
}

void ss_ok(struct ss_server *s, const struct ss_ok *ok)
{
	put_ok(s, 0x00, ok);
	if (s->phase == SS_LOGIN || s->phase == SS_AUTH)
		s->phase = SS_COMMAND;
}

void ss_err(struct ss_server *s, uint16_t code, const char *sqlstate, const char *msg)
{
	uint8_t pkt[1024];
	int n =
	    err_build(pkt, sizeof(pkt), code, sqlstate ? sqlstate : "HY000", msg ? msg : "error");

	if (n > 0)
		put_packet(s, pkt, (size_t)n);
}

void ss_eof(struct ss_server *s, uint16_t warnings, uint16_t status)
{
	uint8_t pkt[16];
	int n = eof_build(pkt, sizeof(pkt), warnings, st_or_default(status));

	if (n > 0)
		put_packet(s, pkt, (size_t)n);
}

static void put_coldef(struct ss_server *s, const char *name, uint8_t type)
{
	uint8_t pkt[512];
	struct wr w;

	wr_init(&w, pkt, sizeof(pkt));
	wr_lenenc_str(&w, "def", 3);
	wr_lenenc_str(&w, "test", 4);
	wr_lenenc_str(&w, "t", 1);
	wr_lenenc_str(&w, "t", 1);
	wr_lenenc_str(&w, name, strlen(name));
	wr_lenenc_str(&w, name, strlen(name));
	wr_lenenc(&w, 0x0c);
	wr_int(&w, 45, 2);  /* utf8mb4_general_ci */
	wr_int(&w, 255, 4); /* length */
	wr_int(&w, type, 1);
	wr_int(&w, 0, 2); /* flags */
	wr_int(&w, 0, 1); /* decimals */
	wr_int(&w, 0, 2);
	if (!w.err)
		put_packet(s, pkt, wr_len(&w));
}

/* The end of a list of definitions or of rows. */
static void put_end(struct ss_server *s, uint16_t status, bool rows)
{
	const struct ss_ok ok = {.status = status};

	if (!(s->caps & CAP_DEPRECATE_EOF))
		ss_eof(s, 0, status);
	else if (rows)
		put_ok(s, 0xfe, &ok);
}

void ss_result(struct ss_server *s, unsigned ncols, const char *const *names, unsigned nrows,
               const char *const *cells, uint16_t status)
{
	uint8_t pkt[64];
	struct wr w;

	wr_init(&w, pkt, sizeof(pkt));
	wr_lenenc(&w, ncols);
	put_packet(s, pkt, wr_len(&w));
	for (unsigned i = 0; i < ncols; i++) {
		char nm[16];

		snprintf(nm, sizeof(nm), "c%u", i);
		put_coldef(s, names && names[i] ? names[i] : nm, 0xfd /* VAR_STRING */);
	}
	put_end(s, 0, false);
	for (unsigned r = 0; r < nrows; r++) {
		size_t len = 0;
		uint8_t *row;

		for (unsigned i = 0; i < ncols; i++) {
			const char *v = cells ? cells[r * ncols + i] : "1";
			len += v ? 9 + strlen(v) : 1;
		}
		row = malloc(len ? len : 1);
		if (!row)
			return;
		wr_init(&w, row, len ? len : 1);
		for (unsigned i = 0; i < ncols; i++) {
			const char *v = cells ? cells[r * ncols + i] : "1";
			if (v)
				wr_lenenc_str(&w, v, strlen(v));
			else
				wr_int(&w, 0xfb, 1);
		}
		put_packet(s, row, wr_len(&w));
		free(row);
	}
	put_end(s, status, true);
}

void ss_prepare_ok(struct ss_server *s, uint32_t stmt_id, uint16_t ncols, uint16_t nparams,
                   uint16_t warnings)
{
	uint8_t pkt[16];
	struct wr w;

	wr_init(&w, pkt, sizeof(pkt));
	wr_int(&w, 0x00, 1);
	wr_int(&w, stmt_id, 4);
	wr_int(&w, ncols, 2);
	wr_int(&w, nparams, 2);
	wr_int(&w, 0, 1);
	wr_int(&w, warnings, 2);
	put_packet(s, pkt, wr_len(&w));
	for (unsigned i = 0; i < nparams; i++)
		put_coldef(s, "?", 0xfd);
	if (nparams)
		put_end(s, 0, false);
	for (unsigned i = 0; i < ncols; i++) {
		char nm[16];

		snprintf(nm, sizeof(nm), "c%u", i);
		put_coldef(s, nm, 0xfd);
	}
	if (ncols)
		put_end(s, 0, false);
}

void ss_auth_switch(struct ss_server *s, const char *plugin, const uint8_t *data, size_t n)
{
	uint8_t pkt[512];
	int len = auth_switch_build(pkt, sizeof(pkt), plugin, data, n);

	if (len > 0)
		put_packet(s, pkt, (size_t)len);
	if (s->phase == SS_LOGIN)
		s->phase = SS_AUTH;
}

void ss_packet(struct ss_server *s, const void *p, size_t n)
{
	put_packet(s, p, n);
	/* a client takes any packet led by 0x00 for the OK that ends a login */
	if ((s->phase == SS_LOGIN || s->phase == SS_AUTH) && n > 0 && *(const uint8_t *)p == 0x00)
		s->phase = SS_COMMAND;
}

void ss_raw(struct ss_server *s, const void *p, size_t n)
{
	sbuf_append(&s->out, p, n);
}

void ss_trickle(struct ss_server *s, size_t chunk)
{
	s->trickle = chunk;
}

void ss_close(struct ss_server *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	s->phase = SS_CLOSED;
}

/* ---- session state information ---- */

size_t ss_state_sysvar(uint8_t *dst, size_t cap, const char *name, const char *value)
{
	size_t nl = strlen(name), vl = strlen(value);
	size_t data = lenenc_size(nl) + nl + lenenc_size(vl) + vl;
	struct wr w;

	wr_init(&w, dst, cap);
	wr_int(&w, TRACK_SYSVARS, 1);
	wr_lenenc(&w, data);
	wr_lenenc_str(&w, name, nl);
	wr_lenenc_str(&w, value, vl);
	return w.err ? 0 : wr_len(&w);
}

size_t ss_state_changed(uint8_t *dst, size_t cap)
{
	struct wr w;

	wr_init(&w, dst, cap);
	wr_int(&w, TRACK_STATE_CHANGE, 1);
	wr_lenenc(&w, 2);
	wr_lenenc_str(&w, "1", 1);
	return w.err ? 0 : wr_len(&w);
}
