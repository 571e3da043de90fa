/*
 * classify_int.h - internals shared by the classifier's files (not an API):
 * the routine table lookup used by the grammar and ASCII helpers that do not
 * depend on the locale.
 */
#ifndef MYSTEER_CLASSIFY_INT_H
#define MYSTEER_CLASSIFY_INT_H

#include <stdint.h>

#include "classify/classify.h"

static inline unsigned char cls_lower(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') ? (unsigned char)(c | 0x20) : c;
}

/* Returns true and the data access when (schema, name, kind) is known.
 * Schema and name compare ASCII-case-insensitively; no allocation. */
bool cls_routines_find(const struct cls_routines *rt, const char *schema, size_t slen,
                       const char *name, size_t nlen, enum cls_routine_kind kind,
                       enum cls_data_access *access);

/* Whether procedure (schema, name) is in the table and marked tracked. */
bool cls_routines_tracked(const struct cls_routines *rt, const char *schema, size_t slen,
                          const char *name, size_t nlen);

/* The fast path (fastpath.c): true when it decided, with *out filled as the
 * full parser would; false hands the statement to the grammar. */
bool cls_fast_path(const uint8_t *p, const uint8_t *end, struct cls_result *out);

/* The full parser without the fast path: cls_classify must give the same
 * result; the unit tests and the fuzzer check it. */
void cls_classify_full(const struct cls_options *opt, const char *sql, size_t len,
                       struct cls_result *out);

#endif
