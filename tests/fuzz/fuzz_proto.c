/*
 * fuzz_proto.c - libFuzzer target for the proxy's packet decoders, both the
 * client side (handshake response, commands framing) and the backend side
 * (handshake, OK/ERR, auth switch, response tracking over split packets).
 * The first byte picks the capabilities and the response kind, so one corpus
 * reaches every decoder.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/proto.h"

static void fuzz_stream(const uint8_t *d, size_t n, uint32_t caps, enum resp_kind kind)
{
	struct resp_tracker t;
	struct pkt_frag f;
	size_t off = 0;

	resp_init(&t, kind, caps);
	while (pkt_frag_hdr(d + off, n - off, &f)) {
		size_t have = n - off - PKT_HDR;
		size_t take = have < f.len ? have : f.len;

		if (resp_needs_whole(&t, d + off + PKT_HDR, take, f.len) && take < f.len)
			break;
		if (resp_feed(&t, d + off + PKT_HDR, take, f.len) == RS_ERROR)
			break;
		off += PKT_HDR + take;
		if (take < f.len)
			break;
	}
}

/* The tracking filter: on any input it either declines or leaves an OK that
 * parses and no longer holds what it dropped; in place gives the same bytes. */
static void fuzz_drop(const uint8_t *d, size_t n, uint32_t caps, bool state_change)
{
	const struct ok_state_drop what = {.sysvar = "last_gtid", .state_change = state_change};
	uint8_t *out = malloc(n + 1), *inplace = malloc(n + 1);
	struct ok_pkt ok;
	char gtid[64];
	int r;

	if (!out || !inplace)
		goto done;
	memcpy(inplace, d, n);
	r = ok_drop_state(out, d, n, caps, &what);
	if (ok_drop_state(inplace, inplace, n, caps, &what) != r)
		abort();
	if (r > 0 && ((size_t)r >= n || memcmp(out, inplace, (size_t)r) ||
	              ok_parse(out, (size_t)r, caps, &ok) < 0 ||
	              ok_find_last_gtid(&ok, gtid, sizeof(gtid)) != 0 ||
	              (state_change && ok_state_changed(&ok) != 0)))
		abort();
done:
	free(out);
	free(inplace);
}

/* The rewrite for clients without session tracking: either declines or
 * leaves a shorter-or-equal OK without state that parses. */
static void fuzz_untrack(const uint8_t *d, size_t n)
{
	uint8_t *buf = malloc(n + 1);
	struct ok_pkt ok;
	int r;

	if (!buf)
		return;
	memcpy(buf, d, n);
	r = ok_untrack(buf, buf, n);
	if (r >= 0 && ((size_t)r > n ||
	               ok_parse(buf, (size_t)r, CAP_PROTOCOL_41 | CAP_SESSION_TRACK, &ok) < 0 ||
	               ok.state || (ok.status & SST_SESSION_STATE_CHANGED)))
		abort();
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct handshake hs;
	struct hs_response r;
	struct ok_pkt ok;
	struct err_pkt e;
	char plugin[64], gtid[64];
	uint8_t sw[SCRAMBLE_LEN], out[1024];
	size_t n, total, payload;
	uint8_t seq, sel;
	uint32_t caps;

	if (size < 1)
		return 0;
	sel = data[0];
	data++;
	size--;
	caps =
	    CAP_PROTOCOL_41 | (sel & 1 ? CAP_DEPRECATE_EOF : 0) | (sel & 2 ? CAP_SESSION_TRACK : 0);

	if (hsr_parse(data, size, &r) == 0 && !r.ssl_request)
		hsr_build(out, sizeof(out), &r);
	if (hs_parse(data, size, &hs) == 0)
		hs_build(out, sizeof(out), &hs);
	if (ok_parse(data, size, caps, &ok) == 0) {
		ok_find_last_gtid(&ok, gtid, sizeof(gtid));
		ok_state_changed(&ok);
	}
	fuzz_drop(data, size, caps, (sel & 4) != 0);
	fuzz_untrack(data, size);
	err_parse(data, size, &e);
	auth_switch_parse(data, size, plugin, sizeof(plugin), sw, &n);
	if (pkt_whole(data, size, 1 << 20, &total, &payload, &seq) == 1) {
		uint8_t *copy = malloc(total);
		if (copy) {
			memcpy(copy, data, total);
			pkt_join(copy, copy, payload);
			free(copy);
		}
	}
	fuzz_stream(data, size, caps, (enum resp_kind)((sel >> 2) % 5));
	return 0;
}
