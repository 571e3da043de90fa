/*
 * fuzz_classify.c - libFuzzer target for the classifier: any bytes give a
 * valid token, reason and flags, without reading outside the buffer (ASan),
 * and the result is a pure function of the input (classified twice, with and
 * without a routine table, the invariants of the contract hold), and the
 * fast path decides exactly as the full parser.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "classify/classify.h"
#include "classify/classify_int.h"

static struct cls_routines *table(void)
{
	static struct cls_routines *rt;

	if (!rt) {
		rt = cls_routines_new();
		if (!rt)
			abort();
		if (cls_routines_add(rt, "db", "f", CLS_ROUTINE_FUNCTION,
		                     CLS_ACCESS_READS_SQL_DATA) < 0 ||
		    cls_routines_add(rt, "db", "p", CLS_ROUTINE_PROCEDURE, CLS_ACCESS_NO_SQL) < 0)
			abort();
	}
	return rt;
}

static void check(const uint8_t *data, size_t size, const struct cls_result *r)
{
	if ((unsigned)r->token > CLS_END || (unsigned)r->reason >= CLS_R__COUNT)
		abort();
	/* only defined flags: every bit set has a name */
	for (unsigned bit = 0; bit < 32; bit++)
		if ((r->flags >> bit & 1u) && !cls_flag_name(bit))
			abort();
	if ((r->flags & (CLS_F_MULTI | CLS_F_UNTERMINATED)) && r->token != CLS_WRITE)
		abort();
	if ((r->flags & CLS_F_HINT_WRITER) && r->token == CLS_READ)
		abort();
	if ((r->flags & CLS_F_NAMED_LOCK) && r->token == CLS_READ)
		abort();
	if ((r->flags & CLS_F_USE) && (r->db_off > size || r->db_len > size - r->db_off))
		abort();
	if (!(r->flags & CLS_F_USE) && (r->db_off || r->db_len))
		abort();
	(void)data;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cls_options opt = {
	    .routines = table(), .trust_routines = true, .current_db = "db", .current_db_len = 2};
	struct cls_result a, b, c;

	cls_classify(NULL, (const char *)data, size, &a);
	check(data, size, &a);
	cls_classify(NULL, (const char *)data, size, &b);
	if (memcmp(&a, &b, sizeof(a)) != 0)
		abort();
	cls_classify_full(NULL, (const char *)data, size, &b);
	if (a.token != b.token || a.flags != b.flags || a.reason != b.reason ||
	    a.db_off != b.db_off || a.db_len != b.db_len)
		abort();
	cls_classify(&opt, (const char *)data, size, &c);
	check(data, size, &c);
	/* trust can only turn a write into a read for a routine call */
	if (c.token != a.token && !(a.flags & CLS_F_ROUTINE))
		abort();
	return 0;
}
