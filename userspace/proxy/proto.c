/*
 * proto.c - the MySQL protocol codec (see proto.h). Bounds are checked on
 * every read: the input is whatever a client or a backend sent.
 */
#include "proxy/proto.h"

#include <errno.h>
#include <limits.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <string.h>
#include <sys/random.h>

/* ---- framing ---- */

int pkt_frag_hdr(const uint8_t *buf, size_t len, struct pkt_frag *f)
{
	if (len < PKT_HDR)
		return 0;
	f->len = (uint32_t)buf[0] | (uint32_t)buf[1] << 8 | (uint32_t)buf[2] << 16;
	f->seq = buf[3];
	return 1;
}

void pkt_put_hdr(uint8_t *dst, uint32_t len, uint8_t seq)
{
	dst[0] = len & 0xff;
	dst[1] = (len >> 8) & 0xff;
	dst[2] = (len >> 16) & 0xff;
	dst[3] = seq;
}

int pkt_whole(const uint8_t *buf, size_t len, size_t max, size_t *total, size_t *payload,
              uint8_t *seq)
{
	size_t off = 0, pl = 0;
	struct pkt_frag f;
	bool first = true;
	uint8_t next = 0;

	for (;;) {
		if (!pkt_frag_hdr(buf + off, len - off, &f))
			return 0;
		if (!first && f.seq != next)
			return -1;
		first = false;
		next = (uint8_t)(f.seq + 1);
		pl += f.len;
		if (pl > max)
			return -1;
		if (len - off - PKT_HDR < f.len)
			return 0;
		off += PKT_HDR + f.len;
		if (f.len < PKT_MAX_FRAG)
			break;
	}
	*total = off;
	*payload = pl;
	*seq = f.seq;
	return 1;
}

void pkt_join(uint8_t *dst, const uint8_t *src, size_t payload)
{
	size_t done = 0, off = 0;
	struct pkt_frag f;

	while (done < payload) {
		pkt_frag_hdr(src + off, PKT_HDR, &f);
		memmove(dst + done, src + off + PKT_HDR, f.len);
		done += f.len;
		off += PKT_HDR + f.len;
	}
}

/* ---- basic types ---- */

uint64_t rd_int(struct rd *r, unsigned nbytes)
{
	uint64_t v = 0;

	if (r->err || rd_left(r) < nbytes) {
		r->err = true;
		return 0;
	}
	for (unsigned i = 0; i < nbytes; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += nbytes;
	return v;
}

uint64_t rd_lenenc(struct rd *r, bool *is_null)
{
	uint8_t b;

	if (is_null)
		*is_null = false;
	if (r->err || rd_left(r) < 1) {
		r->err = true;
		return 0;
	}
	b = *r->p++;
	if (b < 0xfb)
		return b;
	if (b == 0xfb) {
		if (is_null)
			*is_null = true;
		return 0;
	}
	if (b == 0xfc)
		return rd_int(r, 2);
	if (b == 0xfd)
		return rd_int(r, 3);
	if (b == 0xfe)
		return rd_int(r, 8);
	r->err = true; /* 0xff is not a length */
	return 0;
}

const uint8_t *rd_bytes(struct rd *r, size_t n)
{
	const uint8_t *p = r->p;

	if (r->err || rd_left(r) < n) {
		r->err = true;
		return NULL;
	}
	r->p += n;
	return p;
}

const char *rd_cstr(struct rd *r, size_t *n)
{
	const uint8_t *nul;
	const char *s = (const char *)r->p;

	if (r->err || !(nul = memchr(r->p, 0, rd_left(r)))) {
		r->err = true;
		return NULL;
	}
	*n = (size_t)(nul - r->p);
	r->p = nul + 1;
	return s;
}

/* A string that ends with a NUL or, as some servers and clients send it, at
 * the end of the packet. */
static const char *rd_cstr_eof(struct rd *r, size_t *n)
{
	const uint8_t *nul;
	const char *s = (const char *)r->p;

	if (r->err)
		return NULL;
	nul = memchr(r->p, 0, rd_left(r));
	*n = nul ? (size_t)(nul - r->p) : rd_left(r);
	r->p = nul ? nul + 1 : r->end;
	return s;
}

const uint8_t *rd_lenenc_str(struct rd *r, size_t *n)
{
	bool is_null;
	uint64_t len = rd_lenenc(r, &is_null);

	if (r->err || is_null || len > rd_left(r)) {
		r->err = true;
		return NULL;
	}
	*n = (size_t)len;
	return rd_bytes(r, *n);
}

void wr_bytes(struct wr *w, const void *b, size_t n)
{
	if (w->err || (size_t)(w->end - w->p) < n) {
		w->err = true;
		return;
	}
	if (n)
		memcpy(w->p, b, n);
	w->p += n;
}

void wr_int(struct wr *w, uint64_t v, unsigned nbytes)
{
	uint8_t b[8];

	for (unsigned i = 0; i < nbytes; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	wr_bytes(w, b, nbytes);
}

size_t lenenc_size(uint64_t v)
{
	if (v < 0xfb)
		return 1;
	if (v < (1u << 16))
		return 3;
	if (v < (1u << 24))
		return 4;
	return 9;
}

void wr_lenenc(struct wr *w, uint64_t v)
{
	uint8_t b;

	if (v < 0xfb) {
		wr_int(w, v, 1);
		return;
	}
	if (v < (1u << 16)) {
		b = 0xfc;
		wr_bytes(w, &b, 1);
		wr_int(w, v, 2);
	} else if (v < (1u << 24)) {
		b = 0xfd;
		wr_bytes(w, &b, 1);
		wr_int(w, v, 3);
	} else {
		b = 0xfe;
		wr_bytes(w, &b, 1);
		wr_int(w, v, 8);
	}
}

void wr_cstr(struct wr *w, const char *s)
{
	wr_bytes(w, s, strlen(s) + 1);
}

void wr_lenenc_str(struct wr *w, const void *b, size_t n)
{
	wr_lenenc(w, n);
	wr_bytes(w, b, n);
}

static void copy_str(char *dst, size_t cap, const char *s, size_t n)
{
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, s, n);
	dst[n] = 0;
}

/* ---- handshake ---- */

int hs_build(uint8_t *dst, size_t cap, const struct handshake *h)
{
	struct wr w;
	static const uint8_t zeros[6];

	wr_init(&w, dst, cap);
	wr_int(&w, 10, 1);
	wr_cstr(&w, h->server_version);
	wr_int(&w, h->conn_id, 4);
	wr_bytes(&w, h->scramble, 8);
	wr_int(&w, 0, 1);
	wr_int(&w, h->caps & 0xffff, 2);
	wr_int(&w, h->charset, 1);
	wr_int(&w, h->status, 2);
	wr_int(&w, h->caps >> 16, 2);
	wr_int(&w, SCRAMBLE_LEN + 1, 1);
	wr_bytes(&w, zeros, 6);
	wr_int(&w, h->caps & CAP_LONG_PASSWORD ? 0 : h->ext_caps, 4);
	wr_bytes(&w, h->scramble + 8, SCRAMBLE_LEN - 8);
	wr_int(&w, 0, 1);
	wr_cstr(&w, h->plugin);
	return w.err ? -1 : (int)wr_len(&w);
}

int hs_parse(const uint8_t *p, size_t len, struct handshake *h)
{
	struct rd r;
	const char *s;
	const uint8_t *b;
	size_t n, alen = 0;

	memset(h, 0, sizeof(*h));
	rd_init(&r, p, len);
	if (rd_int(&r, 1) != 10)
		return -1;
	s = rd_cstr(&r, &n);
	if (!s)
		return -1;
	copy_str(h->server_version, sizeof(h->server_version), s, n);
	h->conn_id = (uint32_t)rd_int(&r, 4);
	b = rd_bytes(&r, 8);
	if (!b)
		return -1;
	memcpy(h->scramble, b, 8);
	h->scramble_len = 8;
	rd_int(&r, 1);
	h->caps = (uint32_t)rd_int(&r, 2);
	if (r.err)
		return -1;
	if (rd_left(&r) == 0)
		return 0;
	h->charset = (uint8_t)rd_int(&r, 1);
	h->status = (uint16_t)rd_int(&r, 2);
	h->caps |= (uint32_t)rd_int(&r, 2) << 16;
	alen = (size_t)rd_int(&r, 1);
	rd_bytes(&r, 6);
	h->ext_caps = (uint32_t)rd_int(&r, 4);
	if (r.err)
		return -1;
	if (h->caps & CAP_LONG_PASSWORD)
		h->ext_caps = 0; /* not a MariaDB server: reserved bytes */
	if (h->caps & CAP_SECURE_CONNECTION) {
		n = alen > 8 ? alen - 8 : 0;
		if (n < 13)
			n = 13;
		b = rd_bytes(&r, n);
		if (!b)
			return -1;
		/* The last byte is a NUL terminator, not scramble. */
		n = n - 1 > SCRAMBLE_LEN - 8 ? SCRAMBLE_LEN - 8 : n - 1;
		memcpy(h->scramble + 8, b, n);
		h->scramble_len = 8 + n;
	}
	if (h->caps & CAP_PLUGIN_AUTH) {
		s = rd_cstr_eof(&r, &n);
		if (!s)
			return -1;
		copy_str(h->plugin, sizeof(h->plugin), s, n);
	}
	return r.err ? -1 : 0;
}

/* A string ended by NUL (or, to_eof, by the packet's end) into dst, which
 * holds cap bytes with its NUL: -1 when it is missing or does not fit. */
static int rd_cstr_into(struct rd *r, bool to_eof, char *dst, size_t cap)
{
	size_t n;
	const char *s = to_eof ? rd_cstr_eof(r, &n) : rd_cstr(r, &n);

	if (!s || n >= cap)
		return -1;
	copy_str(dst, cap, s, n);
	return 0;
}

/* An auth response as caps frame it (length-encoded, one length byte, or
 * NUL-terminated) into dst of cap bytes: -1 when missing or too long. */
static int rd_auth(struct rd *r, uint32_t caps, uint8_t *dst, size_t cap, size_t *len)
{
	const uint8_t *b;
	size_t n;

	if (caps & CAP_PLUGIN_AUTH_LENENC) {
		b = rd_lenenc_str(r, &n);
	} else if (caps & CAP_SECURE_CONNECTION) {
		n = (size_t)rd_int(r, 1);
		b = rd_bytes(r, n);
	} else {
		b = (const uint8_t *)rd_cstr(r, &n);
	}
	if (!b || n > cap)
		return -1;
	memcpy(dst, b, n);
	*len = n;
	return 0;
}

int hsr_parse(const uint8_t *p, size_t len, struct hs_response *o)
{
	struct rd r;
	const char *s;
	size_t n;

	memset(o, 0, sizeof(*o));
	rd_init(&r, p, len);
	o->caps = (uint32_t)rd_int(&r, 4);
	o->max_packet = (uint32_t)rd_int(&r, 4);
	o->charset = (uint8_t)rd_int(&r, 1);
	rd_bytes(&r, 19);
	o->ext_caps = (uint32_t)rd_int(&r, 4);
	if (r.err || !(o->caps & CAP_PROTOCOL_41))
		return -1;
	if (o->caps & CAP_LONG_PASSWORD)
		o->ext_caps = 0; /* not a MariaDB client: filler */
	if (rd_left(&r) == 0 && (o->caps & CAP_SSL)) {
		o->ssl_request = true;
		return 0;
	}
	if (rd_cstr_into(&r, false, o->user, sizeof(o->user)) < 0 ||
	    rd_auth(&r, o->caps, o->auth, sizeof(o->auth), &o->auth_len) < 0)
		return -1;
	if ((o->caps & CAP_CONNECT_WITH_DB) && rd_left(&r) > 0) {
		if (rd_cstr_into(&r, true, o->db, sizeof(o->db)) < 0)
			return -1;
		o->has_db = o->db[0] != 0;
	}
	if ((o->caps & CAP_PLUGIN_AUTH) && rd_left(&r) > 0) {
		s = rd_cstr_eof(&r, &n);
		if (!s)
			return -1;
		copy_str(o->plugin, sizeof(o->plugin), s, n);
	}
	if ((o->caps & CAP_CONNECT_ATTRS) && rd_left(&r) > 0) {
		o->attrs = rd_lenenc_str(&r, &o->attrs_len);
		if (!o->attrs)
			return -1;
	}
	return r.err ? -1 : 0;
}

int chu_parse(const uint8_t *p, size_t len, uint32_t caps, struct change_user *o)
{
	struct rd r;
	const char *s;
	size_t n;

	memset(o, 0, sizeof(*o));
	rd_init(&r, p, len);
	if (rd_int(&r, 1) != COM_CHANGE_USER)
		return -1;
	/* COM_CHANGE_USER frames its auth response by SECURE_CONNECTION only */
	if (rd_cstr_into(&r, false, o->user, sizeof(o->user)) < 0 ||
	    rd_auth(&r, caps & ~(uint32_t)CAP_PLUGIN_AUTH_LENENC, o->auth, sizeof(o->auth),
	            &o->auth_len) < 0 ||
	    rd_cstr_into(&r, true, o->db, sizeof(o->db)) < 0)
		return -1;
	if (rd_left(&r) >= 2) {
		o->charset = (uint16_t)rd_int(&r, 2);
		o->has_charset = true;
	}
	if ((caps & CAP_PLUGIN_AUTH) && rd_left(&r) > 0) {
		s = rd_cstr_eof(&r, &n);
		if (!s)
			return -1;
		copy_str(o->plugin, sizeof(o->plugin), s, n);
	}
	/* connect attributes may follow: not kept */
	return r.err ? -1 : 0;
}

int hsr_build(uint8_t *dst, size_t cap, const struct hs_response *o)
{
	struct wr w;
	static const uint8_t zeros[19];

	wr_init(&w, dst, cap);
	wr_int(&w, o->caps, 4);
	wr_int(&w, o->max_packet, 4);
	wr_int(&w, o->charset, 1);
	wr_bytes(&w, zeros, 19);
	wr_int(&w, o->caps & CAP_LONG_PASSWORD ? 0 : o->ext_caps, 4);
	wr_cstr(&w, o->user);
	if (o->caps & CAP_PLUGIN_AUTH_LENENC) {
		wr_lenenc_str(&w, o->auth, o->auth_len);
	} else {
		wr_int(&w, o->auth_len, 1);
		wr_bytes(&w, o->auth, o->auth_len);
	}
	if (o->caps & CAP_CONNECT_WITH_DB)
		wr_cstr(&w, o->db);
	if (o->caps & CAP_PLUGIN_AUTH)
		wr_cstr(&w, o->plugin);
	if (o->caps & CAP_CONNECT_ATTRS)
		wr_lenenc_str(&w, o->attrs, o->attrs_len);
	return w.err ? -1 : (int)wr_len(&w);
}

int auth_switch_build(uint8_t *dst, size_t cap, const char *plugin, const uint8_t *data, size_t n)
{
	struct wr w;

	wr_init(&w, dst, cap);
	wr_int(&w, 0xfe, 1);
	wr_cstr(&w, plugin);
	wr_bytes(&w, data, n);
	wr_int(&w, 0, 1);
	return w.err ? -1 : (int)wr_len(&w);
}

int auth_switch_parse(const uint8_t *p, size_t len, char *plugin, size_t plugin_cap, uint8_t *data,
                      size_t *n)
{
	struct rd r;
	const char *s;
	size_t sl, dl;

	rd_init(&r, p, len);
	if (rd_int(&r, 1) != 0xfe)
		return -1;
	s = rd_cstr(&r, &sl);
	if (!s || plugin_cap == 0)
		return -1;
	copy_str(plugin, plugin_cap, s, sl);
	dl = rd_left(&r);
	if (dl > 0 && r.end[-1] == 0)
		dl--; /* the scramble's NUL terminator */
	if (dl > SCRAMBLE_LEN)
		dl = SCRAMBLE_LEN;
	memcpy(data, r.p, dl);
	*n = dl;
	return 0;
}

/* ---- OK / ERR / EOF ---- */

int ok_parse(const uint8_t *p, size_t len, uint32_t caps, struct ok_pkt *ok)
{
	struct rd r;
	uint8_t h;

	memset(ok, 0, sizeof(*ok));
	rd_init(&r, p, len);
	h = (uint8_t)rd_int(&r, 1);
	if (h != 0x00 && h != 0xfe)
		return -1;
	ok->affected = rd_lenenc(&r, NULL);
	ok->insert_id = rd_lenenc(&r, NULL);
	if (caps & CAP_PROTOCOL_41) {
		ok->status = (uint16_t)rd_int(&r, 2);
		ok->warnings = (uint16_t)rd_int(&r, 2);
	}
	if (r.err)
		return -1;
	if (!(caps & CAP_SESSION_TRACK)) {
		ok->info = r.p;
		ok->info_len = rd_left(&r);
		return 0;
	}
	if (rd_left(&r) == 0)
		return 0;
	ok->info = rd_lenenc_str(&r, &ok->info_len);
	if (!ok->info)
		return -1;
	if ((ok->status & SST_SESSION_STATE_CHANGED) && rd_left(&r) > 0) {
		ok->state = rd_lenenc_str(&r, &ok->state_len);
		if (!ok->state)
			return -1;
	}
	return 0;
}

int ok_build(uint8_t *dst, size_t cap, uint8_t header, uint64_t affected, uint64_t insert_id,
             uint16_t status, uint16_t warnings)
{
	struct wr w;

	wr_init(&w, dst, cap);
	wr_int(&w, header, 1);
	wr_lenenc(&w, affected);
	wr_lenenc(&w, insert_id);
	wr_int(&w, status, 2);
	wr_int(&w, warnings, 2);
	return w.err ? -1 : (int)wr_len(&w);
}

int err_build(uint8_t *dst, size_t cap, uint16_t code, const char *sqlstate, const char *msg)
{
	struct wr w;

	wr_init(&w, dst, cap);
	wr_int(&w, 0xff, 1);
	wr_int(&w, code, 2);
	wr_bytes(&w, "#", 1);
	wr_bytes(&w, sqlstate, 5);
	wr_bytes(&w, msg, strlen(msg));
	return w.err ? -1 : (int)wr_len(&w);
}

int err_parse(const uint8_t *p, size_t len, struct err_pkt *e)
{
	struct rd r;

	memset(e, 0, sizeof(*e));
	rd_init(&r, p, len);
	if (rd_int(&r, 1) != 0xff)
		return -1;
	e->code = (uint16_t)rd_int(&r, 2);
	if (r.err)
		return -1;
	if (rd_left(&r) >= 6 && r.p[0] == '#') {
		memcpy(e->sqlstate, r.p + 1, 5);
		r.p += 6;
	} else {
		memcpy(e->sqlstate, "HY000", 5);
	}
	copy_str(e->msg, sizeof(e->msg), (const char *)r.p, rd_left(&r));
	return 0;
}

int eof_build(uint8_t *dst, size_t cap, uint16_t warnings, uint16_t status)
{
	struct wr w;

	wr_init(&w, dst, cap);
	wr_int(&w, 0xfe, 1);
	wr_int(&w, warnings, 2);
	wr_int(&w, status, 2);
	return w.err ? -1 : (int)wr_len(&w);
}

int ok_find_last_gtid(const struct ok_pkt *ok, char *gtid, size_t cap)
{
	struct rd r, d;
	const uint8_t *data, *name, *val;
	size_t dlen, nlen, vlen;
	uint8_t type;

	if (!ok->state)
		return 0;
	rd_init(&r, ok->state, ok->state_len);
	while (rd_left(&r) > 0) {
		type = (uint8_t)rd_int(&r, 1);
		data = rd_lenenc_str(&r, &dlen);
		if (!data)
			return -1;
		if (type != TRACK_SYSVARS)
			continue;
		rd_init(&d, data, dlen);
		name = rd_lenenc_str(&d, &nlen);
		val = rd_lenenc_str(&d, &vlen);
		if (!name || !val)
			return -1;
		if (nlen == 9 && !memcmp(name, "last_gtid", 9)) {
			if (cap == 0 || vlen >= cap)
				return -1;
			copy_str(gtid, cap, (const char *)val, vlen);
			return 1;
		}
	}
	return 0;
}

int ok_state_changed(const struct ok_pkt *ok)
{
	struct rd r;
	size_t dlen;

	if (!ok->state)
		return 0;
	rd_init(&r, ok->state, ok->state_len);
	while (rd_left(&r) > 0) {
		uint8_t type = (uint8_t)rd_int(&r, 1);
		if (!rd_lenenc_str(&r, &dlen))
			return -1;
		if (type == TRACK_STATE_CHANGE)
			return 1;
	}
	return 0;
}

/* Whether a session-track system variable entry names that variable (its
 * first name/value pair, as ok_find_last_gtid and clients read it). Returns 1
 * or 0, -1 when malformed. */
static int sysvar_is(const uint8_t *data, size_t dlen, const char *name)
{
	struct rd d;
	const uint8_t *n;
	size_t nlen, vlen;

	rd_init(&d, data, dlen);
	n = rd_lenenc_str(&d, &nlen);
	if (!n || !rd_lenenc_str(&d, &vlen))
		return -1;
	return nlen == strlen(name) && !memcmp(n, name, nlen);
}

/* Whether a state entry goes: a system variable entry (type 0) naming
 * drop->sysvar, or a state-change entry (type 2) when drop->state_change.
 * Returns 1 or 0, -1 when malformed. */
static int state_drops(uint8_t type, const uint8_t *data, size_t dlen,
                       const struct ok_state_drop *drop)
{
	if (type == TRACK_SYSVARS && drop->sysvar)
		return sysvar_is(data, dlen, drop->sysvar);
	return type == TRACK_STATE_CHANGE && drop->state_change;
}

/* Walks the state entries: the bytes the kept ones take, and how many go.
 * Returns -1 when an entry is malformed. */
static int state_measure(const struct ok_pkt *ok, const struct ok_state_drop *what, size_t *kept,
                         size_t *drop)
{
	struct rd r;
	const uint8_t *start, *data;
	size_t dlen;
	int is;

	*kept = *drop = 0;
	rd_init(&r, ok->state, ok->state_len);
	while (rd_left(&r) > 0) {
		start = r.p;
		uint8_t type = (uint8_t)rd_int(&r, 1);
		data = rd_lenenc_str(&r, &dlen);
		if (!data)
			return -1;
		is = state_drops(type, data, dlen, what);
		if (is < 0)
			return -1;
		if (is)
			(*drop)++;
		else
			*kept += (size_t)(r.p - start);
	}
	return 0;
}

/* The offset of the status flags in an OK payload known to parse. */
static size_t ok_status_off(const uint8_t *p, size_t len)
{
	struct rd r;

	rd_init(&r, p, len);
	rd_int(&r, 1);
	rd_lenenc(&r, NULL);
	rd_lenenc(&r, NULL);
	return (size_t)(r.p - p);
}

/* Copies the kept entries down to out; they were validated by state_measure. */
static uint8_t *state_copy(uint8_t *out, const struct ok_pkt *ok, const struct ok_state_drop *what)
{
	struct rd r;
	const uint8_t *start, *data;
	size_t dlen;

	rd_init(&r, ok->state, ok->state_len);
	while (rd_left(&r) > 0) {
		start = r.p;
		uint8_t type = (uint8_t)rd_int(&r, 1);
		data = rd_lenenc_str(&r, &dlen);
		if (state_drops(type, data, dlen, what) == 1)
			continue;
		memmove(out, start, (size_t)(r.p - start));
		out += r.p - start;
	}
	return out;
}

int ok_drop_state(uint8_t *dst, const uint8_t *p, size_t len, uint32_t caps,
                  const struct ok_state_drop *what)
{
	struct ok_pkt ok;
	size_t kept, drop, pre, tail, off;
	uint8_t lenbuf[9];
	struct wr w;
	uint8_t *out;

	if (len > INT32_MAX || ok_parse(p, len, caps, &ok) < 0)
		return -1;
	if (!ok.state || !ok.info)
		return 0;
	if (state_measure(&ok, what, &kept, &drop) < 0)
		return -1;
	if (drop == 0)
		return 0;
	/* The state's length prefix starts right after the info string. */
	pre = (size_t)(ok.info + ok.info_len - p);
	tail = len - (size_t)(ok.state + ok.state_len - p);
	memmove(dst, p, pre);
	out = dst + pre;
	if (kept == 0) {
		off = ok_status_off(p, len);
		dst[off + 1] &= (uint8_t) ~(SST_SESSION_STATE_CHANGED >> 8);
	} else {
		/* a shorter length never takes more bytes than the old prefix */
		wr_init(&w, lenbuf, sizeof(lenbuf));
		wr_lenenc(&w, kept);
		memmove(out, lenbuf, wr_len(&w));
		out = state_copy(out + wr_len(&w), &ok, what);
	}
	memmove(out, ok.state + ok.state_len, tail);
	out += tail;
	return (int)(out - dst);
}

int ok_drop_sysvar(uint8_t *dst, const uint8_t *p, size_t len, uint32_t caps, const char *name)
{
	const struct ok_state_drop what = {.sysvar = name};

	return ok_drop_state(dst, p, len, caps, &what);
}

int ok_untrack(uint8_t *dst, const uint8_t *p, size_t len)
{
	struct ok_pkt ok;
	size_t status, end;

	if (len > INT32_MAX || ok_parse(p, len, CAP_PROTOCOL_41 | CAP_SESSION_TRACK, &ok) < 0)
		return -1;
	status = ok_status_off(p, len);
	/* up to the warnings, and the info as it is when there is one */
	end = ok.info_len > 0 ? (size_t)(ok.info + ok.info_len - p) : status + 4;
	memmove(dst, p, end);
	dst[status + 1] &= (uint8_t) ~(SST_SESSION_STATE_CHANGED >> 8);
	return (int)end;
}

/* ---- responses ---- */

void resp_init(struct resp_tracker *t, enum resp_kind kind, uint32_t caps)
{
	memset(t, 0, sizeof(*t));
	t->kind = kind;
	t->caps = caps;
	t->state = kind == RESP_ROWS ? RS_ROWS : RS_FIRST;
}

static bool small_pkt(uint32_t frag_len)
{
	return frag_len < PKT_MAX_FRAG;
}

bool resp_needs_whole(const struct resp_tracker *t, const uint8_t *p, size_t n, uint32_t frag_len)
{
	if (t->in_frag || !small_pkt(frag_len))
		return false;
	if (t->state == RS_FIRST || t->state == RS_INFILE)
		return true;
	return n == 0 || p[0] == 0xfe || p[0] == 0xff;
}

/* The proxy hands a connection back to the pool between statements only when
 * nothing is left for SHOW WARNINGS to read there. */
static void note_warnings(struct resp_tracker *t, uint16_t warnings)
{
	if (warnings > t->warnings)
		t->warnings = warnings;
}

/* An EOF packet, or under DEPRECATE_EOF the OK with a 0xfe header. */
static int parse_eof(struct resp_tracker *t, const uint8_t *p, size_t n, uint16_t *status)
{
	struct rd r;
	uint16_t warn;

	if (t->caps & CAP_DEPRECATE_EOF && n > 5) {
		if (ok_parse(p, n, t->caps, &t->last_ok) < 0)
			return -1;
		t->ok_now = true;
		*status = t->last_ok.status;
		note_warnings(t, t->last_ok.warnings);
		return 0;
	}
	rd_init(&r, p + 1, n - 1);
	warn = (uint16_t)rd_int(&r, 2);
	*status = (uint16_t)rd_int(&r, 2);
	if (r.err)
		return -1;
	note_warnings(t, warn);
	return 0;
}

static enum resp_state end_or_more(struct resp_tracker *t, uint16_t status)
{
	t->status = status;
	return status & SST_MORE_RESULTS ? RS_FIRST : RS_DONE;
}

static enum resp_state feed_first(struct resp_tracker *t, const uint8_t *p, size_t n,
                                  uint32_t frag_len)
{
	struct rd r;
	uint64_t cols;

	if (t->kind == RESP_ONE_PACKET)
		return RS_DONE;
	if (n == 0)
		return RS_ERROR;
	if (p[0] == 0xff && small_pkt(frag_len)) {
		t->saw_err = true;
		return RS_DONE;
	}
	if (t->kind == RESP_FIELD_LIST) {
		if (p[0] == 0xfe && small_pkt(frag_len))
			return RS_DONE;
		return RS_FIELDS;
	}
	if (t->kind == RESP_PREPARE) {
		if (p[0] != 0x00 || n < 12)
			return RS_ERROR;
		rd_init(&r, p + 1, n - 1);
		t->stmt_id = (uint32_t)rd_int(&r, 4);
		t->prep_ncols = (uint16_t)rd_int(&r, 2);
		t->prep_params = (uint16_t)rd_int(&r, 2);
		t->prep_cols = t->prep_ncols;
		if (t->prep_params) {
			t->left = t->prep_params;
			return RS_PREP_PARAMS;
		}
		if (t->prep_cols) {
			t->left = t->prep_cols;
			return RS_PREP_COLS;
		}
		return RS_DONE;
	}
	if (p[0] == 0xfe && n < 9 && small_pkt(frag_len)) {
		uint16_t st;

		/* A lone EOF: the whole answer to COM_SET_OPTION. */
		if (parse_eof(t, p, n, &st) < 0)
			return RS_ERROR;
		t->status = st;
		return RS_DONE;
	}
	if (p[0] == 0x00) {
		if (ok_parse(p, n, t->caps, &t->last_ok) < 0)
			return RS_ERROR;
		t->ok_now = true;
		note_warnings(t, t->last_ok.warnings);
		return end_or_more(t, t->last_ok.status);
	}
	/* LOCAL INFILE request: only to a connection that asked for it */
	if (p[0] == 0xfb)
		return t->kind == RESP_GENERIC && (t->caps & CAP_LOCAL_FILES) && small_pkt(frag_len)
		           ? RS_INFILE
		           : RS_ERROR;
	rd_init(&r, p, n);
	cols = rd_lenenc(&r, NULL);
	if (r.err || cols == 0)
		return RS_ERROR;
	t->left = cols;
	return RS_COLS;
}

static bool is_eof(const uint8_t *p, size_t n, uint32_t frag_len)
{
	return n > 0 && p[0] == 0xfe && small_pkt(frag_len);
}

static bool is_err(const uint8_t *p, size_t n, uint32_t frag_len)
{
	return n > 0 && p[0] == 0xff && small_pkt(frag_len);
}

static enum resp_state feed_state(struct resp_tracker *t, const uint8_t *p, size_t n,
                                  uint32_t frag_len)
{
	uint16_t st;
	bool deprecate = t->caps & CAP_DEPRECATE_EOF;

	switch (t->state) {
	case RS_FIRST:
		return feed_first(t, p, n, frag_len);
	case RS_INFILE: /* after the file: the statement's OK or ERR */
		if (n == 0 || (p[0] != 0x00 && p[0] != 0xff))
			return RS_ERROR;
		return feed_first(t, p, n, frag_len);
	case RS_COLS:
	case RS_PREP_PARAMS:
	case RS_PREP_COLS:
		if (--t->left > 0)
			return t->state;
		if (t->state == RS_COLS)
			return deprecate ? RS_ROWS : RS_COLS_EOF;
		if (t->state == RS_PREP_COLS)
			return deprecate ? RS_DONE : RS_PREP_COLS_EOF;
		if (!deprecate)
			return RS_PREP_PARAMS_EOF;
		t->left = t->prep_cols;
		return t->prep_cols ? RS_PREP_COLS : RS_DONE;
	case RS_PREP_PARAMS_EOF:
		if (!is_eof(p, n, frag_len))
			return RS_ERROR;
		t->left = t->prep_cols;
		return t->prep_cols ? RS_PREP_COLS : RS_DONE;
	case RS_PREP_COLS_EOF:
		return is_eof(p, n, frag_len) ? RS_DONE : RS_ERROR;
	case RS_COLS_EOF:
		if (!is_eof(p, n, frag_len) || parse_eof(t, p, n, &st) < 0)
			return RS_ERROR;
		t->status = st;
		/* A cursor was opened by COM_STMT_EXECUTE: rows come with
		 * COM_STMT_FETCH. A result set of a CALL always has more
		 * results after it, and may carry the flag of a cursor the
		 * procedure opened for itself: its rows follow here. */
		return (st & SST_CURSOR_EXISTS) && !(st & SST_MORE_RESULTS) ? RS_DONE : RS_ROWS;
	case RS_ROWS:
		if (is_err(p, n, frag_len)) {
			t->saw_err = true;
			return RS_DONE;
		}
		if (!is_eof(p, n, frag_len))
			return RS_ROWS;
		if (parse_eof(t, p, n, &st) < 0)
			return RS_ERROR;
		return end_or_more(t, st);
	case RS_FIELDS:
		if (is_err(p, n, frag_len)) {
			t->saw_err = true;
			return RS_DONE;
		}
		return is_eof(p, n, frag_len) ? RS_DONE : RS_FIELDS;
	case RS_DONE:
	case RS_ERROR:
		return RS_ERROR; /* nothing may follow the end of a response */
	}
	return RS_ERROR;
}

enum resp_state resp_feed(struct resp_tracker *t, const uint8_t *p, size_t n, uint32_t frag_len)
{
	if (n > frag_len)
		n = frag_len;
	t->ok_now = false;
	if (t->in_frag) {
		t->in_frag = !small_pkt(frag_len);
		return t->state;
	}
	if (t->state == RS_DONE || t->state == RS_ERROR)
		return t->state = RS_ERROR;
	t->in_frag = !small_pkt(frag_len);
	t->state = feed_state(t, p, n, frag_len);
	return t->state;
}

/* ---- mysql_native_password ---- */

/* The digest md of a then b (blen 0: a alone) in out, outlen bytes; on
 * failure zeros, which match no real stage2 or digest. */
static void digest2(const EVP_MD *md, const void *a, size_t alen, const void *b, size_t blen,
                    uint8_t *out, unsigned int outlen)
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	unsigned int n = outlen;

	if (!c || !EVP_DigestInit_ex(c, md, NULL) || !EVP_DigestUpdate(c, a, alen) ||
	    (blen && !EVP_DigestUpdate(c, b, blen)) || !EVP_DigestFinal_ex(c, out, &n))
		memset(out, 0, outlen);
	EVP_MD_CTX_free(c);
}

void sha1(const void *a, size_t alen, const void *b, size_t blen, uint8_t out[SHA1_LEN])
{
	digest2(EVP_sha1(), a, alen, b, blen, out, SHA1_LEN);
}

static int random_bytes(uint8_t *d, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		n = getrandom(d + got, len - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		got += (size_t)n;
	}
	return 0;
}

static void scramble_printable(uint8_t s[SCRAMBLE_LEN])
{
	for (int i = 0; i < SCRAMBLE_LEN; i++)
		s[i] = (uint8_t)(0x21 + s[i] % 94); /* printable, never NUL */
}

int scramble_fill(uint8_t s[SCRAMBLE_LEN])
{
	if (random_bytes(s, SCRAMBLE_LEN) < 0)
		return -1;
	scramble_printable(s);
	return 0;
}

int scramble_fill_pooled(struct rnd_pool *rp, uint8_t s[SCRAMBLE_LEN])
{
	if (rp->left < SCRAMBLE_LEN) {
		if (random_bytes(rp->buf, sizeof(rp->buf)) < 0)
			return -1;
		rp->left = sizeof(rp->buf);
	}
	uint8_t *from = rp->buf + sizeof(rp->buf) - rp->left;
	memcpy(s, from, SCRAMBLE_LEN);
	memset(from, 0, SCRAMBLE_LEN); /* a scramble is not left behind for reuse */
	rp->left -= SCRAMBLE_LEN;
	scramble_printable(s);
	return 0;
}

void native_stage2(const char *password, size_t len, uint8_t stage2[SHA1_LEN])
{
	uint8_t stage1[SHA1_LEN];

	sha1(password, len, NULL, 0, stage1);
	sha1(stage1, SHA1_LEN, NULL, 0, stage2);
	explicit_bzero(stage1, sizeof(stage1));
}

int native_verify(const uint8_t *scramble, const uint8_t *reply, size_t reply_len,
                  const uint8_t stage2[SHA1_LEN], uint8_t stage1[SHA1_LEN])
{
	uint8_t h[SHA1_LEN], check[SHA1_LEN];
	uint8_t diff = 0;

	if (reply_len != SHA1_LEN)
		return -1;
	sha1(scramble, SCRAMBLE_LEN, stage2, SHA1_LEN, h);
	for (int i = 0; i < SHA1_LEN; i++)
		stage1[i] = reply[i] ^ h[i];
	sha1(stage1, SHA1_LEN, NULL, 0, check);
	for (int i = 0; i < SHA1_LEN; i++)
		diff |= check[i] ^ stage2[i];
	return diff ? -1 : 0;
}

void native_reply(const uint8_t *scramble, const uint8_t stage1[SHA1_LEN], uint8_t reply[SHA1_LEN])
{
	uint8_t stage2[SHA1_LEN], h[SHA1_LEN];

	sha1(stage1, SHA1_LEN, NULL, 0, stage2);
	sha1(scramble, SCRAMBLE_LEN, stage2, SHA1_LEN, h);
	for (int i = 0; i < SHA1_LEN; i++)
		reply[i] = stage1[i] ^ h[i];
}

/* ---- caching_sha2_password ---- */

void sha256(const void *a, size_t alen, const void *b, size_t blen, uint8_t out[SHA256_LEN])
{
	digest2(EVP_sha256(), a, alen, b, blen, out, SHA256_LEN);
}

void sha2_digest2(const char *password, size_t len, uint8_t d2[SHA256_LEN])
{
	uint8_t d1[SHA256_LEN];

	sha256(password, len, NULL, 0, d1);
	sha256(d1, SHA256_LEN, NULL, 0, d2);
	explicit_bzero(d1, sizeof(d1));
}

void sha2_reply(const char *password, size_t len, const uint8_t *scramble,
                uint8_t reply[SHA256_LEN])
{
	uint8_t d1[SHA256_LEN], d2[SHA256_LEN], h[SHA256_LEN];

	sha256(password, len, NULL, 0, d1);
	sha256(d1, SHA256_LEN, NULL, 0, d2);
	sha256(d2, SHA256_LEN, scramble, SCRAMBLE_LEN, h);
	for (int i = 0; i < SHA256_LEN; i++)
		reply[i] = d1[i] ^ h[i];
	explicit_bzero(d1, sizeof(d1));
}

int sha2_verify(const uint8_t *scramble, const uint8_t *reply, size_t n,
                const uint8_t d2[SHA256_LEN])
{
	static const uint8_t none[SHA256_LEN];
	uint8_t h[SHA256_LEN], d1[SHA256_LEN], check[SHA256_LEN];
	uint8_t diff = n != SHA256_LEN;

	if (n != SHA256_LEN)
		reply = none;
	sha256(d2, SHA256_LEN, scramble, SCRAMBLE_LEN, h);
	for (int i = 0; i < SHA256_LEN; i++)
		d1[i] = reply[i] ^ h[i];
	sha256(d1, SHA256_LEN, NULL, 0, check);
	for (int i = 0; i < SHA256_LEN; i++)
		diff |= check[i] ^ d2[i];
	explicit_bzero(d1, sizeof(d1));
	return diff ? -1 : 0;
}

void sha2_xor(uint8_t *p, size_t n, const uint8_t *scramble)
{
	for (size_t i = 0; i < n; i++)
		p[i] ^= scramble[i % SCRAMBLE_LEN];
}

int more_data_build(uint8_t *dst, size_t cap, const uint8_t *data, size_t n)
{
	struct wr w;

	wr_init(&w, dst, cap);
	wr_int(&w, MORE_DATA, 1);
	wr_bytes(&w, data, n);
	return w.err ? -1 : (int)wr_len(&w);
}

int sha2_rsa_decrypt(struct evp_pkey_st *key, const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
	EVP_PKEY_CTX *c = EVP_PKEY_CTX_new(key, NULL);
	size_t len = cap;
	int r = -1;

	if (c && EVP_PKEY_decrypt_init(c) > 0 &&
	    EVP_PKEY_CTX_set_rsa_padding(c, RSA_PKCS1_OAEP_PADDING) > 0 &&
	    EVP_PKEY_decrypt(c, out, &len, in, n) > 0)
		r = (int)len;
	EVP_PKEY_CTX_free(c);
	ERR_clear_error();
	return r;
}

int sha2_rsa_encrypt(const uint8_t *pem, size_t pem_len, const char *password, size_t len,
                     const uint8_t *scramble, uint8_t *out, size_t cap)
{
	BIO *bio = pem_len <= INT_MAX ? BIO_new_mem_buf(pem, (int)pem_len) : NULL;
	EVP_PKEY *key = bio ? PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL) : NULL;
	EVP_PKEY_CTX *c = key ? EVP_PKEY_CTX_new(key, NULL) : NULL;
	uint8_t in[512];
	size_t olen = cap;
	int r = -1;

	if (c && len < sizeof(in)) {
		memcpy(in, password, len);
		in[len] = 0;
		sha2_xor(in, len + 1, scramble);
		if (EVP_PKEY_encrypt_init(c) > 0 &&
		    EVP_PKEY_CTX_set_rsa_padding(c, RSA_PKCS1_OAEP_PADDING) > 0 &&
		    EVP_PKEY_encrypt(c, out, &olen, in, len + 1) > 0)
			r = (int)olen;
	}
	explicit_bzero(in, sizeof(in));
	EVP_PKEY_CTX_free(c);
	EVP_PKEY_free(key);
	BIO_free(bio);
	ERR_clear_error();
	return r;
}

int coldef_add_ext_meta(const uint8_t *p, size_t n, uint8_t *dst, size_t cap)
{
	struct rd r;
	size_t len, at;

	rd_init(&r, p, n);
	/* catalog, schema, table, org_table, name, org_name */
	for (int i = 0; i < 6; i++)
		if (!rd_lenenc_str(&r, &len))
			return -1;
	at = (size_t)(r.p - p);
	if (n + 1 > cap || rd_left(&r) < 1 || r.p[0] != 0x0c)
		return -1;
	memcpy(dst, p, at);
	dst[at] = 0; /* no extended metadata */
	memcpy(dst + at + 1, p + at, n - at);
	return (int)(n + 1);
}
