/*
 * routines.c - the stored routine table (schema, name, kind, data access).
 *
 * Built once (from the servers by the proxy, or a TSV file for the CLI) and
 * then only read, so lookups from many threads need no lock. Open addressing
 * keyed on the lowercased (schema, name, kind): a lookup hashes the bytes as
 * they come from the statement, without copying or allocating.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "classify/classify_int.h"

#define CLS_NAME_MAX 192 /* 64 characters of up to 3 bytes */

struct rt_ent {
	char *schema, *name;
	uint16_t slen, nlen;
	uint8_t kind, access;
	uint8_t tracked; /* procedures: cls_routines_set_tracked */
	uint32_t hash;
};

struct cls_routines {
	struct rt_ent *slots; /* power of two, NULL name = empty */
	size_t cap, count;
};

static uint32_t hash_step(uint32_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ cls_lower((unsigned char)s[i])) * 16777619u;
	return h;
}

static uint32_t rt_hash(const char *schema, size_t slen, const char *name, size_t nlen,
                        enum cls_routine_kind kind)
{
	uint32_t h = 2166136261u;

	h = hash_step(h, schema, slen);
	h = (h ^ 0xffu) * 16777619u;
	h = hash_step(h, name, nlen);
	return (h ^ (uint32_t)kind) * 16777619u;
}

static bool ieq(const char *a, const char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (cls_lower((unsigned char)a[i]) != cls_lower((unsigned char)b[i]))
			return false;
	return true;
}

struct cls_routines *cls_routines_new(void)
{
	struct cls_routines *rt = calloc(1, sizeof(*rt));

	if (!rt)
		return NULL;
	rt->cap = 64;
	rt->slots = calloc(rt->cap, sizeof(*rt->slots));
	if (!rt->slots) {
		free(rt);
		return NULL;
	}
	return rt;
}

static struct rt_ent *probe(const struct cls_routines *rt, uint32_t h, const char *schema,
                            size_t slen, const char *name, size_t nlen, uint8_t kind)
{
	size_t mask = rt->cap - 1;

	for (size_t i = h & mask;; i = (i + 1) & mask) {
		struct rt_ent *e = &rt->slots[i];

		if (!e->name)
			return e;
		if (e->hash == h && e->kind == kind && e->slen == slen && e->nlen == nlen &&
		    ieq(e->schema, schema, slen) && ieq(e->name, name, nlen))
			return e;
	}
}

static int grow(struct cls_routines *rt)
{
	struct cls_routines n = {.cap = rt->cap * 2};

	n.slots = calloc(n.cap, sizeof(*n.slots));
	if (!n.slots)
		return -1;
	for (size_t i = 0; i < rt->cap; i++) {
		struct rt_ent *e = &rt->slots[i];

		if (e->name)
			*probe(&n, e->hash, e->schema, e->slen, e->name, e->nlen, e->kind) = *e;
	}
	free(rt->slots);
	rt->slots = n.slots;
	rt->cap = n.cap;
	return 0;
}

int cls_routines_add(struct cls_routines *rt, const char *schema, const char *name,
                     enum cls_routine_kind kind, enum cls_data_access access)
{
	size_t slen = strlen(schema), nlen = strlen(name);
	struct rt_ent *e;
	uint32_t h;

	if (slen > CLS_NAME_MAX || nlen > CLS_NAME_MAX || nlen == 0) {
		errno = EINVAL;
		return -1;
	}
	if ((rt->count + 1) * 2 > rt->cap && grow(rt) < 0)
		return -1;
	h = rt_hash(schema, slen, name, nlen, kind);
	e = probe(rt, h, schema, slen, name, nlen, (uint8_t)kind);
	if (e->name) { /* redefinition: the last one wins */
		e->access = (uint8_t)access;
		e->tracked = 0;
		return 0;
	}
	e->schema = strdup(schema);
	e->name = strdup(name);
	if (!e->schema || !e->name) {
		free(e->schema);
		free(e->name);
		e->schema = e->name = NULL;
		return -1;
	}
	e->slen = (uint16_t)slen;
	e->nlen = (uint16_t)nlen;
	e->kind = (uint8_t)kind;
	e->access = (uint8_t)access;
	e->hash = h;
	rt->count++;
	return 0;
}

bool cls_routines_find(const struct cls_routines *rt, const char *schema, size_t slen,
                       const char *name, size_t nlen, enum cls_routine_kind kind,
                       enum cls_data_access *access)
{
	const struct rt_ent *e;

	if (!rt || rt->count == 0 || slen > CLS_NAME_MAX || nlen > CLS_NAME_MAX)
		return false;
	e = probe(rt, rt_hash(schema, slen, name, nlen, kind), schema, slen, name, nlen,
	          (uint8_t)kind);
	if (!e->name)
		return false;
	*access = (enum cls_data_access)e->access;
	return true;
}

int cls_routines_set_tracked(struct cls_routines *rt, const char *schema, const char *name)
{
	size_t slen = strlen(schema), nlen = strlen(name);
	struct rt_ent *e;

	if (!rt || rt->count == 0 || slen > CLS_NAME_MAX || nlen > CLS_NAME_MAX)
		return -1;
	e = probe(rt, rt_hash(schema, slen, name, nlen, CLS_ROUTINE_PROCEDURE), schema, slen, name,
	          nlen, (uint8_t)CLS_ROUTINE_PROCEDURE);
	if (!e->name)
		return -1;
	e->tracked = 1;
	return 0;
}

bool cls_routines_tracked(const struct cls_routines *rt, const char *schema, size_t slen,
                          const char *name, size_t nlen)
{
	const struct rt_ent *e;

	if (!rt || rt->count == 0 || slen > CLS_NAME_MAX || nlen > CLS_NAME_MAX)
		return false;
	e = probe(rt, rt_hash(schema, slen, name, nlen, CLS_ROUTINE_PROCEDURE), schema, slen, name,
	          nlen, (uint8_t)CLS_ROUTINE_PROCEDURE);
	return e->name && e->tracked;
}

void cls_routines_free(struct cls_routines *rt)
{
	if (!rt)
		return;
	for (size_t i = 0; i < rt->cap; i++) {
		free(rt->slots[i].schema);
		free(rt->slots[i].name);
	}
	free(rt->slots);
	free(rt);
}

/* Data access as information_schema.ROUTINES.SQL_DATA_ACCESS spells it;
 * underscores accepted for spaces so that the file stays easy to write. */
static int parse_access(const char *s, enum cls_data_access *out)
{
	static const struct {
		const char *name;
		enum cls_data_access a;
	} tab[] = {
	    {"CONTAINS SQL", CLS_ACCESS_CONTAINS_SQL},
	    {"NO SQL", CLS_ACCESS_NO_SQL},
	    {"READS SQL DATA", CLS_ACCESS_READS_SQL_DATA},
	    {"MODIFIES SQL DATA", CLS_ACCESS_MODIFIES_SQL_DATA},
	};

	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		size_t n = strlen(tab[i].name), j;

		if (strlen(s) != n)
			continue;
		for (j = 0; j < n; j++) {
			char c = (char)cls_lower((unsigned char)s[j]);
			char w = (char)cls_lower((unsigned char)tab[i].name[j]);

			if (c == '_')
				c = ' ';
			if (c != w)
				break;
		}
		if (j == n) {
			*out = tab[i].a;
			return 0;
		}
	}
	return -1;
}

static int parse_kind(const char *s, enum cls_routine_kind *out)
{
	if (strlen(s) == 8 && ieq(s, "FUNCTION", 8)) {
		*out = CLS_ROUTINE_FUNCTION;
		return 0;
	}
	if (strlen(s) == 9 && ieq(s, "PROCEDURE", 9)) {
		*out = CLS_ROUTINE_PROCEDURE;
		return 0;
	}
	return -1;
}

/* Splits line into 4 TAB-separated fields in place. */
static int split4(char *line, char *f[4])
{
	int n = 0;

	f[n++] = line;
	for (char *p = line; *p; p++) {
		if (*p != '\t')
			continue;
		if (n == 4)
			return -1;
		*p = '\0';
		f[n++] = p + 1;
	}
	return n == 4 ? 0 : -1;
}

static const char *load_line(struct cls_routines *rt, char *line)
{
	enum cls_routine_kind kind;
	enum cls_data_access access;
	char *f[4];

	if (split4(line, f) < 0)
		return "expected 4 TAB-separated fields: schema, name, kind, data access";
	if (parse_kind(f[2], &kind) < 0)
		return "kind must be FUNCTION or PROCEDURE";
	if (parse_access(f[3], &access) < 0)
		return "data access must be NO SQL, CONTAINS SQL, READS SQL DATA or "
		       "MODIFIES SQL DATA";
	if (cls_routines_add(rt, f[0], f[1], kind, access) < 0)
		return "bad schema or name";
	return NULL;
}

int cls_routines_load_tsv(struct cls_routines *rt, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	unsigned lineno = 0;
	int rc = 0;

	if (!f) {
		snprintf(err, errlen, "%s:0: %s", path, strerror(errno));
		return -1;
	}
	while ((n = getline(&line, &cap, f)) >= 0) {
		const char *why;

		lineno++;
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (n == 0 || line[0] == '#')
			continue;
		why = load_line(rt, line);
		if (why) {
			snprintf(err, errlen, "%s:%u: %s", path, lineno, why);
			rc = -1;
			break;
		}
	}
	free(line);
	fclose(f);
	return rc;
}
