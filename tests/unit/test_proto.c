/*
 * test_proto.c - unit tests of the 6450 proxy's protocol codec: framing of
 * split packets, the handshake both ways, native password (including the
 * recovery of SHA1(password) for hash-only users), OK/ERR/EOF and the
 * tracking of response ends that streaming relies on; caching_sha2_password
 * (the scramble math against Python hashlib vectors, the RSA exchange).
 */
#include <check.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/proto.h"

static void hex(const uint8_t *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02X", b[i]);
}

START_TEST(lenenc_roundtrip)
{
	static const uint64_t vals[] = {
	    0, 1, 250, 251, 65535, 65536, 16777215, 16777216, 0xffffffffffffull};
	uint8_t buf[16];

	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		struct wr w;
		struct rd r;
		bool is_null;

		wr_init(&w, buf, sizeof(buf));
		wr_lenenc(&w, vals[i]);
		ck_assert(!w.err);
		ck_assert_uint_eq(wr_len(&w), lenenc_size(vals[i]));
		rd_init(&r, buf, wr_len(&w));
		ck_assert_uint_eq(rd_lenenc(&r, &is_null), vals[i]);
		ck_assert(!r.err && !is_null && rd_left(&r) == 0);
	}
	/* truncated 8-byte length */
	struct rd r;
	uint8_t t[] = {0xfe, 1, 2};
	rd_init(&r, t, sizeof(t));
	rd_lenenc(&r, NULL);
	ck_assert(r.err);
}
END_TEST

START_TEST(split_packets)
{
	size_t payload = 2 * PKT_MAX_FRAG + 10, total, pl;
	size_t wire = payload + 3 * PKT_HDR;
	uint8_t *buf = malloc(wire), *out, seq;
	size_t off = 0, left = payload;
	uint8_t s = 5;

	ck_assert_ptr_nonnull(buf);
	for (int i = 0; i < 3; i++) {
		uint32_t n = left >= PKT_MAX_FRAG ? PKT_MAX_FRAG : (uint32_t)left;
		pkt_put_hdr(buf + off, n, s++);
		for (uint32_t k = 0; k < n; k++)
			buf[off + PKT_HDR + k] = (uint8_t)((payload - left + k) * 7);
		off += PKT_HDR + n;
		left -= n;
	}
	ck_assert_int_eq(pkt_whole(buf, wire - 1, SIZE_MAX, &total, &pl, &seq), 0);
	ck_assert_int_eq(pkt_whole(buf, wire, SIZE_MAX, &total, &pl, &seq), 1);
	ck_assert_uint_eq(total, wire);
	ck_assert_uint_eq(pl, payload);
	ck_assert_uint_eq(seq, 7);
	ck_assert_int_eq(pkt_whole(buf, wire, payload - 1, &total, &pl, &seq), -1);
	out = buf;
	pkt_join(out, buf, payload);
	for (size_t k = 0; k < payload; k += 4099)
		ck_assert_uint_eq(out[k], (uint8_t)(k * 7));
	/* a gap in the sequence ids is refused */
	pkt_put_hdr(buf, PKT_MAX_FRAG, 1);
	pkt_put_hdr(buf + PKT_HDR + PKT_MAX_FRAG, 3, 3);
	ck_assert_int_eq(pkt_whole(buf, wire, SIZE_MAX, &total, &pl, &seq), -1);
	free(buf);
}
END_TEST

START_TEST(handshake_roundtrip)
{
	struct handshake h = {.conn_id = 42, .caps = PROXY_CAPS, .charset = 45, .status = 2};
	struct handshake p;
	uint8_t buf[256];
	int n;

	strcpy(h.server_version, "5.5.5-10.11.6-MariaDB-mysteer");
	strcpy(h.plugin, NATIVE_PLUGIN);
	ck_assert_int_eq(scramble_fill(h.scramble), 0);
	for (int i = 0; i < SCRAMBLE_LEN; i++)
		ck_assert(h.scramble[i] != 0);
	n = hs_build(buf, sizeof(buf), &h);
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(hs_parse(buf, (size_t)n, &p), 0);
	ck_assert_str_eq(p.server_version, h.server_version);
	ck_assert_uint_eq(p.conn_id, 42);
	ck_assert_uint_eq(p.caps, PROXY_CAPS);
	ck_assert_uint_eq(p.scramble_len, SCRAMBLE_LEN);
	ck_assert_mem_eq(p.scramble, h.scramble, SCRAMBLE_LEN);
	ck_assert_str_eq(p.plugin, NATIVE_PLUGIN);
	ck_assert_int_eq(hs_parse(buf, 20, &p), -1);
	ck_assert_int_eq(hs_build(buf, 10, &h), -1);
	/* MariaDB's extended capabilities, in the last 4 reserved bytes when
	 * CLIENT_MYSQL is not offered; reserved (zero) otherwise */
	h.ext_caps = PROXY_EXT_CAPS;
	n = hs_build(buf, sizeof(buf), &h);
	ck_assert_int_eq(hs_parse(buf, (size_t)n, &p), 0);
	ck_assert_uint_eq(p.ext_caps, MARIADB_CAP_EXTENDED_METADATA);
	ck_assert_mem_eq(p.scramble, h.scramble, SCRAMBLE_LEN);
	ck_assert_str_eq(p.plugin, NATIVE_PLUGIN);
	h.caps |= CAP_LONG_PASSWORD;
	n = hs_build(buf, sizeof(buf), &h);
	ck_assert_int_eq(hs_parse(buf, (size_t)n, &p), 0);
	ck_assert_uint_eq(p.ext_caps, 0);
}
END_TEST

START_TEST(response_roundtrip)
{
	struct hs_response r = {.caps = PROXY_CAPS, .max_packet = 1 << 24, .charset = 33};
	struct hs_response p;
	uint8_t buf[512], attrs[] = {3, 'a', 'b', 'c', 1, 'x'};
	int n;

	strcpy(r.user, "app");
	memset(r.auth, 0xab, SHA1_LEN);
	r.auth_len = SHA1_LEN;
	strcpy(r.db, "sbtest");
	strcpy(r.plugin, NATIVE_PLUGIN);
	r.attrs = attrs;
	r.attrs_len = sizeof(attrs);
	n = hsr_build(buf, sizeof(buf), &r);
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(hsr_parse(buf, (size_t)n, &p), 0);
	ck_assert_str_eq(p.user, "app");
	ck_assert_uint_eq(p.auth_len, SHA1_LEN);
	ck_assert_mem_eq(p.auth, r.auth, SHA1_LEN);
	ck_assert(p.has_db);
	ck_assert_str_eq(p.db, "sbtest");
	ck_assert_str_eq(p.plugin, NATIVE_PLUGIN);
	ck_assert_uint_eq(p.attrs_len, sizeof(attrs));
	ck_assert_uint_eq(p.ext_caps, 0);
	/* a MariaDB client's extended capabilities, in the last 4 filler bytes */
	r.ext_caps = MARIADB_CAP_EXTENDED_METADATA;
	n = hsr_build(buf, sizeof(buf), &r);
	ck_assert_int_eq(hsr_parse(buf, (size_t)n, &p), 0);
	ck_assert_uint_eq(p.ext_caps, MARIADB_CAP_EXTENDED_METADATA);
	ck_assert_str_eq(p.user, "app");
	r.caps |= CAP_LONG_PASSWORD;
	n = hsr_build(buf, sizeof(buf), &r);
	ck_assert_int_eq(hsr_parse(buf, (size_t)n, &p), 0);
	ck_assert_uint_eq(p.ext_caps, 0);
	r.caps &= ~CAP_LONG_PASSWORD;
	/* without LENENC auth data: one length byte */
	r.caps &= ~CAP_PLUGIN_AUTH_LENENC;
	n = hsr_build(buf, sizeof(buf), &r);
	ck_assert_int_eq(hsr_parse(buf, (size_t)n, &p), 0);
	ck_assert_mem_eq(p.auth, r.auth, SHA1_LEN);
	/* truncated in the middle of the user name */
	ck_assert_int_eq(hsr_parse(buf, 34, &p), -1);
	/* an SSL request is recognised (the proxy refuses it: no TLS yet) */
	ck_assert_int_eq(hsr_parse(buf, 32, &p), -1);
	buf[1] |= CAP_SSL >> 8;
	ck_assert_int_eq(hsr_parse(buf, 32, &p), 0);
	ck_assert(p.ssl_request);
}
END_TEST

/* The pooled scrambles: printable, never NUL, not repeated across a refill
 * of the pool, and the bytes handed out are wiped from it. */
START_TEST(scramble_pool)
{
	static struct rnd_pool rp;
	enum { N = 450 }; /* more than two pools' worth (204 per 4 KB) */
	static uint8_t seen[N][SCRAMBLE_LEN];

	for (int n = 0; n < N; n++) {
		ck_assert_int_eq(scramble_fill_pooled(&rp, seen[n]), 0);
		for (int i = 0; i < SCRAMBLE_LEN; i++)
			ck_assert(seen[n][i] >= 0x21 && seen[n][i] < 0x21 + 94);
		for (int m = 0; m < n; m++)
			ck_assert(memcmp(seen[m], seen[n], SCRAMBLE_LEN) != 0);
		size_t used = sizeof(rp.buf) - rp.left;
		for (size_t i = 0; i < used; i++)
			ck_assert_uint_eq(rp.buf[i], 0);
	}
}
END_TEST

START_TEST(native_password)
{
	uint8_t stage2[SHA1_LEN], stage1[SHA1_LEN], s1[SHA1_LEN], scr[SCRAMBLE_LEN],
	    reply[SHA1_LEN], h[SHA1_LEN], bscr[SCRAMBLE_LEN], breply[SHA1_LEN];
	char hx[2 * SHA1_LEN + 1];

	/* mysql.user's form of PASSWORD('password') */
	native_stage2("password", 8, stage2);
	hex(stage2, SHA1_LEN, hx);
	ck_assert_str_eq(hx, "2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19");

	/* a client's reply, computed as a client does */
	sha1("password", 8, NULL, 0, stage1);
	ck_assert_int_eq(scramble_fill(scr), 0);
	sha1(scr, SCRAMBLE_LEN, stage2, SHA1_LEN, h);
	for (int i = 0; i < SHA1_LEN; i++)
		reply[i] = stage1[i] ^ h[i];
	ck_assert_int_eq(native_verify(scr, reply, SHA1_LEN, stage2, s1), 0);
	ck_assert_mem_eq(s1, stage1, SHA1_LEN); /* SHA1(password) recovered */
	/* the backend login with it is what the client would have sent */
	ck_assert_int_eq(scramble_fill(bscr), 0);
	native_reply(bscr, s1, breply);
	sha1(bscr, SCRAMBLE_LEN, stage2, SHA1_LEN, h);
	for (int i = 0; i < SHA1_LEN; i++)
		ck_assert_uint_eq(breply[i], stage1[i] ^ h[i]);
	/* wrong password, wrong length */
	reply[3] ^= 1;
	ck_assert_int_eq(native_verify(scr, reply, SHA1_LEN, stage2, s1), -1);
	ck_assert_int_eq(native_verify(scr, reply, 0, stage2, s1), -1);
}
END_TEST

/* sha1 and sha256 (one digest helper): known vectors, a then b as one input */
START_TEST(digests)
{
	uint8_t d1[SHA1_LEN], d2[SHA256_LEN], e1[SHA1_LEN], e2[SHA256_LEN];
	char hx[2 * SHA256_LEN + 1];

	sha1("abc", 3, NULL, 0, d1);
	hex(d1, SHA1_LEN, hx);
	ck_assert_str_eq(hx, "A9993E364706816ABA3E25717850C26C9CD0D89D");
	sha256("abc", 3, NULL, 0, d2);
	hex(d2, SHA256_LEN, hx);
	ck_assert_str_eq(hx, "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD");
	sha1("a", 1, "bc", 2, e1);
	ck_assert_mem_eq(e1, d1, SHA1_LEN);
	sha256("ab", 2, "c", 1, e2);
	ck_assert_mem_eq(e2, d2, SHA256_LEN);
}
END_TEST

START_TEST(ok_err_eof)
{
	uint8_t buf[128];
	struct ok_pkt ok;
	struct err_pkt e;
	int n;

	n = ok_build(buf, sizeof(buf), 0, 3, 70000, SST_AUTOCOMMIT | SST_IN_TRANS, 1);
	ck_assert_int_eq(ok_parse(buf, (size_t)n, CAP_PROTOCOL_41, &ok), 0);
	ck_assert_uint_eq(ok.affected, 3);
	ck_assert_uint_eq(ok.insert_id, 70000);
	ck_assert_uint_eq(ok.status, SST_AUTOCOMMIT | SST_IN_TRANS);
	ck_assert_uint_eq(ok.warnings, 1);
	n = err_build(buf, sizeof(buf), 1045, "28000", "Access denied");
	ck_assert_int_eq(err_parse(buf, (size_t)n, &e), 0);
	ck_assert_uint_eq(e.code, 1045);
	ck_assert_str_eq(e.sqlstate, "28000");
	ck_assert_str_eq(e.msg, "Access denied");
	ck_assert_int_eq(eof_build(buf, sizeof(buf), 0, 2), 5);
	ck_assert_int_eq(ok_parse(buf, 2, CAP_PROTOCOL_41, &ok), -1);
}
END_TEST

START_TEST(session_track_gtid)
{
	/* OK with SESSION_STATE_CHANGED: info "", state: sysvar last_gtid=0-1-42 */
	uint8_t buf[128], var[64], ent[80];
	struct wr w;
	struct ok_pkt ok;
	char gtid[64];
	size_t vl, el;

	wr_init(&w, var, sizeof(var));
	wr_lenenc_str(&w, "last_gtid", 9);
	wr_lenenc_str(&w, "0-1-42", 6);
	vl = wr_len(&w);
	wr_init(&w, ent, sizeof(ent));
	wr_int(&w, 0, 1);
	wr_lenenc_str(&w, var, vl);
	el = wr_len(&w);
	wr_init(&w, buf, sizeof(buf));
	wr_int(&w, 0, 1);
	wr_lenenc(&w, 1);
	wr_lenenc(&w, 0);
	wr_int(&w, SST_AUTOCOMMIT | SST_SESSION_STATE_CHANGED, 2);
	wr_int(&w, 0, 2);
	wr_lenenc_str(&w, "", 0);
	wr_lenenc_str(&w, ent, el);
	ck_assert(!w.err);
	ck_assert_int_eq(ok_parse(buf, wr_len(&w), PROXY_CAPS, &ok), 0);
	ck_assert_int_eq(ok_find_last_gtid(&ok, gtid, sizeof(gtid)), 1);
	ck_assert_str_eq(gtid, "0-1-42");
	ck_assert_int_eq(ok_find_last_gtid(&ok, gtid, 3), -1);
}
END_TEST

/* Appends a session-track entry: type, then its data as a lenenc string. */
static void put_entry(struct wr *w, uint8_t type, const void *data, size_t n)
{
	wr_int(w, type, 1);
	wr_lenenc_str(w, data, n);
}

/* Appends a system variable entry (type 0): name and value. */
static void put_sysvar(struct wr *w, const char *name, const char *val)
{
	uint8_t d[512];
	struct wr v;

	wr_init(&v, d, sizeof(d));
	wr_lenenc_str(&v, name, strlen(name));
	wr_lenenc_str(&v, val, strlen(val));
	ck_assert(!v.err);
	put_entry(w, 0, d, wr_len(&v));
}

/* An OK payload with session state (header 0x00 or 0xfe); returns its length. */
static size_t build_ok_state(uint8_t *buf, size_t cap, uint8_t header, const uint8_t *state,
                             size_t n)
{
	struct wr w;

	wr_init(&w, buf, cap);
	wr_int(&w, header, 1);
	wr_lenenc(&w, 1);
	wr_lenenc(&w, 7);
	wr_int(&w, SST_AUTOCOMMIT | SST_SESSION_STATE_CHANGED, 2);
	wr_int(&w, 2, 2);
	wr_lenenc_str(&w, "info", 4);
	wr_lenenc_str(&w, state, n);
	ck_assert(!w.err);
	return wr_len(&w);
}

/* The state-change entry (session_track_state_change): found, and dropped
 * alone or together with last_gtid while other variables stay. */
START_TEST(drop_state_change)
{
	uint8_t st[128], buf[256], out[256];
	const struct ok_state_drop both = {.sysvar = "last_gtid", .state_change = true};
	const struct ok_state_drop sc = {.state_change = true};
	struct wr w;
	struct ok_pkt ok;
	char gtid[32];
	int n;

	wr_init(&w, st, sizeof(st));
	put_sysvar(&w, "time_zone", "+05:00");
	put_entry(&w, TRACK_STATE_CHANGE,
	          (const uint8_t *)"\x01"
	                           "1",
	          2);
	put_sysvar(&w, "last_gtid", "0-1-42");
	size_t len = build_ok_state(buf, sizeof(buf), 0x00, st, wr_len(&w));
	ck_assert_int_eq(ok_parse(buf, len, PROXY_CAPS, &ok), 0);
	ck_assert_int_eq(ok_state_changed(&ok), 1);
	/* only the state change goes: last_gtid and time_zone stay */
	n = ok_drop_state(out, buf, len, PROXY_CAPS, &sc);
	ck_assert_int_eq(n, (int)len - 4);
	ck_assert_int_eq(ok_parse(out, (size_t)n, PROXY_CAPS, &ok), 0);
	ck_assert_int_eq(ok_state_changed(&ok), 0);
	ck_assert_int_eq(ok_find_last_gtid(&ok, gtid, sizeof(gtid)), 1);
	ck_assert_str_eq(gtid, "0-1-42");
	ck_assert_uint_eq(ok.status & SST_SESSION_STATE_CHANGED, SST_SESSION_STATE_CHANGED);
	/* both of the proxy's entries go, in place: time_zone alone is left */
	n = ok_drop_state(buf, buf, len, PROXY_CAPS, &both);
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(ok_parse(buf, (size_t)n, PROXY_CAPS, &ok), 0);
	ck_assert_int_eq(ok_state_changed(&ok), 0);
	ck_assert_int_eq(ok_find_last_gtid(&ok, gtid, sizeof(gtid)), 0);
	ck_assert_ptr_nonnull(ok.state);
	/* an OK with nothing to drop is left alone */
	ck_assert_int_eq(ok_drop_state(out, buf, (size_t)n, PROXY_CAPS, &both), 0);
	/* a state-change entry alone: dropping it clears the flag */
	wr_init(&w, st, sizeof(st));
	put_entry(&w, TRACK_STATE_CHANGE,
	          (const uint8_t *)"\x01"
	                           "1",
	          2);
	len = build_ok_state(buf, sizeof(buf), 0xfe, st, wr_len(&w));
	n = ok_drop_state(out, buf, len, PROXY_CAPS, &sc);
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(ok_parse(out, (size_t)n, PROXY_CAPS, &ok), 0);
	ck_assert_ptr_null(ok.state);
	ck_assert_uint_eq(ok.status & SST_SESSION_STATE_CHANGED, 0);
	/* a truncated entry is malformed */
	ck_assert_int_eq(ok_parse(buf, len, PROXY_CAPS, &ok), 0);
	ok.state_len--;
	ck_assert_int_eq(ok_state_changed(&ok), -1);
}
END_TEST

/* An OK of a tracking connection, as the server sends it to a client
 * without CLIENT_SESSION_TRACK: the same figures and info, no state and no
 * state flag; an empty info goes too. */
START_TEST(untrack_ok)
{
	uint8_t st[64], buf[256];
	struct wr w;
	struct ok_pkt ok;
	size_t len;
	int n;

	wr_init(&w, st, sizeof(st));
	put_sysvar(&w, "last_gtid", "0-1-42");
	for (int header = 0; header < 2; header++) {
		len = build_ok_state(buf, sizeof(buf), header ? 0xfe : 0x00, st, wr_len(&w));
		n = ok_untrack(buf, buf, len);
		ck_assert_int_eq(n, 1 + 1 + 1 + 2 + 2 + 1 + 4);
		ck_assert_uint_eq(buf[0], header ? 0xfe : 0x00);
		/* read as libmysqlclient reads it: the info with its length */
		ck_assert_int_eq(ok_parse(buf, (size_t)n, PROXY_CAPS, &ok), 0);
		ck_assert_uint_eq(ok.affected, 1);
		ck_assert_uint_eq(ok.insert_id, 7);
		ck_assert_uint_eq(ok.status, SST_AUTOCOMMIT);
		ck_assert_uint_eq(ok.warnings, 2);
		ck_assert_uint_eq(ok.info_len, 4);
		ck_assert_mem_eq(ok.info, "info", 4);
		ck_assert_ptr_null(ok.state);
	}
	/* state with an empty info: both go */
	memcpy(buf, "\x00\x00\x00\x02\x40\x00\x00\x00\x03\x00\x01x", 12);
	ck_assert_int_eq(ok_untrack(buf, buf, 12), 7);
	ck_assert_mem_eq(buf, "\x00\x00\x00\x02\x00\x00\x00", 7);
	/* an OK that ends after the warnings (no info, no state) stays as it is */
	len = 1 + 1 + 1 + 2 + 2;
	memcpy(buf, "\x00\x00\x00\x02\x00\x00\x00", len);
	ck_assert_int_eq(ok_untrack(buf, buf, len), (int)len);
	/* malformed: an info length past the end */
	memcpy(buf,
	       "\x00\x00\x00\x02\x00\x00\x00\x09"
	       "ab",
	       10);
	ck_assert_int_eq(ok_untrack(buf, buf, 10), -1);
	ck_assert_int_eq(ok_untrack(buf, buf, 3), -1);
}
END_TEST

START_TEST(drop_last_gtid_only)
{
	uint8_t st[64], buf[128], out[128];
	struct wr w;
	struct ok_pkt ok;
	int n;

	wr_init(&w, st, sizeof(st));
	put_sysvar(&w, "last_gtid", "0-1-42");
	size_t len = build_ok_state(buf, sizeof(buf), 0x00, st, wr_len(&w));
	n = ok_drop_sysvar(out, buf, len, PROXY_CAPS, "last_gtid");
	ck_assert_int_gt(n, 0);
	/* nothing left: no state, and the flag is off so clients look for none */
	ck_assert_int_eq(ok_parse(out, (size_t)n, PROXY_CAPS, &ok), 0);
	ck_assert_ptr_null(ok.state);
	ck_assert_uint_eq(ok.status, SST_AUTOCOMMIT);
	ck_assert_uint_eq(ok.affected, 1);
	ck_assert_uint_eq(ok.insert_id, 7);
	ck_assert_uint_eq(ok.warnings, 2);
	ck_assert_uint_eq(ok.info_len, 4);
	ck_assert_int_eq(memcmp(ok.info, "info", 4), 0);
	ck_assert_int_eq(n, (int)len - 1 - (int)wr_len(&w));
	/* the same in place, and for the OK that ends a result (0xfe) */
	len = build_ok_state(buf, sizeof(buf), 0xfe, st, wr_len(&w));
	ck_assert_int_eq(ok_drop_sysvar(buf, buf, len, PROXY_CAPS, "last_gtid"), n);
	ck_assert_uint_eq(buf[0], 0xfe);
	ck_assert_int_eq(memcmp(buf + 1, out + 1, (size_t)n - 1), 0);
}
END_TEST

/* What the server reports besides last_gtid passes untouched, in order. */
START_TEST(drop_last_gtid_keeps_others)
{
	uint8_t st[256], want[256], buf[512], out[512];
	struct wr w, k;
	struct ok_pkt ok;
	char gtid[64];
	uint8_t schema[8];
	int n;

	wr_init(&w, st, sizeof(st));
	wr_init(&k, want, sizeof(want));
	wr_init(&k, schema, sizeof(schema));
	wr_lenenc_str(&k, "t", 1);
	size_t sl = wr_len(&k);
	wr_init(&k, want, sizeof(want));
	put_entry(&w, 1, schema, sl); /* SESSION_TRACK_SCHEMA */
	put_entry(&k, 1, schema, sl);
	put_sysvar(&w, "last_gtid", "0-1-42");
	put_sysvar(&w, "autocommit", "ON");
	put_sysvar(&k, "autocommit", "ON");
	put_entry(&w, 2,
	          "\x01"
	          "1",
	          2); /* SESSION_TRACK_STATE_CHANGE */
	put_entry(&k, 2,
	          "\x01"
	          "1",
	          2);
	put_entry(&w, 3,
	          "\x00\x06"
	          "0-1-42",
	          8); /* SESSION_TRACK_GTIDS */
	put_entry(&k, 3,
	          "\x00\x06"
	          "0-1-42",
	          8);
	put_sysvar(&w, "last_gtid_x", "1");
	put_sysvar(&k, "last_gtid_x", "1");
	ck_assert(!w.err && !k.err);
	size_t len = build_ok_state(buf, sizeof(buf), 0x00, st, wr_len(&w));
	n = ok_drop_sysvar(out, buf, len, PROXY_CAPS, "last_gtid");
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(ok_parse(out, (size_t)n, PROXY_CAPS, &ok), 0);
	ck_assert_uint_eq(ok.status, SST_AUTOCOMMIT | SST_SESSION_STATE_CHANGED);
	ck_assert_uint_eq(ok.state_len, wr_len(&k));
	ck_assert_int_eq(memcmp(ok.state, want, wr_len(&k)), 0);
	ck_assert_int_eq(ok_find_last_gtid(&ok, gtid, sizeof(gtid)), 0);
	/* nothing to drop the second time */
	ck_assert_int_eq(ok_drop_sysvar(buf, out, (size_t)n, PROXY_CAPS, "last_gtid"), 0);
}
END_TEST

/* A state longer than 250 bytes has a 3-byte length; what is left, 1 byte. */
START_TEST(drop_last_gtid_shrinks_length)
{
	uint8_t st[512], buf[600];
	char big[300];
	struct wr w;
	struct ok_pkt ok;
	char gtid[64];
	int n;

	memset(big, '1', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	wr_init(&w, st, sizeof(st));
	put_sysvar(&w, "last_gtid", big);
	put_sysvar(&w, "time_zone", "+05:00");
	size_t len = build_ok_state(buf, sizeof(buf), 0x00, st, wr_len(&w));
	n = ok_drop_sysvar(buf, buf, len, PROXY_CAPS, "last_gtid");
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(ok_parse(buf, (size_t)n, PROXY_CAPS, &ok), 0);
	ck_assert_uint_eq(ok.state_len, 1 + 1 + 1 + 9 + 1 + 6);
	ck_assert_int_eq(ok_find_last_gtid(&ok, gtid, sizeof(gtid)), 0);
}
END_TEST

/* Odd OKs are forwarded as they are: 0 or -1, and dst untouched. */
START_TEST(drop_last_gtid_odd)
{
	uint8_t st[64], buf[128], out[128], keep[128];
	struct wr w;
	size_t len;

	memset(out, 0xaa, sizeof(out));
	memcpy(keep, out, sizeof(out));
	/* no session state at all */
	len = (size_t)ok_build(buf, sizeof(buf), 0x00, 1, 0, SST_AUTOCOMMIT, 0);
	ck_assert_int_eq(ok_drop_sysvar(out, buf, len, PROXY_CAPS, "last_gtid"), 0);
	/* a client without session tracking: the rest is info, not state */
	wr_init(&w, st, sizeof(st));
	put_sysvar(&w, "last_gtid", "0-1-42");
	len = build_ok_state(buf, sizeof(buf), 0x00, st, wr_len(&w));
	ck_assert_int_eq(ok_drop_sysvar(out, buf, len, CAP_PROTOCOL_41, "last_gtid"), 0);
	/* not an OK */
	ck_assert_int_eq(
	    ok_drop_sysvar(out, (const uint8_t *)"\xff\x01\x02", 3, PROXY_CAPS, "last_gtid"), -1);
	/* every truncation of a good one */
	for (size_t cut = 0; cut < len; cut++)
		ck_assert_int_le(ok_drop_sysvar(out, buf, cut, PROXY_CAPS, "last_gtid"), 0);
	/* the entry's own length runs past the state */
	size_t ent = len - wr_len(&w);
	buf[ent + 1] = 0x7f;
	ck_assert_int_eq(ok_drop_sysvar(out, buf, len, PROXY_CAPS, "last_gtid"), -1);
	/* the variable's name length runs past the entry */
	len = build_ok_state(buf, sizeof(buf), 0x00, st, wr_len(&w));
	buf[ent + 2] = 0x30;
	ck_assert_int_eq(ok_drop_sysvar(out, buf, len, PROXY_CAPS, "last_gtid"), -1);
	/* a 0xff length prefix */
	len = build_ok_state(buf, sizeof(buf), 0x00, st, wr_len(&w));
	buf[ent + 1] = 0xff;
	ck_assert_int_eq(ok_drop_sysvar(out, buf, len, PROXY_CAPS, "last_gtid"), -1);
	ck_assert_int_eq(memcmp(out, keep, sizeof(out)), 0);
}
END_TEST

/* Feeds a whole small packet (one fragment). */
static enum resp_state feed(struct resp_tracker *t, const void *p, size_t n)
{
	ck_assert(!resp_needs_whole(t, p, n, (uint32_t)n) || true);
	return resp_feed(t, p, n, (uint32_t)n);
}

START_TEST(resp_text_resultset)
{
	struct resp_tracker t;
	uint8_t cnt[] = {2}, col[] = {3, 'd', 'e', 'f', 0}, row[] = {1, '1', 0xfb};
	uint8_t eof[5], okfe[16], ok[16];
	int n;

	/* classic EOFs */
	resp_init(&t, RESP_GENERIC, CAP_PROTOCOL_41);
	eof_build(eof, sizeof(eof), 0, SST_AUTOCOMMIT);
	ck_assert_int_eq(feed(&t, cnt, 1), RS_COLS);
	ck_assert_int_eq(feed(&t, col, sizeof(col)), RS_COLS);
	ck_assert_int_eq(feed(&t, col, sizeof(col)), RS_COLS_EOF);
	ck_assert_int_eq(feed(&t, eof, 5), RS_ROWS);
	ck_assert_int_eq(feed(&t, row, sizeof(row)), RS_ROWS);
	ck_assert_int_eq(feed(&t, eof, 5), RS_DONE);
	ck_assert_int_eq(feed(&t, eof, 5), RS_ERROR);

	/* DEPRECATE_EOF, two result sets, then an OK */
	resp_init(&t, RESP_GENERIC, PROXY_CAPS);
	n = ok_build(okfe, sizeof(okfe), 0xfe, 0, 0, SST_AUTOCOMMIT | SST_MORE_RESULTS, 0);
	ck_assert_int_eq(feed(&t, cnt, 1), RS_COLS);
	feed(&t, col, sizeof(col));
	ck_assert_int_eq(feed(&t, col, sizeof(col)), RS_ROWS);
	ck_assert_int_eq(feed(&t, okfe, (size_t)n), RS_FIRST);
	n = ok_build(ok, sizeof(ok), 0, 1, 0, SST_AUTOCOMMIT, 0);
	ck_assert_int_eq(feed(&t, ok, (size_t)n), RS_DONE);
	ck_assert_uint_eq(t.last_ok.affected, 1);

	/* a row of more than 16 MB: its 0xfe-led first fragment is not an EOF */
	resp_init(&t, RESP_GENERIC, PROXY_CAPS);
	feed(&t, cnt, 1);
	feed(&t, col, sizeof(col));
	feed(&t, col, sizeof(col));
	uint8_t big[] = {0xfe, 0, 0, 0, 1, 0, 0, 0, 0};
	ck_assert(!resp_needs_whole(&t, big, sizeof(big), PKT_MAX_FRAG));
	ck_assert_int_eq(resp_feed(&t, big, sizeof(big), PKT_MAX_FRAG), RS_ROWS);
	ck_assert(t.in_frag);
	/* the continuation starts with 0xff: still part of the row */
	uint8_t cont[] = {0xff, 0xff};
	ck_assert_int_eq(resp_feed(&t, cont, 2, 100), RS_ROWS);
	ck_assert(!t.in_frag);
	n = ok_build(okfe, sizeof(okfe), 0xfe, 0, 0, SST_AUTOCOMMIT, 0);
	ck_assert(resp_needs_whole(&t, okfe, 1, (uint32_t)n));
	ck_assert_int_eq(feed(&t, okfe, (size_t)n), RS_DONE);
}
END_TEST

/* An EOF with SERVER_STATUS_CURSOR_EXISTS ends an EXECUTE's answer (the rows
 * come with COM_STMT_FETCH); a CALL's result set may carry the flag of the
 * procedure's own cursor, and its rows still follow (more results after). */
START_TEST(resp_cursor_flag)
{
	struct resp_tracker t;
	uint8_t cnt[] = {1}, col[] = {3, 'd', 'e', 'f', 0}, row[] = {1, '1'};
	uint8_t eof[5], ok[16];
	int n;

	resp_init(&t, RESP_GENERIC, CAP_PROTOCOL_41);
	eof_build(eof, sizeof(eof), 0, SST_AUTOCOMMIT | SST_CURSOR_EXISTS);
	feed(&t, cnt, 1);
	ck_assert_int_eq(feed(&t, col, sizeof(col)), RS_COLS_EOF);
	ck_assert_int_eq(feed(&t, eof, 5), RS_DONE);

	resp_init(&t, RESP_GENERIC, CAP_PROTOCOL_41);
	eof_build(eof, sizeof(eof), 0, SST_AUTOCOMMIT | SST_CURSOR_EXISTS | SST_MORE_RESULTS);
	feed(&t, cnt, 1);
	feed(&t, col, sizeof(col));
	ck_assert_int_eq(feed(&t, eof, 5), RS_ROWS);
	ck_assert_int_eq(feed(&t, row, sizeof(row)), RS_ROWS);
	ck_assert_int_eq(feed(&t, eof, 5), RS_FIRST);
	n = ok_build(ok, sizeof(ok), 0, 0, 0, SST_AUTOCOMMIT, 0);
	ck_assert_int_eq(feed(&t, ok, (size_t)n), RS_DONE);
}
END_TEST

/* The pool takes a connection back between statements only when the answer
 * left no warnings for SHOW WARNINGS to read there. */
START_TEST(resp_warnings)
{
	struct resp_tracker t;
	uint8_t cnt[] = {1}, col[] = {3, 'd', 'e', 'f', 0}, row[] = {1, '1'};
	uint8_t eof[5], ok[16];
	int n;

	resp_init(&t, RESP_GENERIC, CAP_PROTOCOL_41);
	ck_assert_uint_eq(t.warnings, 0);
	eof_build(eof, sizeof(eof), 0, SST_AUTOCOMMIT);
	feed(&t, cnt, 1);
	feed(&t, col, sizeof(col));
	feed(&t, eof, 5);
	feed(&t, row, sizeof(row));
	eof_build(eof, sizeof(eof), 2, SST_AUTOCOMMIT);
	ck_assert_int_eq(feed(&t, eof, 5), RS_DONE);
	ck_assert_uint_eq(t.warnings, 2);

	resp_init(&t, RESP_GENERIC, PROXY_CAPS);
	n = ok_build(ok, sizeof(ok), 0, 1, 0, SST_AUTOCOMMIT, 3);
	ck_assert_int_eq(feed(&t, ok, (size_t)n), RS_DONE);
	ck_assert_uint_eq(t.warnings, 3);

	/* DEPRECATE_EOF: the 0xfe OK that ends the rows carries them */
	resp_init(&t, RESP_GENERIC, PROXY_CAPS);
	feed(&t, cnt, 1);
	feed(&t, col, sizeof(col));
	feed(&t, row, sizeof(row));
	n = ok_build(ok, sizeof(ok), 0xfe, 0, 0, SST_AUTOCOMMIT, 1);
	ck_assert_int_eq(feed(&t, ok, (size_t)n), RS_DONE);
	ck_assert_uint_eq(t.warnings, 1);
}
END_TEST

START_TEST(resp_err_and_prepare)
{
	struct resp_tracker t;
	uint8_t err[64], prep[12] = {0, 7, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0};
	uint8_t col[] = {3, 'd', 'e', 'f'}, eof[5];
	int n = err_build(err, sizeof(err), 1064, "42000", "syntax");

	resp_init(&t, RESP_GENERIC, PROXY_CAPS);
	ck_assert_int_eq(feed(&t, err, (size_t)n), RS_DONE);
	ck_assert(t.saw_err);

	/* prepare: 2 params, 1 column, classic EOFs */
	resp_init(&t, RESP_PREPARE, CAP_PROTOCOL_41);
	eof_build(eof, sizeof(eof), 0, 2);
	ck_assert_int_eq(feed(&t, prep, sizeof(prep)), RS_PREP_PARAMS);
	ck_assert_uint_eq(t.stmt_id, 7);
	ck_assert_uint_eq(t.prep_params, 2);
	ck_assert_uint_eq(t.prep_ncols, 1);
	feed(&t, col, sizeof(col));
	ck_assert_int_eq(feed(&t, col, sizeof(col)), RS_PREP_PARAMS_EOF);
	ck_assert_int_eq(feed(&t, eof, 5), RS_PREP_COLS);
	ck_assert_int_eq(feed(&t, col, sizeof(col)), RS_PREP_COLS_EOF);
	ck_assert_int_eq(feed(&t, eof, 5), RS_DONE);

	/* same under DEPRECATE_EOF */
	resp_init(&t, RESP_PREPARE, PROXY_CAPS);
	feed(&t, prep, sizeof(prep));
	feed(&t, col, sizeof(col));
	ck_assert_int_eq(feed(&t, col, sizeof(col)), RS_PREP_COLS);
	ck_assert_int_eq(feed(&t, col, sizeof(col)), RS_DONE);

	/* an empty first packet is malformed */
	resp_init(&t, RESP_GENERIC, PROXY_CAPS);
	ck_assert_int_eq(resp_feed(&t, err, 0, 0), RS_ERROR);
	/* field list ends at EOF; statistics is one packet */
	resp_init(&t, RESP_FIELD_LIST, CAP_PROTOCOL_41);
	ck_assert_int_eq(feed(&t, col, sizeof(col)), RS_FIELDS);
	ck_assert_int_eq(feed(&t, eof, 5), RS_DONE);
	resp_init(&t, RESP_ONE_PACKET, CAP_PROTOCOL_41);
	ck_assert_int_eq(feed(&t, "Uptime: 5", 9), RS_DONE);
}
END_TEST

/* LOAD DATA LOCAL INFILE: the 0xFB request only on a connection that asked
 * for CLIENT_LOCAL_FILES, then the statement's OK or ERR, nothing else. */
START_TEST(resp_local_infile)
{
	struct resp_tracker t;
	uint8_t req[] = {0xfb, '/', 't', 'm', 'p'}, ok[16], err[64], cnt[] = {1};
	int n = ok_build(ok, sizeof(ok), 0, 3, 0, SST_AUTOCOMMIT, 0);
	int en = err_build(err, sizeof(err), 1062, "23000", "Duplicate entry");

	resp_init(&t, RESP_GENERIC, PROXY_CAPS);
	ck_assert_int_eq(feed(&t, req, sizeof(req)), RS_ERROR);
	resp_init(&t, RESP_GENERIC, PROXY_CAPS | CAP_LOCAL_FILES);
	ck_assert(resp_needs_whole(&t, req, 1, sizeof(req)));
	ck_assert_int_eq(feed(&t, req, sizeof(req)), RS_INFILE);
	ck_assert(resp_needs_whole(&t, ok, 1, (uint32_t)n));
	ck_assert_int_eq(feed(&t, ok, (size_t)n), RS_DONE);
	ck_assert(!t.saw_err);
	resp_init(&t, RESP_GENERIC, PROXY_CAPS | CAP_LOCAL_FILES);
	ck_assert_int_eq(feed(&t, req, sizeof(req)), RS_INFILE);
	ck_assert_int_eq(feed(&t, err, (size_t)en), RS_DONE);
	ck_assert(t.saw_err);
	resp_init(&t, RESP_GENERIC, PROXY_CAPS | CAP_LOCAL_FILES);
	ck_assert_int_eq(feed(&t, req, sizeof(req)), RS_INFILE);
	ck_assert_int_eq(feed(&t, cnt, 1), RS_ERROR); /* no result set after a file */
	resp_init(&t, RESP_PREPARE, PROXY_CAPS | CAP_LOCAL_FILES);
	ck_assert_int_eq(feed(&t, req, sizeof(req)), RS_ERROR);
}
END_TEST

START_TEST(sha2_password)
{
	static const uint8_t scr[SCRAMBLE_LEN] = "abcdefghij0123456789";
	uint8_t d2[SHA256_LEN], reply[SHA256_LEN], plain[64], enc[512], dec[512], pkt[8];
	char hx[2 * SHA256_LEN + 1];
	EVP_PKEY *key;
	EVP_PKEY_CTX *c;
	size_t enc_len = sizeof(enc);
	int n;

	/* the vectors are Python hashlib's, computed as MySQL's
	 * sha2_password_common.cc does */
	sha2_digest2("password", 8, d2);
	hex(d2, SHA256_LEN, hx);
	ck_assert_str_eq(hx, "73641C99F7719F57D8F4BEB11A303AFCD190243A51CED8782CA6D3DBE014D146");
	sha2_reply("password", 8, scr, reply);
	hex(reply, SHA256_LEN, hx);
	ck_assert_str_eq(hx, "4FAF0A707D3F61794057F9D1614AB9F33D462F9D21796901279375C67F6DD01D");
	ck_assert_int_eq(sha2_verify(scr, reply, SHA256_LEN, d2), 0);
	/* wrong password, wrong length, another scramble */
	reply[31] ^= 0x80;
	ck_assert_int_eq(sha2_verify(scr, reply, SHA256_LEN, d2), -1);
	reply[31] ^= 0x80;
	ck_assert_int_eq(sha2_verify(scr, reply, 20, d2), -1);
	ck_assert_int_eq(sha2_verify(scr, reply, 0, d2), -1);
	ck_assert_int_eq(
	    sha2_verify((const uint8_t *)"bbcdefghij0123456789", reply, SHA256_LEN, d2), -1);

	/* AuthMoreData */
	n = more_data_build(pkt, sizeof(pkt), (const uint8_t[]){SHA2_FULL_AUTH}, 1);
	ck_assert_int_eq(n, 2);
	ck_assert_uint_eq(pkt[0], 0x01);
	ck_assert_uint_eq(pkt[1], 0x04);
	ck_assert_int_eq(more_data_build(pkt, 1, pkt, 1), -1);

	/* the RSA exchange: (password NUL) XOR scramble, OAEP as a client
	 * encrypts it, back to the password */
	key = EVP_RSA_gen(2048);
	ck_assert_ptr_nonnull(key);
	memcpy(plain, "secret pw", 10);
	sha2_xor(plain, 10, scr);
	c = EVP_PKEY_CTX_new(key, NULL);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_gt(EVP_PKEY_encrypt_init(c), 0);
	ck_assert_int_gt(EVP_PKEY_CTX_set_rsa_padding(c, RSA_PKCS1_OAEP_PADDING), 0);
	ck_assert_int_gt(EVP_PKEY_encrypt(c, enc, &enc_len, plain, 10), 0);
	EVP_PKEY_CTX_free(c);
	ck_assert_uint_eq(enc_len, 256);
	n = sha2_rsa_decrypt(key, enc, enc_len, dec, sizeof(dec));
	ck_assert_int_eq(n, 10);
	sha2_xor(dec, 10, scr);
	ck_assert_mem_eq(dec, "secret pw", 10);
	/* garbage or a cut ciphertext: -1, no crash */
	enc[100] ^= 1;
	ck_assert_int_eq(sha2_rsa_decrypt(key, enc, enc_len, dec, sizeof(dec)), -1);
	ck_assert_int_eq(sha2_rsa_decrypt(key, enc, 17, dec, sizeof(dec)), -1);
	ck_assert_int_eq(sha2_rsa_decrypt(key, enc, 0, dec, sizeof(dec)), -1);
	/* the proxy's side towards a MySQL 8 backend: the server's PEM public
	 * key, the password NUL XOR scramble encrypted, and the server's
	 * decryption gives it back */
	{
		BIO *bio = BIO_new(BIO_s_mem());
		char *pem;
		long pem_len;

		ck_assert_ptr_nonnull(bio);
		ck_assert_int_eq(PEM_write_bio_PUBKEY(bio, key), 1);
		pem_len = BIO_get_mem_data(bio, &pem);
		ck_assert_int_gt(pem_len, 0);
		n = sha2_rsa_encrypt((const uint8_t *)pem, (size_t)pem_len, "secret pw", 9, scr,
		                     enc, sizeof(enc));
		ck_assert_int_eq(n, 256);
		n = sha2_rsa_decrypt(key, enc, 256, dec, sizeof(dec));
		ck_assert_int_eq(n, 10);
		sha2_xor(dec, 10, scr);
		ck_assert_mem_eq(dec, "secret pw", 10);
		/* not a key: -1 */
		ck_assert_int_eq(
		    sha2_rsa_encrypt((const uint8_t *)pem, 20, "x", 1, scr, enc, sizeof(enc)), -1);
		BIO_free(bio);
	}
	EVP_PKEY_free(key);
}
END_TEST

/* MariaDB's extended metadata added to a MySQL column definition: an empty
 * string after org_name, the rest as it was; not a column definition: -1. */
START_TEST(coldef_ext_meta)
{
	static const uint8_t def[] = "\x03"
	                             "def"
	                             "\x00"
	                             "\x00"
	                             "\x00"
	                             "\x01"
	                             "1"
	                             "\x00"
	                             "\x0c\x3f\x00\x01\x00\x00\x00\x08\x81\x00\x00\x00\x00";
	uint8_t out[64];
	size_t n = sizeof(def) - 1;
	int r = coldef_add_ext_meta(def, n, out, sizeof(out));

	ck_assert_int_eq(r, (int)n + 1);
	ck_assert_mem_eq(out, def, 10);
	ck_assert_uint_eq(out[10], 0);
	ck_assert_mem_eq(out + 11, def + 10, n - 10);
	ck_assert_int_eq(coldef_add_ext_meta(def, 8, out, sizeof(out)), -1);
	ck_assert_int_eq(coldef_add_ext_meta(def, n, out, n), -1);
}
END_TEST

START_TEST(change_user_parse)
{
	static const uint8_t full[] = "\x11"
	                              "bob\0"
	                              "\x03"
	                              "abc"
	                              "db1\0"
	                              "\x2d\x00"
	                              "caching_sha2_password\0";
	static const uint8_t bare[] = "\x11"
	                              "bob\0"
	                              "\x00"
	                              "\0";
	struct change_user cu;
	uint32_t caps = PROXY_CAPS;

	ck_assert_int_eq(chu_parse(full, sizeof(full) - 1, caps, &cu), 0);
	ck_assert_str_eq(cu.user, "bob");
	ck_assert_uint_eq(cu.auth_len, 3);
	ck_assert_mem_eq(cu.auth, "abc", 3);
	ck_assert_str_eq(cu.db, "db1");
	ck_assert(cu.has_charset);
	ck_assert_uint_eq(cu.charset, 45);
	ck_assert_str_eq(cu.plugin, SHA2_PLUGIN);
	ck_assert_int_eq(chu_parse(bare, sizeof(bare) - 1, caps, &cu), 0);
	ck_assert_str_eq(cu.user, "bob");
	ck_assert_uint_eq(cu.auth_len, 0);
	ck_assert_str_eq(cu.db, "");
	ck_assert(!cu.has_charset);
	ck_assert_str_eq(cu.plugin, "");
	/* cut anywhere before the schema: malformed */
	for (size_t n = 0; n < 9; n++)
		ck_assert_int_eq(chu_parse(full, n, caps, &cu), -1);
	ck_assert_int_eq(chu_parse((const uint8_t *)"\x03x", 2, caps, &cu), -1);
}
END_TEST

START_TEST(auth_switch)
{
	uint8_t buf[64], scr[SCRAMBLE_LEN], got[SCRAMBLE_LEN];
	char plugin[32];
	size_t n;
	int len;

	scramble_fill(scr);
	len = auth_switch_build(buf, sizeof(buf), NATIVE_PLUGIN, scr, SCRAMBLE_LEN);
	ck_assert_int_gt(len, 0);
	ck_assert_int_eq(auth_switch_parse(buf, (size_t)len, plugin, sizeof(plugin), got, &n), 0);
	ck_assert_str_eq(plugin, NATIVE_PLUGIN);
	ck_assert_uint_eq(n, SCRAMBLE_LEN);
	ck_assert_mem_eq(got, scr, SCRAMBLE_LEN);
	ck_assert_int_eq(auth_switch_parse(buf, 3, plugin, sizeof(plugin), got, &n), -1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("proto");
	TCase *tc = tcase_create("codec");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, lenenc_roundtrip);
	tcase_add_test(tc, split_packets);
	tcase_add_test(tc, handshake_roundtrip);
	tcase_add_test(tc, response_roundtrip);
	tcase_add_test(tc, native_password);
	tcase_add_test(tc, digests);
	tcase_add_test(tc, scramble_pool);
	tcase_add_test(tc, ok_err_eof);
	tcase_add_test(tc, session_track_gtid);
	tcase_add_test(tc, untrack_ok);
	tcase_add_test(tc, drop_last_gtid_only);
	tcase_add_test(tc, drop_last_gtid_keeps_others);
	tcase_add_test(tc, drop_last_gtid_shrinks_length);
	tcase_add_test(tc, drop_last_gtid_odd);
	tcase_add_test(tc, drop_state_change);
	tcase_add_test(tc, resp_text_resultset);
	tcase_add_test(tc, resp_warnings);
	tcase_add_test(tc, resp_cursor_flag);
	tcase_add_test(tc, resp_err_and_prepare);
	tcase_add_test(tc, auth_switch);
	tcase_add_test(tc, resp_local_infile);
	tcase_add_test(tc, sha2_password);
	tcase_add_test(tc, change_user_parse);
	tcase_add_test(tc, coldef_ext_meta);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
