/*
 * main.c - mysteer-classify: the proxy's classification decision from the
 * command line, for tests, audits and the bench's whole-process comparison.
 *
 * Reads statements from stdin (one a line, or NUL-separated with --nul) and
 * prints one token a line (--explain: token, TAB, reason, TAB, flags). A
 * "USE db" statement changes the current schema for the lines after it, the
 * way a session does, so that unqualified routine names resolve as they would
 * on the server.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "classify/classify.h"

static const char usage[] = "usage: mysteer-classify [--nul] [--explain] [--routines FILE] "
                            "[--db NAME] [--trust-routines]\n";

struct cli {
	bool nul, explain;
	struct cls_options opt;
	char *db;
	size_t dbcap;
};

static int set_db(struct cli *c, const char *s, size_t n)
{
	if (n + 1 > c->dbcap) {
		char *d = realloc(c->db, n + 1);

		if (!d)
			return -1;
		c->db = d;
		c->dbcap = n + 1;
	}
	memcpy(c->db, s, n);
	c->db[n] = '\0';
	c->opt.current_db = c->db;
	c->opt.current_db_len = n;
	return 0;
}

/* Output buffer, flushed when full and before every read that may block, so
 * that an interactive caller sees each answer. */
struct out {
	char buf[1 << 16];
	size_t len;
	bool err;
};

static void out_flush(struct out *o)
{
	if (o->len && fwrite(o->buf, 1, o->len, stdout) != o->len)
		o->err = true;
	if (fflush(stdout) != 0)
		o->err = true;
	o->len = 0;
}

static void out_str(struct out *o, const char *s)
{
	size_t n = strlen(s);

	if (o->len + n + 1 > sizeof(o->buf))
		out_flush(o);
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

static void print_result(struct out *o, const struct cls_result *r, bool explain)
{
	bool first = true;

	out_str(o, cls_token_name(r->token));
	if (explain) {
		out_str(o, "\t");
		out_str(o, cls_reason_name(r->reason));
		out_str(o, "\t");
		for (unsigned b = 0; cls_flag_name(b); b++) {
			if (!(r->flags & (1u << b)))
				continue;
			if (!first)
				out_str(o, ",");
			out_str(o, cls_flag_name(b));
			first = false;
		}
		if (first)
			out_str(o, "-");
	}
	out_str(o, "\n");
}

static int classify_one(struct cli *c, struct out *o, const char *s, size_t n)
{
	struct cls_result r;

	if (!c->nul && n > 0 && s[n - 1] == '\r')
		n--;
	cls_classify(&c->opt, s, n, &r);
	print_result(o, &r, c->explain);
	if ((r.flags & CLS_F_USE) && set_db(c, s + r.db_off, r.db_len) < 0)
		return -1;
	return 0;
}

/* Reads stdin in large blocks and classifies each complete statement in
 * place: no per-line allocation or stdio locking. */
static int run(struct cli *c)
{
	static struct out o;
	size_t cap = 1 << 20, start = 0, len = 0;
	char *buf = malloc(cap);
	char delim = c->nul ? '\0' : '\n';
	int rc = 0;

	if (!buf)
		return 1;
	for (;;) {
		char *nl = memchr(buf + start, delim, len - start);
		ssize_t got;

		if (nl) {
			if (classify_one(c, &o, buf + start, (size_t)(nl - (buf + start))) < 0)
				break;
			start = (size_t)(nl - buf) + 1;
			continue;
		}
		memmove(buf, buf + start, len - start); /* keep the partial statement */
		len -= start;
		start = 0;
		if (len == cap) {
			char *b = realloc(buf, cap * 2);

			if (!b)
				break;
			buf = b;
			cap *= 2;
		}
		out_flush(&o);
		got = read(0, buf + len, cap - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			rc = got < 0 ? 1 : 0;
			if (len && classify_one(c, &o, buf, len) < 0) /* last line without \n */
				rc = 1;
			break;
		}
		len += (size_t)got;
	}
	free(buf);
	out_flush(&o);
	if (rc || o.err)
		perror("mysteer-classify");
	return rc || o.err ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct cli c = {0};
	const char *routines = NULL;
	struct cls_routines *rt = NULL;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--nul")) {
			c.nul = true;
		} else if (!strcmp(argv[i], "--explain")) {
			c.explain = true;
		} else if (!strcmp(argv[i], "--trust-routines")) {
			c.opt.trust_routines = true;
		} else if (!strcmp(argv[i], "--routines") && i + 1 < argc) {
			routines = argv[++i];
		} else if (!strcmp(argv[i], "--db") && i + 1 < argc) {
			i++;
			if (set_db(&c, argv[i], strlen(argv[i])) < 0)
				return 1;
		} else {
			fputs(usage, stderr);
			return 2;
		}
	}
	if (routines) {
		char err[512];

		rt = cls_routines_new();
		if (!rt || cls_routines_load_tsv(rt, routines, err, sizeof(err)) < 0) {
			fprintf(stderr, "mysteer-classify: %s\n", rt ? err : "out of memory");
			cls_routines_free(rt);
			return 1;
		}
		c.opt.routines = rt;
	}
	rc = run(&c);
	cls_routines_free(rt);
	free(c.db);
	return rc;
}
